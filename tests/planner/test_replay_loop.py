"""Planner in the loop: Dynamo's Replay runs the Planner config we build, for agg and disagg.

A 100 s slice of the 15-minute conversation trace, slowed to 40 % (250 s simulated), on
over-provisioned Qwen3-32B TP2 workers with AIS timing: the Planner must scale down, so the
time-averaged GPUs (gpu_hours / duration) fall below the static count.
"""

from __future__ import annotations

import functools
import json
from types import SimpleNamespace

import pytest

from spica.config.presets import LOAD_PREDICTORS, PLANNER_FPM_SAMPLING, PLANNER_LOAD_SENSITIVITY, PLANNER_SCALING_POLICIES
from spica.planner.config import planner_config, unroll_planner_fields

pytestmark = pytest.mark.e2e

MODEL, SYSTEM, BACKEND, TP = "Qwen/Qwen3-32B", "h200_sxm", "vllm", 2
SLA = SimpleNamespace(ttft_ms=2000.0, itl_ms=50.0, e2e_ms=None)


@functools.cache
def num_gpu_blocks() -> int:
    """A TP2 worker's KV pool as a search sizes it (AI Configurator's memory model, through Spica)."""
    from spica.space.branches import worker_capacity
    from spica.space.capacity import MemorySettings
    from spica.space.shapes import WorkerShape

    return worker_capacity(MODEL, SYSTEM, BACKEND, "0.24.0", WorkerShape(tp=TP), MemorySettings(0.9, 8192), 64).num_gpu_blocks


def engine_args(worker_type: str) -> dict:
    ais = {"model": MODEL, "system": SYSTEM, "backend": BACKEND, "worker_type": worker_type, "tp": TP}
    return {
        "tensor_parallel_size": TP,
        "startup_time": 30.0,
        "engine": {
            "backend": BACKEND,
            "worker_type": worker_type,
            "num_gpu_blocks": num_gpu_blocks(),
            "block_size": 64,
            "max_num_seqs": 256,
            "max_num_batched_tokens": 8192,
            "enable_prefix_caching": worker_type != "decode",
            "timing_model": {"type": "external", "provider": "ais", "config": ais},
        },
    }


@pytest.fixture(scope="module")
def trace_slice(mooncake_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "first_100s.jsonl"
    with open(mooncake_dir / "conversation_trace_15min.jsonl") as source:
        path.write_text("".join(line for line in source if json.loads(line)["timestamp"] < 100_000))
    return str(path)


def candidate(shape: dict, policy: str, target: str, predictor: str) -> dict:
    pinned = {"backend": BACKEND, "model_name": MODEL, "hardware_sku": SYSTEM, "gpu_budget": 16, "min_gpu_budget": 1, "min_endpoint": 1,
              "backend_version": "0.24.0", **{f"{role}_block_size": 64 for role in ("agg", "prefill", "decode")}}  # the Planner's AIS model
    planner = unroll_planner_fields(
        policy,
        PLANNER_SCALING_POLICIES[policy],
        PLANNER_FPM_SAMPLING["default"],
        PLANNER_LOAD_SENSITIVITY["default"],
        predictor,
        LOAD_PREDICTORS[predictor],
        target,
    )
    return {**pinned, **shape, **planner}


def time_averaged_gpus(summary: dict) -> float:
    return summary["gpu_hours"] / (summary["duration_ms"] / 3.6e6)


def test_agg_throughput_scaling_scales_down(trace_slice):
    from dynamo.replay import run_trace_replay

    unrolled = candidate({"deployment_mode": "agg", "tp": TP, "pp": 1, "attention_dp": 1}, "throughput_180_5", "sla", "kalman_default_log1p")
    report = run_trace_replay(
        trace_slice,
        extra_engine_args=engine_args("aggregated"),
        num_workers=8,
        router_mode="kv_router",
        arrival_speedup_ratio=0.4,
        planner_config=planner_config(unrolled, SLA),
    )
    assert report.planner.metadata["bootstrap"]["status"] == "installed"
    assert report.planner.total_ticks > 0
    assert any(event.reason == "scale_down" and event.at_s == 180.0 for event in report.planner.scaling_events)
    assert time_averaged_gpus(report.summary) < 16 * 0.9


def test_disagg_load_scaling_scales_down(trace_slice):
    from dynamo.replay import run_trace_replay

    shape = {"deployment_mode": "disagg", **{f"{role}_{key}": value for role in ("prefill", "decode") for key, value in (("tp", TP), ("pp", 1), ("attention_dp", 1))}}
    unrolled = candidate(shape, "load_180_5", "throughput", "constant_last")
    report = run_trace_replay(
        trace_slice,
        prefill_engine_args=engine_args("prefill"),
        decode_engine_args=engine_args("decode"),
        num_prefill_workers=2,
        num_decode_workers=2,
        router_mode="kv_router",
        arrival_speedup_ratio=0.4,
        planner_config=planner_config(unrolled, SLA),
    )
    assert report.planner.metadata["mode"] == "disagg"
    assert any(event.reason == "scale_down" for event in report.planner.scaling_events)
    assert time_averaged_gpus(report.summary) < 8 * 0.9
