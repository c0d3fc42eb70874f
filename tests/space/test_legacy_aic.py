"""spica.space on an AI Configurator without the memory model, in its own real venv.

aiconfigurator 0.9.0 (the release the issue names) is only a wheel_stub placeholder on PyPI
that fetches the real wheel from pypi.nvidia.com, which this machine cannot reach; 0.8.0 is
the nearest real release without `aiconfigurator.sdk.memory`. Set SPICA_LEGACY_AIC_VERSION
to test another one (e.g. 0.9.0 where that index is reachable).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spica.core.paths import cache_root

# Read at collection, before conftest points SPICA_CACHE_DIR at a temp dir: the venv costs
# minutes to build and belongs in the user's real cache.
USER_CACHE_ROOT = cache_root()
LEGACY_AIC = os.environ.get("SPICA_LEGACY_AIC_VERSION", "0.8.0")
REPO_ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, logging
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
import aiconfigurator
from spica.space import (KvCapacityUnavailable, SpaceRequest, enumerate_branches, format_pool_table)

out = {"aic_version": aiconfigurator.__version__}
try:
    enumerate_branches(SpaceRequest("not/a-model", "h200_sxm", needs_kv_capacity=True))
except KvCapacityUnavailable as error:
    out["kv_load_error"] = str(error)
request = SpaceRequest("Qwen/Qwen3-32B-FP8", "h200_sxm", backends=("vllm", "sglang", "trtllm"), gpu_budget=4,
                       context_length=4096)
enumerate_branches(request)
branches = enumerate_branches(request)
out["modes"] = {b.mode: len(b.configs) for b in branches}
out["kv_known"] = [b.kv_known for b in branches]
out["tags"] = sorted({c.backends for b in branches for c in b.configs})
out["unrolled"] = branches[0].configs[-1].unrolled("trtllm")
out["table"] = format_pool_table(branches)
print(json.dumps(out))
"""


@pytest.fixture(scope="session")
def legacy_python() -> Path:
    """A venv with only aiconfigurator==LEGACY_AIC (+ its deps), built once and reused."""
    venv = USER_CACHE_ROOT / f"venv-aic-{LEGACY_AIC}"
    ready = venv / ".spica-ready"
    python = venv / "bin" / "python"
    if not ready.exists():
        subprocess.run(["rm", "-rf", str(venv)], check=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        install = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"aiconfigurator=={LEGACY_AIC}"],
            capture_output=True,
            text=True,
        )
        if install.returncode != 0:
            pytest.fail(f"pip install aiconfigurator=={LEGACY_AIC} failed:\n{install.stderr[-3000:]}")
        ready.write_text(LEGACY_AIC)
    return python


@pytest.mark.e2e
def test_without_memory_model_kv_filter_is_skipped_and_kv_load_fails_fast(
    legacy_python: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "SPICA_CACHE_DIR": str(tmp_path)}
    run = subprocess.run([str(legacy_python), "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout)
    assert out["aic_version"] == LEGACY_AIC
    assert out["kv_load_error"] == (
        "kv_load_ratio needs KV capacity from AI Configurator's memory model (aiconfigurator.sdk.memory), "
        f"which the installed aiconfigurator {LEGACY_AIC} lacks (added in 0.10): install aiconfigurator>=0.10 "
        "or use a trace or fixed-concurrency workload"
    )
    warning = (
        f"WARNING spica.space: aiconfigurator {LEGACY_AIC} has no memory model (aiconfigurator.sdk.memory, "
        "added in 0.10): KV-feasibility filter skipped, shapes carry no KV capacity and every replay gets Replay's "
        "default KV cache of 16,384 blocks per attention rank (scores then do not reflect each shape's memory)"
    )
    assert run.stderr.splitlines().count(warning) == 1  # two enumerations, one warning
    # every legal shape is kept (dense TP 1/2/4 within 4 GPUs), on every backend, without KV fields
    tp = (1, 2, 4)
    disagg = sum(
        1 for gp, gd, rp, rd in itertools.product(tp, tp, range(1, 5), range(1, 5)) if gp * rp + gd * rd <= 4
    )
    assert out["modes"] == {"agg": 4 + 2 + 1, "disagg": disagg}
    assert out["kv_known"] == [False, False]
    assert out["tags"] == [["vllm", "sglang", "trtllm"]]
    assert out["unrolled"]["tp"] == 4 and out["unrolled"]["backend_version"]
    assert not any(key.endswith(("kv_tokens", "num_gpu_blocks")) for key in out["unrolled"])
    assert "KV capacity unknown (no AI Configurator memory model)" in out["table"]
    assert "kv unknown" in out["table"]
