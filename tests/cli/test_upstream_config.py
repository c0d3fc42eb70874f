"""An upstream-style study file loads unchanged and runs to a front (real Replay, AIC, Vizier)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

GLM5_B200_72 = """\
# upstream Spica's headline study: GLM-5-FP8 on 72 B200s, SGLang disagg, KV-relative load
search_space:
  model_name: zai-org/GLM-5-FP8
  hardware_sku: b200_sxm
  backend: [sglang]
  deployment_mode: [disagg]
  gpu_budget: 72
  min_gpu_budget: null
  context_length: 2048
  router_mode: [round_robin]
  planner_scaling_policy: [disabled]
workload:
  isl: 1024
  osl: 1024
  kv_load_ratio: [0.0, 1.0]
  num_request_ratio: 10
goal:
  target: pareto
  sla: null
sweep:
  max_rounds: 80
  parallel_evals: 8
  random_seed: 1
  max_eval_seconds: 600
"""


@pytest.mark.e2e
def test_the_glm5_b200_study_loads_unchanged_and_runs_to_a_front(tmp_path):
    config = tmp_path / "glm5.yaml"
    config.write_text(GLM5_B200_72)
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "spica", "--config", str(config), "--results-dir", str(out),
         "sweep.max_rounds=1", "sweep.candidates_per_round=2", "sweep.parallel_evals=2"],
        cwd=REPO, capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Pareto front" in run.stdout and "Traceback" not in run.stderr
    ledger = json.loads((out / "ledger.json").read_text())
    feasible = [entry for entry in ledger if entry["status"] == "feasible"]
    assert feasible, [entry["reason"] for entry in ledger]
    for entry in ledger:
        sample = entry["unrolled"]
        assert sample["deployment_mode"] == "disagg" and sample["backend"] == "sglang" and "mode" not in sample
        assert sample["used_gpus"] <= 72 and 0.0 <= sample["kv_load_ratio"] <= 1.0
        fit = sample["kv_load_capacity_tokens"] // (1024 + 1024 // 2)
        assert sample["kv_load_concurrency_capacity"] == fit
        assert sample["concurrency"] == max(1, int(sample["kv_load_ratio"] * fit))
    summary = json.loads((out / "summary.json").read_text())
    front = summary["selected"]
    assert front and all((out / "deploy").glob("01-*/dynamo.yaml"))
    by_key = {entry["key"]: entry for entry in ledger}
    users = [by_key[key]["objectives"]["throughput_per_user"] for key in front]
    assert users == sorted(users)  # the front ascends along its last objective
    assert all(by_key[key]["score"] == by_key[key]["objectives"]["throughput_per_gpu"] for key in front)
