"""`spica space`, the one command printing the parallel-config pools (`python -m spica.space`, a
second one with defaults of its own, is gone)."""

from __future__ import annotations

import pytest

from spica.cli.commands import main

QWEN = ["search_space.model_name=Qwen/Qwen3-32B-FP8", "search_space.hardware_sku=h200_sxm"]


def test_the_command_prints_the_pool_table(capsys: pytest.CaptureFixture[str]) -> None:
    main(["space", *QWEN, "search_space.gpu_budget=8", "search_space.context_length=4096", "search_space.backend=[vllm,sglang]"])
    out = capsys.readouterr().out
    assert out.startswith("Qwen/Qwen3-32B-FP8 (dense, Qwen3ForCausalLM, max context 40960) on h200_sxm")
    assert "[agg] 15 configs; backends: vllm" in out and "[disagg] 71 configs" in out
    assert "  prefill  tp1    tp        1     1-7" in out


def test_the_command_reports_user_errors_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["space", *QWEN, "search_space.gpu_budget=4", "search_space.min_gpu_budget=5"])
    assert info.value.code == 2
    assert capsys.readouterr().err == "spica: invalid input:\n  search_space: min_gpu_budget (5) must be <= gpu_budget (4)\n"
