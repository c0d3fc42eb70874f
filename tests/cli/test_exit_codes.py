"""What a script sees when a search ends: exit 3 and the reason when nothing was feasible."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e

CONFIG = """\
search_space: {model_name: Qwen/Qwen3-32B, hardware_sku: h200_sxm, gpu_budget: 2, context_length: 4096,
  deployment_mode: [agg], backend: [vllm], router_mode: [round_robin], planner_scaling_policy: [disabled],
  agg_max_num_seqs: [64], agg_max_num_batched_tokens: [8192]}
workload: {isl: 1024, osl: 512, concurrency: 8, num_request_ratio: 50}  # 400 requests: far longer than a 1 ms cap
sweep: {max_rounds: 1, candidates_per_round: 2, parallel_evals: 1, max_eval_seconds: %s}
"""


def _search(tmp_path: Path, cap: str) -> subprocess.CompletedProcess:
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG % cap)
    command = [sys.executable, "-m", "spica", "--config-file", str(config), f"results_dir={tmp_path / 'out'}"]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300)


def test_a_search_with_no_feasible_deployment_exits_3_with_the_reason(tmp_path):
    done = _search(tmp_path, "0.001")  # every replay overruns its cap
    assert done.returncode == 3, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("spica: no feasible deployment among 2 candidates (2 exceed runtime); e.g. exceed runtime: replay exceeded")
    assert "Traceback" not in done.stderr
    assert (tmp_path / "out" / "ledger.csv").is_file()  # the ledger is still written


def test_a_search_that_finds_one_exits_0(tmp_path):
    done = _search(tmp_path, "null")
    assert done.returncode == 0, done.stderr[-2000:]
