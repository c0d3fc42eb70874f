"""Predictions run on the search's own worker pool, as `spica calibrate` runs them: evaluated in
the test process, a capped replay would start multiprocessing's forkserver here, which the
process pools of later tests would then share, with Ctrl-C unblocked."""

from __future__ import annotations

import pytest

from spica.calibrate.fit import predictor
from spica.search.pool import local_pool


@pytest.fixture(scope="module")
def predict_in_worker():
    pool = local_pool(2, 2)
    run = predictor(pool)
    yield lambda point: run([point], None)[0]
    pool.close()
