"""Quant modes as searched knobs, end to end on a real search (real AI Configurator, AIS, Replay):
KV capacity and timing follow the chosen mode, and the manifest deploys the engine's flag for it."""

from __future__ import annotations

import logging

import pytest

from spica.config import SmartSearchConfig
from spica.deploy.manifest import dynamo_manifest
from spica.search import run_smart_search
from spica.search.branches import branches_for

pytestmark = pytest.mark.e2e


def qwen3_32b(**space) -> SmartSearchConfig:
    return SmartSearchConfig.from_mapping({
        "search_space": {
            "model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm", "gpu_budget": 1, "context_length": 4096,
            "deployment_mode": ["agg"], "backend": ["vllm"], "agg_max_num_batched_tokens": [8192], "agg_max_num_seqs": [64],
            "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"], **space,
        },
        "workload": {"isl": 1024, "osl": 64, "concurrency": 32, "num_request_ratio": 2},
        "goal": {"target": "throughput_per_gpu"},
        "sweep": {"algorithm": "grid", "parallel_evals": 1},
    })


def test_kv_cache_fp8_doubles_the_kv_tokens_and_the_chosen_mode_is_what_the_manifest_deploys(tmp_path) -> None:
    results = run_smart_search(qwen3_32b(kvcache_quant_mode=["bfloat16", "fp8"]), results_dir=tmp_path)
    by_mode = {candidate.unrolled["kvcache_quant_mode"]: candidate for candidate in results.ledger}
    assert set(by_mode) == {"bfloat16", "fp8"} and all(candidate.feasible for candidate in by_mode.values())
    bf16, fp8 = (by_mode[mode].unrolled["agg_kv_capacity_tokens"] for mode in ("bfloat16", "fp8"))
    assert 1.9 < fp8 / bf16 < 2.1  # AI Configurator: half the bytes per token, same memory left for KV
    assert by_mode["fp8"].metrics != by_mode["bfloat16"].metrics  # AIS timed each at its own mode
    best = results[0]
    args = dynamo_manifest(best)["spec"]["components"]
    worker = next(component for component in args if component["type"] == "worker")
    argv = worker["podTemplate"]["spec"]["containers"][0]["args"]
    assert argv[argv.index("--kv-cache-dtype") + 1] == best.unrolled["kvcache_quant_mode"]
    assert dynamo_manifest(best)["metadata"]["annotations"]["spica/quantization"] == f"kvcache_quant_mode={best.unrolled['kvcache_quant_mode']}"


def test_a_mode_the_perf_data_lacks_is_dropped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="spica.space"):
        (branch,) = branches_for(qwen3_32b(kvcache_quant_mode=["fp8", "int8"]))
    assert branch.quant_knobs() == {"kvcache_quant_mode": ("fp8",)}
    assert "kvcache_quant_mode: int8 dropped for vllm on h200_sxm: not in vllm 0.24.0 perf data" in caplog.text
