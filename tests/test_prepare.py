"""spica/prepare.py: what bin/setup exports is what the embedded default search would
otherwise export during its first run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spica.core.paths import cache_root

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.e2e  # two processes that import the whole stack (~15 s)


def _run(args: list[str], cache: Path, cwd: Path) -> None:
    env = {**os.environ, "SPICA_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_default_search_exports_nothing_after_setup_exported_its_functions(tmp_path):
    shared = cache_root()
    cache = tmp_path / "cache"  # Spica's cache with an empty JAX part: a machine's first setup
    cache.mkdir()
    for entry in shared.glob("*"):
        if entry.name != "jax":
            (cache / entry.name).symlink_to(entry)

    _run(["-m", "spica.prepare"], cache, REPO)
    exported = sorted(path.name for path in (cache / "jax" / "export").glob("*.xla"))
    assert {name.split("-")[0] for name in exported} == {"_constraint_bounds", "_batched_loss_and_grad", "_acquisition_scores"}

    _run(["-m", "spica", f"hydra.run.dir={tmp_path / 'run'}"], cache, tmp_path)
    assert sorted(path.name for path in (cache / "jax" / "export").glob("*.xla")) == exported
