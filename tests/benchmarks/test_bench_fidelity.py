"""The fidelity benchmark's quick subset, as CI runs it: every table group replayed, its figures
computed and written, what Spica cannot express counted by reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]


def test_the_quick_fidelity_run_scores_every_group_and_counts_what_it_cannot(tmp_path):
    out = tmp_path / "fidelity.json"
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_fidelity.py"), "--quick", "--calibrate", "--output", str(out)],
                          capture_output=True, text=True, timeout=1200, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    groups = report["groups"]
    assert len(groups) == 5 and report["csv_rows"] == 5221
    qwen = groups["Qwen/Qwen3-32B / h100_sxm / vllm / agg"]
    assert qwen["predicted"] == qwen["points"] == 12
    assert qwen["tpot_median_ape"] < 0.15 and qwen["spearman_tok_s_gpu"] > 0.9  # decode is where AIS is good
    gpt_oss = groups["openai/gpt-oss-120b / h200_sxm / trtllm / agg"]
    assert gpt_oss["unexpressible"].get("no_perf_data", 0) > 0  # pure-TP MoE shapes AIS has no data for
    assert gpt_oss["predicted"] + sum(gpt_oss["unexpressible"].values()) + sum(gpt_oss["failed"].values()) == gpt_oss["points"]
    for name, group in groups.items():
        held = group.get("held_out_calibrated")
        assert held is not None and held["predicted"] == group["predicted"], name  # every point scored once, held out
    assert "Qwen/Qwen3-32B / h100_sxm / vllm / agg: 12 of 12 points" in done.stdout
