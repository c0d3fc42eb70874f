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


def run(cache: Path, script: str = SCRIPT) -> tuple[list[float], list[float]]:
    env = {**os.environ, "SPICA_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    via_cache, in_place = json.loads(out.stdout.strip().splitlines()[-1])
    return via_cache, in_place


def test_first_process_exports_later_ones_load_and_the_numbers_match(tmp_path):
    first, expected = run(tmp_path)
    saved = sorted((tmp_path / "jax" / "export").glob("_batched_loss_and_grad-*"))
    assert [path.suffix for path in saved] == [".bin", ".xla"]  # the export, and its executable
    stamps = [path.stat().st_mtime_ns for path in saved]
    second, _ = run(tmp_path)
    assert [path.stat().st_mtime_ns for path in saved] == stamps  # loaded, not exported or compiled again
    assert first == expected and second == expected


# SCRIPT after a preload of the name "a small GP loss": once the background reads end, the files
# they read are deleted, so a call that did not use what was read would compile the function again.
PRELOADING = """
from spica.study import exported
exported.preload("a small GP loss")
exported._PRELOADS.submit(lambda: None).result()
for path in exported._PRELOADED:
    path.unlink()
""" + SCRIPT


def test_what_the_last_process_of_a_name_used_is_read_in_the_background_and_used(tmp_path):
    first, expected = run(tmp_path, PRELOADING)  # nothing remembered yet: exports, and remembers
    (executable,) = (tmp_path / "jax" / "export").glob("_batched_loss_and_grad-*.xla")
    (remembered,) = (tmp_path / "jax" / "export" / "used").glob("*.txt")
    assert remembered.read_text().split() == [executable.name]
    second, _ = run(tmp_path, PRELOADING)
    assert first == second == expected
    assert not executable.exists()  # read before the call, deleted, and not compiled again


def test_an_unreadable_executable_is_compiled_again(tmp_path):
    _, expected = run(tmp_path)
    (executable,) = (tmp_path / "jax" / "export").glob("_batched_loss_and_grad-*.xla")
    executable.write_bytes(b"torn")
    assert run(tmp_path)[0] == expected
    assert executable.read_bytes() != b"torn" and run(tmp_path)[0] == expected


# An executable JAX read from its persistent compilation cache, serialised: it loads, then fails to
# run ("Function ..._kernel not found"). What spica.study.exported would keep if the cache could
# hand it one; written over the good executable of the SCRIPT's function.
BROKEN = """
import glob, sys
import jax
from jax import export
from spica.study import exported  # the persistent cache, as a search configures it
(path,) = glob.glob(sys.argv[1] + "/jax/export/_batched_loss_and_grad-*.bin")
loaded = export.deserialize(bytearray(open(path, "rb").read()))
jax.jit(loaded.call, keep_unused=True).lower(*loaded.in_avals).compile()  # into the persistent cache
jax.clear_caches()
from_disk = jax.jit(loaded.call, keep_unused=True).lower(*loaded.in_avals).compile()
open(path[:-4] + ".xla", "wb").write(exported._executable_file(loaded.out_tree, from_disk.runtime_executable()))
"""


def test_an_executable_that_cannot_run_gives_way_to_its_export(tmp_path):
    _, expected = run(tmp_path)
    (executable,) = (tmp_path / "jax" / "export").glob("_batched_loss_and_grad-*.xla")
    env = {**os.environ, "SPICA_CACHE_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", BROKEN, str(tmp_path)], cwd=REPO, env=env, check=True, capture_output=True)
    broken = executable.read_bytes()
    assert run(tmp_path)[0] == expected
    assert executable.read_bytes() != broken and run(tmp_path)[0] == expected  # compiled again, and it runs


def host_square(x):
    import jax

    return jax.pure_callback(lambda v: np.asarray(v) ** 2, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


def test_a_function_export_cannot_save_still_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("SPICA_CACHE_DIR", str(tmp_path))
    from spica.study import exported

    assert np.asarray(exported.call(host_square, (np.arange(3.0),))).tolist() == [0.0, 1.0, 4.0]
    assert not list((tmp_path / "jax" / "export").glob("host_square-*"))
