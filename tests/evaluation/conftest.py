"""Candidates shaped like unroll's output (docs/unrolled-candidate.md) with the KV capacities a
search gives them: KV tokens per worker for Qwen3-32B on h200_sxm with vLLM, from AI
Configurator's memory model through Spica's own capacity function (TP1 249,856, TP2 751,488,
TP4 1,755,264, TP8 3,760,576 with AI Configurator 0.12).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Callable

import pytest

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


@functools.cache
def kv_capacity(tp: int) -> Any:
    """A TP worker's KV pool at the engine settings _role gives every role (0.9, 8192, block 64)."""
    from spica.space.branches import worker_capacity
    from spica.space.capacity import MemorySettings
    from spica.space.shapes import WorkerShape

    return worker_capacity("Qwen/Qwen3-32B", "h200_sxm", "vllm", BACKEND_VERSIONS["vllm"], WorkerShape(tp=tp), MemorySettings(0.9, 8192), 64)


def _role(role: str, tp: int, replicas: int, prefix_caching: bool, max_num_seqs: int) -> dict[str, Any]:
    shape = "" if role == "agg" else f"{role}_"
    pool = kv_capacity(tp)
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
        f"{role}_kv_capacity_tokens": pool.kv_tokens,
        f"{role}_num_gpu_blocks": pool.num_gpu_blocks,
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
