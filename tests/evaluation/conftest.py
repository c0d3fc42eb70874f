"""Candidates shaped like unroll's output (docs/unrolled-candidate.md) with plausible KV capacities.

KV tokens per worker for Qwen3-32B on h200_sxm with vllm come from AI Configurator 0.12
(TP1 261k, TP2 775k, TP4 1.80M; TP8 extrapolated).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pytest

KV_TOKENS = {1: 261_000, 2: 775_000, 4: 1_800_000, 8: 3_900_000}
BACKEND_VERSIONS = {"vllm": "0.24.0", "sglang": "0.5.14"}
QWEN3_32B_KV_BYTES_PER_TOKEN = 64 * 2 * 8 * 128 * 2  # layers × (K,V) × kv heads × head dim × bf16


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return Path(os.environ.get("SPICA_SHARED_DIR", Path(__file__).resolve().parents[2].parent / "shared"))


@pytest.fixture(scope="session", autouse=True)
def timing_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One timing-table cache for the whole session, never the user's ~/.cache."""
    root = tmp_path_factory.mktemp("spica-cache")
    previous = os.environ.get("SPICA_CACHE_DIR")
    os.environ["SPICA_CACHE_DIR"] = str(root)
    yield root / "timing"
    if previous is None:
        os.environ.pop("SPICA_CACHE_DIR", None)
    else:
        os.environ["SPICA_CACHE_DIR"] = previous


def _common(backend: str) -> dict[str, Any]:
    return {
        "backend": backend,
        "backend_version": BACKEND_VERSIONS[backend],
        "model_name": "Qwen/Qwen3-32B",
        "hardware_sku": "h200_sxm",
        "gpu_budget": 32,
        "min_gpu_budget": 1,
        "min_endpoint": 1,
        "context_length": 32768,
        "startup_time": 60.0,
        "aic_nextn": 0,
        "router_mode": "round_robin",
        "planner_scaling_policy": "disabled",
        "enable_throughput_scaling": False,
        "enable_load_scaling": False,
        "planner_optimization_target": "throughput",
    }


def _role(role: str, tp: int, replicas: int, prefix_caching: bool, max_num_seqs: int) -> dict[str, Any]:
    shape = "" if role == "agg" else f"{role}_"
    kv_tokens = KV_TOKENS[tp]
    return {
        f"{shape}tp": tp,
        f"{shape}pp": 1,
        f"{shape}attention_dp": 1,
        f"{shape}moe_tp": 1,
        f"{shape}moe_ep": 1,
        f"{shape}strategy": "tp",
        f"{shape}replicas": replicas,
        f"{role}_max_num_batched_tokens": 8192,
        f"{role}_max_num_seqs": max_num_seqs,
        f"{role}_block_size": 64,
        f"{role}_gpu_memory_utilization": 0.9,
        f"{role}_enable_prefix_caching": prefix_caching,
        f"{role}_kv_capacity_tokens": kv_tokens,
        f"{role}_num_gpu_blocks": kv_tokens // 64,
    }


@pytest.fixture
def agg_candidate() -> Callable[..., dict[str, Any]]:
    def make(tp: int = 1, replicas: int = 2, backend: str = "vllm", **overrides: Any) -> dict[str, Any]:
        candidate = {**_common(backend), "deployment_mode": "agg", "used_gpus": tp * replicas}
        candidate.update(_role("agg", tp, replicas, prefix_caching=True, max_num_seqs=256))
        candidate.update(overrides)
        return candidate

    return make


@pytest.fixture
def disagg_candidate() -> Callable[..., dict[str, Any]]:
    def make(prefill_tp: int = 2, decode_tp: int = 2, backend: str = "vllm", **overrides: Any) -> dict[str, Any]:
        candidate = {**_common(backend), "deployment_mode": "disagg", "used_gpus": prefill_tp + decode_tp}
        candidate.update(_role("prefill", prefill_tp, 1, prefix_caching=True, max_num_seqs=8))
        candidate.update(_role("decode", decode_tp, 1, prefix_caching=False, max_num_seqs=256))
        candidate.update(overrides)
        return candidate

    return make
