"""KV capacity against the real AI Configurator memory model (installed 0.12)."""

from __future__ import annotations

import pytest

from spica.space import cache, capacity
from spica.space.capacity import MemorySettings, RankCapacity
from spica.space.shapes import WorkerShape

LLAMA_70B = "meta-llama/Meta-Llama-3.1-70B"
SETTINGS = MemorySettings(gpu_memory_utilization=0.9, max_num_batched_tokens=8192)


def test_perf_data_lookup() -> None:
    assert capacity.perf_data_version("h200_sxm", "trtllm")
    assert capacity.perf_data_version("b60", "sglang") is None


def test_llama_70b_tp1_has_a_small_positive_capacity_on_trtllm_and_none_on_vllm() -> None:
    version = capacity.perf_data_version("h200_sxm", "trtllm")
    (trtllm,) = capacity.rank_capacities(LLAMA_70B, "h200_sxm", "trtllm", version, SETTINGS, [WorkerShape()]).values()
    assert 0 < trtllm.tokens < 32768 and trtllm.error is None
    version = capacity.perf_data_version("h200_sxm", "vllm")
    (vllm,) = capacity.rank_capacities(LLAMA_70B, "h200_sxm", "vllm", version, SETTINGS, [WorkerShape()]).values()
    assert vllm.tokens == 0 and vllm.error is not None and vllm.error.startswith("no KV budget")


def test_capacities_are_cached_on_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[WorkerShape] = []
    real = capacity._estimate

    def counting(*args: object) -> RankCapacity:
        calls.append(args[-1])  # type: ignore[arg-type]
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(capacity, "_estimate", counting)
    version = capacity.perf_data_version("h200_sxm", "vllm")
    shapes = [WorkerShape(tp=2), WorkerShape(tp=4)]
    unique = MemorySettings(gpu_memory_utilization=0.85, max_num_batched_tokens=4096)  # no other test asks this
    args = ("Qwen/Qwen3-32B-FP8", "h200_sxm", "vllm", version, unique)
    first = capacity.rank_capacities(*args, shapes)
    assert calls == shapes
    cache.forget_in_process()  # as a new process would
    assert capacity.rank_capacities(*args, shapes) == first
    assert capacity.rank_capacities(*args, shapes + [WorkerShape(tp=8)])[WorkerShape(tp=8)].tokens > 0
    assert calls == shapes + [WorkerShape(tp=8)]
    assert first[WorkerShape(tp=4)].tokens > first[WorkerShape(tp=2)].tokens > 0


def test_the_readmes_kv_figures_are_what_a_search_computes() -> None:
    """README's quantization and mixed-hardware paragraphs quote one-GPU vLLM pools; each sentence
    must hold the figures Spica's capacity function gives today (AI Configurator 0.12)."""
    from pathlib import Path

    from spica.space.branches import worker_capacity

    def tokens(model: str, sku: str, quant: tuple[tuple[str, str], ...] = ()) -> int:
        settings = MemorySettings(0.9, 8192, quant)
        return worker_capacity(model, sku, "vllm", "0.24.0", WorkerShape(tp=1), settings, 64).kv_tokens

    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    fp8, bf16 = (tokens("Qwen/Qwen3-32B", "h200_sxm", (("kvcache_quant_mode", mode),)) for mode in ("fp8", "bfloat16"))
    assert f"for Qwen3-32B on one H200 with vLLM, fp8 holds {fp8:,} KV tokens to bfloat16's {bf16:,}." in readme
    h100, h200 = (tokens("Qwen/Qwen3-32B-FP8", sku) for sku in ("h100_sxm", "h200_sxm"))
    assert f"for Qwen3-32B-FP8 at TP1 with vLLM, an H100 holds {h100:,} KV tokens to an H200's {h200:,}." in readme
