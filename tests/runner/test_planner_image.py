"""Spica inside an image built like Dynamo's dynamo-planner container: ai-dynamo 1.6.1 with an
AI Configurator that predates the memory model (containers/build-image.sh --planner)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.e2e

SPACE = {"model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm", "gpu_budget": 2, "deployment_mode": ["agg"],
         "backend": ["vllm"], "agg_max_num_batched_tokens": [8192], "agg_max_num_seqs": [64],
         "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"]}
SKIPPED = "KV-feasibility filter skipped"


def _search(image: str, tmp_path: Path, workload: dict, trace: Path | None = None) -> subprocess.CompletedProcess[str]:
    inputs, out = tmp_path / "in", tmp_path / "out"
    inputs.mkdir()
    out.mkdir()
    if trace is not None:
        (inputs / "trace.jsonl").write_text("".join(trace.read_text().splitlines(keepends=True)[:100]))
    config = {"search_space": SPACE, "workload": workload, "sweep": {"algorithm": "grid", "parallel_evals": 1}}
    (inputs / "search.yaml").write_text(yaml.safe_dump(config))
    inputs.chmod(0o755)
    argv = ["podman", "run", "--rm", "--network=none", "-v", f"{inputs}:/in:ro", "-v", f"{out}:/out:U", image,
            "--config-file", "/in/search.yaml", "results_dir=/out"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600)


def test_kv_load_ratio_is_refused_before_enumeration(planner_image, tmp_path):
    done = _search(planner_image, tmp_path, {"isl": 512, "osl": 32, "kv_load_ratio": 0.5, "num_request_ratio": 2})
    assert done.returncode == 2, done.stderr[-2000:]
    assert "kv_load_ratio needs KV capacity from AI Configurator's memory model" in done.stderr
    assert "aiconfigurator 0.8.0 lacks" in done.stderr
    assert not (tmp_path / "out" / "ledger.json").exists()


@pytest.mark.parametrize("kind", ["fixed_concurrency", "trace"])
def test_a_search_runs_to_a_result_with_the_kv_filter_skipped_once(planner_image, shared_dir, tmp_path, kind):
    if kind == "trace":
        done = _search(planner_image, tmp_path, {"trace_path": "/in/trace.jsonl"},
                       trace=shared_dir / "data" / "mooncake" / "conversation_trace_15min.jsonl")
    else:
        done = _search(planner_image, tmp_path, {"isl": 512, "osl": 32, "concurrency": 8, "num_request_ratio": 2})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count(SKIPPED) == 1
    assert "3 candidates replayed: 3 feasible" in done.stdout
