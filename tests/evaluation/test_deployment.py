"""Unrolled candidate → Replay call mapping (pure logic; Dynamo's validator checks the schema)."""

from __future__ import annotations

import json

import pytest
from dynamo.mocker.config import normalize_mocker_config

from spica.core.sla import SlaBounds
from spica.evaluation.deployment import (
    ReplayCall,
    WorkloadSpec,
    build_replay_call,
    engine_args,
)

SYNTHETIC = WorkloadSpec(kind="synthetic", isl=2000, osl=200, request_count=100, concurrency=32)


def test_agg_candidate_maps_to_engine_args_dynamo_accepts(agg_candidate):
    call = build_replay_call(agg_candidate(tp=4, replicas=3), SYNTHETIC)
    args = call.kwargs["extra_engine_args"]
    engine = args["engine"]
    assert call.function == "run_synthetic_trace_replay"
    assert call.args == (2000, 200, 100)
    assert call.kwargs["num_workers"] == 3
    assert call.kwargs["replay_concurrency"] == 32
    assert (args["tensor_parallel_size"], args["dp_size"], args["startup_time"]) == (4, 1, 60.0)
    assert engine["num_gpu_blocks"] == 27_426  # AI Configurator 0.12's 1,755,264 KV tokens of a TP4 worker, in blocks of 64
    assert engine["worker_type"] == "aggregated"
    assert engine["timing_model"]["config"] == {
        "model": "Qwen/Qwen3-32B",
        "system": "h200_sxm",
        "backend": "vllm",
        "backend_version": "0.24.0",
        "worker_type": "aggregated",
        "tp": 4,
        "pp": 1,
        "attention_dp": 1,
        "kv_block_size": 64,
    }
    normalized = normalize_mocker_config(args)  # raises on any key the mocker does not know
    assert normalized["engine"]["max_num_seqs"] == 256


def test_kv_blocks_are_split_across_attention_dp_ranks_and_moe_shape_reaches_ais(agg_candidate):
    candidate = agg_candidate(tp=1, attention_dp=4, moe_tp=1, moe_ep=4, agg_num_gpu_blocks=40_000)
    args = engine_args(candidate, "agg")
    assert (args["dp_size"], args["engine"]["num_gpu_blocks"]) == (4, 10_000)
    config = args["engine"]["timing_model"]["config"]
    assert (config["attention_dp"], config["moe_tp_size"], config["moe_ep_size"]) == (4, 1, 4)


def test_sglang_gets_its_own_prefill_budget_fields(agg_candidate):
    engine = engine_args(agg_candidate(backend="sglang", agg_max_num_batched_tokens=16384), "agg")["engine"]
    assert engine["sglang"] == {"chunked_prefill_size": 16384, "max_prefill_tokens": 16384}
    assert normalize_mocker_config({"engine": engine})["engine"]["sglang"]["schedule_policy"] == "fifo"


def test_disagg_roles_carry_kv_transfer_and_their_own_shapes(disagg_candidate):
    candidate = disagg_candidate(prefill_tp=1, decode_tp=4, kv_bytes_per_token=262144, kv_transfer_bandwidth_gbps=25.0)
    call = build_replay_call(candidate, SYNTHETIC)
    prefill, decode = call.kwargs["prefill_engine_args"], call.kwargs["decode_engine_args"]
    assert "extra_engine_args" not in call.kwargs
    assert (call.kwargs["num_prefill_workers"], call.kwargs["num_decode_workers"]) == (1, 1)
    assert (prefill["tensor_parallel_size"], decode["tensor_parallel_size"]) == (1, 4)
    assert (prefill["engine"]["worker_type"], decode["engine"]["worker_type"]) == ("prefill", "decode")
    assert decode["engine"]["enable_prefix_caching"] is False
    for role in (prefill, decode):
        assert (role["engine"]["kv_transfer_bandwidth"], role["engine"]["kv_transfer_bytes_per_token"]) == (25.0, 262144)
        normalize_mocker_config(role)


def test_host_offload_only_where_prefix_caching_runs(disagg_candidate):
    candidate = disagg_candidate(
        num_g2_blocks=5000, kv_bytes_per_token=262144, bandwidth_g1_to_g2_gbps=20.0, bandwidth_g2_to_g1_gbps=30.0, offload_batch_size=8
    )
    prefill = engine_args(candidate, "prefill")
    assert prefill["engine"]["native_host_offload"] == {"num_host_blocks": 5000, "d2h_bandwidth_gbps": 20.0, "h2d_bandwidth_gbps": 30.0}
    assert prefill["engine"]["kv_cache_bytes_per_token"] == 262144
    assert "native_host_offload" not in engine_args(candidate, "decode")["engine"]
    normalize_mocker_config(prefill)


def test_router_knobs_become_router_config_only_when_present(agg_candidate):
    assert "router_config" not in build_replay_call(agg_candidate(), SYNTHETIC).kwargs
    kv = agg_candidate(router_mode="kv_router", overlap_score_credit=0.5, prefill_load_scale=2.0, router_temperature=0.2)
    kwargs = build_replay_call(kv, SYNTHETIC).kwargs
    assert kwargs["router_mode"] == "kv_router"
    assert kwargs["router_config"] == {"overlap_score_credit": 0.5, "prefill_load_scale": 2.0, "router_temperature": 0.2}


def test_sla_bounds_pass_through_when_set(agg_candidate):
    kwargs = build_replay_call(agg_candidate(), SYNTHETIC, SlaBounds(ttft_ms=500, itl_ms=30)).kwargs
    assert (kwargs["sla_ttft_ms"], kwargs["sla_itl_ms"]) == (500.0, 30.0)
    assert "sla_e2e_ms" not in kwargs


def test_trace_workload_open_and_closed_loop(agg_candidate):
    trace = WorkloadSpec(kind="trace", trace_path="/data/t.jsonl", arrival_speedup_ratio=2.0, shared_prefix_ratio=0.3, num_prefix_groups=4)
    open_loop = build_replay_call(agg_candidate(), trace)
    assert (open_loop.function, open_loop.args) == ("run_trace_replay", ("/data/t.jsonl",))
    assert open_loop.kwargs["arrival_speedup_ratio"] == 2.0
    assert (open_loop.kwargs["trace_shared_prefix_ratio"], open_loop.kwargs["trace_num_prefix_groups"]) == (0.3, 4)
    closed = build_replay_call(agg_candidate(concurrency=48), trace)
    assert closed.kwargs["replay_concurrency"] == 48
    assert "arrival_speedup_ratio" not in closed.kwargs


def test_synthetic_rate_and_multi_turn_extras(agg_candidate):
    workload = WorkloadSpec(kind="synthetic", isl=1000, osl=100, request_count=50, request_rate=4.0, turns_per_session=3, inter_turn_delay_ms=200.0)
    kwargs = build_replay_call(agg_candidate(), workload).kwargs
    assert (kwargs["request_rate"], kwargs["turns_per_session"], kwargs["inter_turn_delay_ms"]) == (4.0, 3, 200.0)
    assert "replay_concurrency" not in kwargs


def test_candidate_concurrency_overrides_workload_concurrency(agg_candidate):
    assert build_replay_call(agg_candidate(concurrency=7), SYNTHETIC).kwargs["replay_concurrency"] == 7


def test_planner_config_brings_ais_identity_for_its_bootstrap(disagg_candidate):
    call = build_replay_call(disagg_candidate(), SYNTHETIC, planner_config={"mode": "disagg"})
    assert call.kwargs["planner_config"] == {"mode": "disagg"}
    metadata = call.kwargs["performance_model_metadata"]
    assert set(metadata) == {"prefill", "decode"}
    assert metadata["decode"]["config"]["worker_type"] == "decode"


def test_replay_call_round_trips_through_json(agg_candidate):
    call = build_replay_call(agg_candidate(router_mode="kv_router", overlap_score_credit=1.0), SYNTHETIC, timing="ais")
    restored = ReplayCall.from_dict(json.loads(json.dumps(call.to_dict())))
    assert restored == call
    assert restored.fingerprint() == call.fingerprint()
    assert hash(restored) == hash(call)


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        (dict(kind="trace"), "workload.trace_path is required for a trace workload"),
        (dict(kind="synthetic", isl=10, osl=10), "workload.request_count must be a positive integer for a synthetic workload (got None)"),
        (dict(kind="synthetic", isl=10, osl=10, request_count=5, request_rate=1.0, concurrency=2), "workload: set request_rate (open loop) or concurrency (closed loop), not both"),
        (dict(kind="poisson"), "workload.kind: 'poisson' is not one of trace, synthetic"),
    ],
)
def test_invalid_workloads_are_rejected_in_one_line(workload, message):
    with pytest.raises(ValueError) as error:
        WorkloadSpec(**workload)
    assert str(error.value) == message


def test_synthetic_without_rate_or_concurrency_fails_at_build(agg_candidate):
    with pytest.raises(ValueError, match="needs request_rate or concurrency"):
        build_replay_call(agg_candidate(), WorkloadSpec(kind="synthetic", isl=10, osl=10, request_count=5))


def test_unknown_timing_mode_is_rejected(agg_candidate):
    with pytest.raises(ValueError, match="timing: 'poly' is not one of table, ais"):
        build_replay_call(agg_candidate(), SYNTHETIC, timing="poly")  # type: ignore[arg-type]
