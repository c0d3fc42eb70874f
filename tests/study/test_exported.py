"""spica.study.exported: a traced function is saved once and loaded by later processes,
with the same numbers as tracing it in place; what cannot be exported still runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]

# The GP loss of a fixed small data set, through exported.call and through plain jax.jit.
SCRIPT = """
import functools, json
import numpy as np
from spica.study import exported, gp_fit
import jax
from vizier.jax import models
from spica.study.vizier_internals import types
rng = np.random.default_rng(0)
x, c, y = rng.random((6, 3)), rng.integers(0, 2, (6, 2)).astype(types.INT_DTYPE), rng.random((6, 1))
data = types.ModelData(types.ModelInput(gp_fit.pad_rows(x, 16, 0.0), gp_fit.pad_rows(c, 16, 0)), gp_fit.pad_rows(y, 16, 0.0))
per_metric = models.VizierGaussianProcess(_dim=types.ContinuousAndCategorical(3, 2), _num_metrics=1)
layout = tuple((name, np.shape(v)) for name, v in sorted(gp_fit._fixed_start(data).items()))
points = np.full((3, 7), 0.5)
static = (("per_metric", per_metric), ("layout", layout))
via_cache = exported.call(gp_fit._batched_loss_and_grad, (points, (data,)), static)
in_place = jax.jit(functools.partial(gp_fit._batched_loss_and_grad, **dict(static)))(points, (data,))
print(json.dumps([np.asarray(via_cache[0]).tolist(), np.asarray(in_place[0]).tolist()]))
"""


def run(cache: Path) -> tuple[list[float], list[float]]:
    env = {**os.environ, "SPICA_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    via_cache, in_place = json.loads(out.stdout.strip().splitlines()[-1])
    return via_cache, in_place


def test_first_process_exports_later_ones_load_and_the_numbers_match(tmp_path):
    first, expected = run(tmp_path)
    saved = sorted((tmp_path / "jax" / "export").glob("_batched_loss_and_grad-*.bin"))
    assert len(saved) == 1
    stamp = saved[0].stat().st_mtime_ns
    second, _ = run(tmp_path)
    assert saved[0].stat().st_mtime_ns == stamp  # loaded, not exported again
    np.testing.assert_allclose(first, expected, rtol=1e-12)
    np.testing.assert_allclose(second, expected, rtol=1e-12)


def host_square(x):
    import jax

    return jax.pure_callback(lambda v: np.asarray(v) ** 2, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


def test_a_function_export_cannot_save_still_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("SPICA_CACHE_DIR", str(tmp_path))
    from spica.study import exported

    assert np.asarray(exported.call(host_square, (np.arange(3.0),))).tolist() == [0.0, 1.0, 4.0]
    assert not list((tmp_path / "jax" / "export").glob("host_square-*"))
