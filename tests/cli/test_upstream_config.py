"""An upstream-style study file loads unchanged and runs to a front (real Replay, AIC, Vizier)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from results_checks import check_results_folder

REPO = Path(__file__).resolve().parents[2]

GLM5_B200_72 = REPO / "examples" / "glm5_b200_72.yaml"  # upstream-style, unchanged


@pytest.mark.e2e
def test_the_glm5_b200_study_loads_unchanged_and_runs_to_a_front(tmp_path):
    config = GLM5_B200_72
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
    assert front and check_results_folder(out) == ledger  # deploy/ holds each point of the front, manifest and all
    by_key = {entry["key"]: entry for entry in ledger}
    users = [by_key[key]["objectives"]["throughput_per_user"] for key in front]
    assert users == sorted(users)  # the front ascends along its last objective
    assert all(by_key[key]["score"] == by_key[key]["objectives"]["throughput_per_gpu"] for key in front)
