from __future__ import annotations

import pytest

from spica.space.__main__ import main


def test_cli_prints_the_pool_table(qwen_branches: tuple, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["Qwen/Qwen3-32B-FP8", "h200_sxm", "--budget", "8", "--context", "4096", "--backend", "vllm", "sglang"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("Qwen/Qwen3-32B-FP8 (dense, Qwen3ForCausalLM, max context 40960) on h200_sxm")
    assert "[agg] 15 configs; backends: vllm" in out and "[disagg] 71 configs" in out
    assert "  prefill  tp1    tp        1     1-7" in out


def test_cli_reports_user_errors_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["Qwen/Qwen3-32B-FP8", "h200_sxm", "--budget", "4", "--min-budget", "5"])
    assert code == 2
    assert capsys.readouterr().err == "error: gpu budget: need 0 < min_gpu_budget <= gpu_budget, got 5 and 4\n"
