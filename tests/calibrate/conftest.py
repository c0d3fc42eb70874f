"""Predictions run in a spawned worker, as `spica calibrate` runs them: a capped replay starts its
replay child from a forkserver, which must not be started in the test process itself (the
process pools later tests start would then share it, with Ctrl-C unblocked)."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest

from spica.calibrate.fit import predictor, quiet_worker


@pytest.fixture(scope="module")
def predict_in_worker():
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=quiet_worker) as pool:
        run = predictor(pool)
        yield lambda point: run([point], None)[0]
