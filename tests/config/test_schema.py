"""Upstream Spica's config contract (docs/config.md): every default, choice set and rule, with the
expected behaviour being upstream's. Each bad config asserts its one-line message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

import spica
from spica.config import (
    Candidate,
    ConfigError,
    OptimizationGoal,
    OptimizationTarget,
    SearchSpace,
    SLATarget,
    SmartSearchConfig,
    SweepConfig,
    Workload,
    presets,
)

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = Path(os.environ.get("SPICA_SHARED_DIR", REPO.parent / "shared")) / "scenarios"
SPACE = {"model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm"}
CLOSED_LOOP = {"isl": 1024, "osl": 128, "concurrency": 32, "num_request_ratio": 10}


def base(**blocks):
    data = {"search_space": dict(SPACE), "workload": dict(CLOSED_LOOP)}
    for block, fields in blocks.items():
        data.setdefault(block, {}).update(fields)
    return data


def with_workload(workload, **blocks):
    data = base(**blocks)
    data["workload"] = workload
    return data


def errors_of(data) -> list[str]:
    with pytest.raises(ConfigError) as info:
        SmartSearchConfig.from_mapping(data)
    return info.value.lines


@pytest.fixture
def trace(tmp_path, monkeypatch):
    path = tmp_path / "t.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [0]}\n')
    monkeypatch.chdir(tmp_path)
    return path


@pytest.mark.parametrize("name", ["s1_dense_budget8", "s2_trace_goodput", "s3_moe_pareto"])
def test_shared_scenarios_load(name, monkeypatch):
    monkeypatch.chdir(REPO)
    config = SmartSearchConfig.from_yaml(SCENARIOS / f"{name}.yaml")
    assert config.search_space.hardware_sku == "h200_sxm"


# -- defaults (docs/config.md) ---------------------------------------------------------------

def test_search_space_defaults_are_upstreams():
    space = SmartSearchConfig.from_mapping(base()).search_space
    assert space.deployment_mode == ["disagg", "agg"] and space.backend == ["vllm"] and space.parallel_configs == []
    assert space.gpu_budget == 32
    assert (space.min_gpu_budget, space.min_endpoint, space.context_length, space.startup_time, space.aic_nextn) == (None,) * 5
    assert space.agg_max_num_batched_tokens == space.prefill_max_num_batched_tokens == [8192, 16384, 32768]
    assert space.decode_max_num_batched_tokens == [8192]
    assert space.prefill_max_num_seqs == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert space.agg_max_num_seqs == space.decode_max_num_seqs == [256, 512, 1024]
    for role in ("agg", "prefill", "decode"):
        assert getattr(space, f"{role}_block_size") == 64 and getattr(space, f"{role}_gpu_memory_utilization") == 0.9
    assert (space.agg_enable_prefix_caching, space.prefill_enable_prefix_caching, space.decode_enable_prefix_caching) == (True, True, False)
    assert (space.num_g2_blocks, space.kv_bytes_per_token, space.bandwidth_g1_to_g2_gbps, space.bandwidth_g2_to_g1_gbps,
            space.offload_batch_size) == (None,) * 5
    assert space.router_mode == ["kv_router", "round_robin"]
    assert space.overlap_score_credit == [0.0, 0.5, 1.0]
    assert space.prefill_load_scale == [0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    assert space.router_temperature == [0.0, 0.2, 0.5, 1.0]
    assert space.host_cache_hit_weight == [0.5, 0.75, 1.0] and space.disk_cache_hit_weight == [0.0, 0.25, 0.5]
    assert (space.active_decode_blocks_threshold, space.active_prefill_tokens_threshold,
            space.active_prefill_tokens_threshold_frac, space.no_admission_control) == (None, None, None, False)
    assert space.planner_scaling_policy == ["disabled", "throughput_180_5", "throughput_600_5", "load_180_5",
                                            "load_180_10", "hybrid_180_5", "hybrid_600_5"]
    assert space.planner_fpm_sampling == ["small", "default", "large", "fine"]
    assert space.planner_load_sensitivity == ["aggressive", "default", "conservative"]
    assert space.load_predictor_candidates == list(presets.LOAD_PREDICTORS) and len(space.load_predictor_candidates) == 11


def test_workload_goal_and_sweep_defaults_are_upstreams():
    config = SmartSearchConfig.from_mapping(base())
    workload, goal, sweep = config.workload, config.goal, config.sweep
    assert (workload.trace_format, workload.arrival_speedup_ratio, workload.replay_concurrency) == ("mooncake", 1.0, None)
    assert (workload.shared_prefix_ratio, workload.num_prefix_groups, workload.turns_per_session, workload.inter_turn_delay_ms) == (0.0, 0, 1, 0.0)
    assert goal.target is OptimizationTarget.throughput and goal.sla is None and goal.pareto_objectives is None
    assert goal.resolved_pareto_objectives == ["throughput_per_gpu", "throughput_per_user"]
    assert (sweep.max_rounds, sweep.parallel_evals, sweep.candidates_per_round, sweep.per_round) == (20, 16, None, 16)
    assert (sweep.random_seed, sweep.max_eval_seconds) == (1, 600.0)


def test_a_full_dump_of_the_defaults_loads_back_with_its_nulls():
    config = SmartSearchConfig.from_mapping(base())
    dumped = config.model_dump(mode="json")
    assert dumped["search_space"]["min_gpu_budget"] is None and dumped["goal"]["sla"] is None
    assert SmartSearchConfig.from_mapping(dumped) == config
    assert SmartSearchConfig.from_mapping(config.to_data()) == config


def test_explicit_nulls_where_upstream_defaults_to_null():
    data = base(
        search_space={"min_gpu_budget": None, "min_endpoint": None, "context_length": None, "startup_time": None,
                      "aic_nextn": None, "num_g2_blocks": None, "kv_bytes_per_token": None, "offload_batch_size": None,
                      "bandwidth_g1_to_g2_gbps": None, "bandwidth_g2_to_g1_gbps": None,
                      "active_decode_blocks_threshold": None, "active_prefill_tokens_threshold": None,
                      "active_prefill_tokens_threshold_frac": None},
        goal={"sla": None, "pareto_objectives": None},
        sweep={"candidates_per_round": None, "max_eval_seconds": None},
    )
    data["workload"].update({"trace_path": None, "request_rate": None, "kv_load_ratio": None, "replay_concurrency": None})
    config = SmartSearchConfig.from_mapping(data)
    assert config.sweep.max_eval_seconds is None and config.goal.sla is None


# -- search_space rules ------------------------------------------------------------------------

@pytest.mark.parametrize(
    "space, expected",
    [
        ({"router_mode": ["random"]}, "search_space.router_mode[0]: 'random' is not one of kv_router, round_robin"),
        ({"backend": ["vllm", "tensorrt"]}, "search_space.backend[1]: 'tensorrt' is not one of vllm, sglang, trtllm"),
        ({"deployment_mode": ["both"]}, "search_space.deployment_mode[0]: 'both' is not one of agg, disagg"),
        ({"backend": ["vllm", "vllm"]}, "search_space.backend: 'vllm' is listed twice"),
        ({"agg_max_num_seqs": []}, "search_space.agg_max_num_seqs: needs at least 1 entries, got 0"),
        ({"agg_max_num_seqs": [0]}, "search_space.agg_max_num_seqs[0]: 0: input should be greater than 0"),
        ({"gpu_budget": 4, "min_gpu_budget": 8}, "search_space: min_gpu_budget (8) must be <= gpu_budget (4)"),
        ({"gpu_budget": 0}, "search_space.gpu_budget: 0: input should be greater than 0"),
        ({"gpu_budget": True}, "search_space.gpu_budget: True: input should be a valid integer"),
        ({"min_gpu_budget": 0}, "search_space.min_gpu_budget: 0: input should be greater than 0"),
        ({"aic_nextn": 6}, "search_space.aic_nextn: 6: input should be less than or equal to 5"),
        ({"num_g2_blocks": -1}, "search_space.num_g2_blocks: -1: input should be greater than or equal to 0"),
        ({"num_g2_blocks": 100}, "search_space: kv_bytes_per_token is required when host offload is on (num_g2_blocks > 0)"),
        ({"kv_transfer_bandwidth_gbps": 50}, "search_space: kv_bytes_per_token is required when kv_transfer_bandwidth_gbps is set "
                                              "(a disagg KV transfer is timed by its bytes)"),
        ({"kv_bytes_per_token": 0}, "search_space.kv_bytes_per_token: 0: input should be greater than 0"),
        ({"overlap_score_credit": [0.5, 1.5]}, "search_space.overlap_score_credit[1]: 1.5: input should be less than or equal to 1"),
        ({"prefill_load_scale": [-1.0]}, "search_space.prefill_load_scale[0]: -1.0: input should be greater than or equal to 0"),
        ({"agg_gpu_memory_utilization": 1.5}, "search_space.agg_gpu_memory_utilization: 1.5: input should be less than or equal to 1"),
        ({"parallel_configs": [{"tp": 2}]}, "search_space: parallel_configs needs deployment_mode to hold exactly one mode, got disagg, agg"),
        ({"deployment_mode": ["agg"], "parallel_configs": [{"prefill": {"tp": 1}, "decode": {"tp": 2}}]}, "search_space: parallel_configs[0] is a disagg config but deployment_mode is agg"),
        ({"deployment_mode": ["agg"], "parallel_configs": [{"tp": 2, "used_gpus": 2}]}, "search_space.parallel_configs[0]: used_gpus is derived and cannot be set"),
        ({"deployment_mode": ["agg"], "parallel_configs": [{"tp": 2, "strategy": "tp"}]}, "search_space.parallel_configs[0]: strategy is derived and cannot be set"),
        ({"deployment_mode": ["agg"], "parallel_configs": [{"tp": 2, "dp": 2}]}, "search_space.parallel_configs[0]: unknown key 'dp'; allowed: tp, pp, attention_dp, moe_tp, moe_ep, replicas"),
        ({"deployment_mode": ["agg"], "parallel_configs": [{"tp": 0}]}, "search_space.parallel_configs[0]: tp: 0 must be a positive integer"),
        ({"deployment_mode": ["agg"], "parallel_configs": [{"replicas": 2}]}, "search_space.parallel_configs[0]: tp is required (pp, attention_dp, moe_tp, moe_ep and replicas default to 1)"),
        ({"deployment_mode": ["disagg"], "parallel_configs": [{"prefill": {"tp": 1}}]}, "search_space.parallel_configs[0]: a disagg entry needs both prefill and decode; decode is missing"),
        ({"deployment_mode": ["disagg"], "parallel_configs": [{"prefill": {"tp": 1}, "decode": {"pp": 2}}]}, "search_space.parallel_configs[0]: decode.tp is required (pp, attention_dp, moe_tp, moe_ep and replicas default to 1)"),
        ({"deployment_mode": ["disagg"], "parallel_configs": [{"tp": 2}]}, "search_space: parallel_configs[0] lacks prefill and decode, which a disagg entry needs (deployment_mode is disagg; a flat shape is an agg entry)"),
        ({"deployment_mode": ["disagg"], "parallel_configs": [{"decode": {"tp": 2}}]}, "search_space.parallel_configs[0]: a disagg entry needs both prefill and decode; prefill is missing"),
        ({"active_decode_blocks_threshold": 0.8}, "search_space.active_decode_blocks_threshold: Dynamo's Replay cannot model admission control, on or off, so a search that may choose kv_router could not score what it deploys; leave it null or set router_mode: [round_robin]"),
        ({"no_admission_control": True}, "search_space.no_admission_control: Dynamo's Replay cannot model admission control, on or off, so a search that may choose kv_router could not score what it deploys; leave it false or set router_mode: [round_robin]"),
        ({"no_admission_control": True, "router_mode": ["kv_router"]}, "search_space.no_admission_control: Dynamo's Replay cannot model admission control"),
        ({"active_decode_blocks_threshold": 1.5, "router_mode": ["round_robin"]}, "search_space.active_decode_blocks_threshold: 1.5: input should be less than or equal to 1"),
        ({"gpu_budgett": 8}, "search_space.gpu_budgett: unknown field; allowed: active_decode_blocks_threshold,"),
        ({"backend": ["trtllm"], "prefill_max_num_batched_tokens": [8192, 10000]}, "search_space.prefill_max_num_batched_tokens: 10000 is not a multiple of prefill_block_size 64; TensorRT-LLM's disagg KV cache transceiver requires it"),
    ],
)
def test_search_space_rules(space, expected):
    assert any(line.startswith(expected) for line in errors_of(base(search_space=space))), errors_of(base(search_space=space))


def test_search_space_accepts_what_upstream_accepts():
    space = SmartSearchConfig.from_mapping(base(search_space={
        "backend": "sglang", "router_mode": "round_robin",  # a scalar pins a list knob
        "deployment_mode": ["disagg"], "parallel_configs": [{"prefill": {"tp": 2}, "decode": {"tp": 4, "replicas": 2}}],
        "agg_max_num_seqs": [100, 3000],  # superset: any positive integer
        "prefill_max_num_batched_tokens": [10000],  # no multiple of the block size needed without trtllm
        "decode_enable_prefix_caching": True, "no_admission_control": True,
        "active_prefill_tokens_threshold": 4096,  # round_robin only: accepted, not deployed
    })).search_space
    assert space.backend == ["sglang"] and space.router_mode == ["round_robin"]
    assert space.parallel_configs == [{"prefill": {"tp": 2}, "decode": {"tp": 4, "replicas": 2}}]


def test_admission_fields_under_round_robin_only_are_accepted_and_said_to_have_no_effect(config_warnings):
    """Replay scores round_robin without admission control either way, and round_robin deploys none."""
    SmartSearchConfig.from_mapping(base(search_space={"router_mode": ["round_robin"], "no_admission_control": True,
                                                      "active_decode_blocks_threshold": 0.5}))
    assert "active_decode_blocks_threshold, no_admission_control: has no effect under round_robin and is not deployed" in config_warnings.messages


def test_a_config_is_frozen():
    config = SmartSearchConfig.from_mapping(base())
    with pytest.raises(ValidationError):
        config.search_space.gpu_budget = 3  # type: ignore[misc]


# -- workload rules ----------------------------------------------------------------------------

@pytest.mark.parametrize(
    "workload, goal, expected",
    [
        ({"isl": 1, "osl": 1, "num_request_ratio": 1}, None, "workload: set exactly one of trace_path, request_rate, concurrency, kv_load_ratio (got: none)"),
        ({**CLOSED_LOOP, "request_rate": 2.0}, None, "workload: set exactly one of trace_path, request_rate, concurrency, kv_load_ratio (got: request_rate, concurrency)"),
        ({"osl": 1, "concurrency": 4, "num_request_ratio": 1}, None, "workload: isl is required for a synthetic workload"),
        ({"isl": 1, "osl": 1, "concurrency": 4}, None, "workload: num_request_ratio is required for a synthetic workload"),
        ({**CLOSED_LOOP, "replay_concurrency": 3}, None, "workload: replay_concurrency applies only to a trace workload (set trace_path)"),
        ({**CLOSED_LOOP, "arrival_speedup_ratio": 2.0}, None, "workload: arrival_speedup_ratio applies only to a trace workload (set trace_path)"),
        ({**CLOSED_LOOP, "concurrency": 0}, None, "workload.concurrency: 0 must be a positive integer, or a list of them under a pareto goal"),
        ({**CLOSED_LOOP, "concurrency": 2.5}, None, "workload.concurrency: 2.5 must be a positive integer, or a list of them under a pareto goal"),
        ({**CLOSED_LOOP, "concurrency": [8, 16]}, None, "workload.concurrency: a list of levels is only allowed under goal.target pareto; give one value"),
        ({"isl": 1, "osl": 1, "request_rate": 0, "num_request_ratio": 1}, None, "workload.request_rate: 0: input should be greater than 0"),
        ({"isl": 1, "osl": 1, "request_rate": float("inf"), "num_request_ratio": 1}, None, "workload.request_rate: inf: input should be a finite number"),
        ({"isl": 0, "osl": 1, "concurrency": 1, "num_request_ratio": 1}, None, "workload.isl: 0: input should be greater than 0"),
        ({"isl": 1, "osl": 1, "concurrency": 1, "num_request_ratio": 0}, None, "workload.num_request_ratio: 0: input should be greater than 0"),
        ({"isl": 1, "osl": 1, "kv_load_ratio": -0.5, "num_request_ratio": 1}, None, "workload.kv_load_ratio: -0.5 must be a number ≥ 0, or [min, max] under a pareto goal"),
        ({"isl": 1, "osl": 1, "kv_load_ratio": float("inf"), "num_request_ratio": 1}, None, "workload.kv_load_ratio: inf must be a number ≥ 0, or [min, max] under a pareto goal"),
        ({"isl": 1, "osl": 1, "kv_load_ratio": "high", "num_request_ratio": 1}, None, "workload.kv_load_ratio: 'high' must be a number ≥ 0, or [min, max] under a pareto goal"),
        ({"isl": 1, "osl": 1, "kv_load_ratio": [0.1, 0.5], "num_request_ratio": 1}, None, "workload.kv_load_ratio: a [min, max] range is only allowed under goal.target pareto; give one value"),
        ({"isl": 1, "osl": 1, "kv_load_ratio": [0.8, 0.2], "num_request_ratio": 1}, {"target": "pareto"}, "workload.kv_load_ratio: range [0.8, 0.2] must be [min, max] with min < max"),
        ({"isl": 1, "osl": 1, "kv_load_ratio": [0.0, float("inf")], "num_request_ratio": 1}, {"target": "pareto"}, "workload.kv_load_ratio: [0.0, inf] must be a number ≥ 0, or [min, max] under a pareto goal"),
        ({"isl": 1, "osl": 1, "kv_load_ratio": [0.1, 0.2, 0.3], "num_request_ratio": 1}, {"target": "pareto"}, "workload.kv_load_ratio: [0.1, 0.2, 0.3] must be a number ≥ 0, or [min, max] under a pareto goal"),
        ({"trace_path": "no/such/trace.jsonl"}, None, "workload.trace_path: trace file not found: no/such/trace.jsonl"),
        ({**CLOSED_LOOP, "trace_format": "sharegpt"}, None, "workload.trace_format: 'sharegpt' is not one of mooncake"),
        ({**CLOSED_LOOP, "shared_prefix_ratio": 1.5}, None, "workload.shared_prefix_ratio: 1.5: input should be less than or equal to 1"),
    ],
)
def test_workload_rules(workload, goal, expected):
    lines = errors_of(with_workload(workload, **({"goal": goal} if goal else {})))
    assert any(line.startswith(expected) for line in lines), lines


@pytest.mark.parametrize("field, value", [("isl", 100), ("osl", 10), ("num_request_ratio", 10), ("turns_per_session", 2), ("concurrency", 4)])
def test_a_trace_refuses_synthetic_fields(trace, field, value):
    lines = errors_of(with_workload({"trace_path": "t.jsonl", field: value}))
    if field == "concurrency":
        assert lines == ["workload: set exactly one of trace_path, request_rate, concurrency, kv_load_ratio (got: trace_path, concurrency)"]
    else:
        assert lines == [f"workload: {field} is a synthetic-workload field and cannot be used with trace_path"]


def test_a_trace_workload_open_or_closed_loop(trace):
    config = SmartSearchConfig.from_mapping(with_workload({"trace_path": "t.jsonl", "arrival_speedup_ratio": 2.0}))
    workload = config.workload
    assert workload.trace_path == str(trace.resolve())  # relative to where the user ran
    assert workload.is_trace_based and not workload.is_synthetic
    assert workload.effective_in_flight_cap() is None and workload.resolved_request_count() is None
    closed = Workload(trace_path="t.jsonl", replay_concurrency=12)
    assert closed.effective_in_flight_cap() == 12


def test_kv_load_ratio_zero_and_a_range_under_pareto():
    config = SmartSearchConfig.from_mapping(with_workload({"isl": 1024, "osl": 1024, "kv_load_ratio": [0.0, 1.0], "num_request_ratio": 10},
                                                          goal={"target": "pareto"}))
    assert config.workload.kv_load_ratio_range == (0.0, 1.0)
    single = SmartSearchConfig.from_mapping(with_workload({"isl": 1, "osl": 1, "kv_load_ratio": 0.0, "num_request_ratio": 1}))
    assert single.workload.kv_load_ratio == 0.0 and single.workload.kv_load_ratio_range is None


def test_a_synthetic_pareto_workload_without_a_load_sweeps_kv_load_ratio_0_to_1():
    config = SmartSearchConfig.from_mapping(with_workload({"isl": 1024, "osl": 1024, "num_request_ratio": 10}, goal={"target": "pareto"}))
    assert config.workload.kind == "kv_load_ratio" and config.workload.kv_load_ratio_range == (0.0, 1.0)
    # without a pareto goal the same workload names the missing load
    assert errors_of(with_workload({"isl": 1024, "osl": 1024, "num_request_ratio": 10}))[0].startswith("workload: set exactly one of")


def test_request_count_is_the_ratio_times_the_load():
    closed = Workload(isl=10, osl=10, concurrency=32, num_request_ratio=2.5)
    assert closed.resolved_request_count() == 80 and closed.effective_in_flight_cap() == 32
    assert closed.resolved_request_count(concurrency_override=3) == 8 and closed.effective_in_flight_cap(concurrency_override=3) == 3
    assert Workload(isl=10, osl=10, request_rate=4.0, num_request_ratio=10).resolved_request_count() == 40
    assert Workload(isl=10, osl=10, request_rate=0.01, num_request_ratio=10).resolved_request_count() == 1  # at least one
    kv = Workload(isl=10, osl=10, kv_load_ratio=0.5, num_request_ratio=3)
    assert kv.resolved_request_count() is None and kv.resolved_request_count(concurrency_override=7) == 21
    assert Workload(isl=10, osl=10, request_rate=1.0, num_request_ratio=1).effective_in_flight_cap() is None


# -- goal rules --------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "goal, expected",
    [
        ({"target": "goodput"}, "goal: target goodput needs sla.e2e_ms, or both sla.ttft_ms and sla.itl_ms"),
        ({"target": "goodput", "sla": None}, "goal: target goodput needs sla.e2e_ms, or both sla.ttft_ms and sla.itl_ms"),
        ({"target": "goodput_per_gpu", "sla": {"ttft_ms": 500}}, "goal: target goodput_per_gpu needs sla.e2e_ms, or both sla.ttft_ms and sla.itl_ms"),
        ({"target": "speed"}, "goal.target: 'speed' is not one of throughput, throughput_per_gpu, throughput_per_user, e2e_latency, ttft, goodput, goodput_per_gpu, min_gpus, cost_per_mtok, energy_per_mtok, min_cost, pareto"),
        ({"sla": {"itl_ms": 0}}, "goal.sla.itl_ms: 0: input should be greater than 0"),
        ({"sla": {"ttft_ms": float("inf")}}, "goal.sla.ttft_ms: inf: input should be a finite number"),
        ({"sla": {"p99_ms": 5}}, "goal.sla.p99_ms: unknown field; allowed: e2e_ms, itl_ms, ttft_ms"),
        ({"target": "pareto", "pareto_objectives": ["throughput"]}, "goal.pareto_objectives: needs at least 2 entries, got 1"),
        ({"target": "pareto", "pareto_objectives": ["throughput", "throughput"]}, "goal.pareto_objectives: 'throughput' is listed twice"),
        ({"target": "min_gpus"}, "goal: target min_gpus needs an sla with at least one of ttft_ms, itl_ms, e2e_ms"),
        ({"target": "throughput", "min_goodput_rps": 3}, "goal: min_goodput_rps is only allowed with target min_gpus or min_cost (target is throughput)"),
        ({"target": "throughput", "strict_sla": True}, "goal: strict_sla needs an sla with at least one of ttft_ms, itl_ms, e2e_ms"),
        ({"target": "min_gpus", "sla": {"ttft_ms": 500}, "sla_aggregate": "p42"}, "goal.sla_aggregate: 'p42' is not one of mean, median, p75, p90, p95, p99"),
        ({"target": "pareto", "pareto_objectives": ["min_gpus", "ttft"]}, "goal.pareto_objectives: min_gpus is not a pareto objective (it is defined under the SLA)"),
        ({"target": "pareto", "pareto_objectives": ["throughput", "pareto"]}, "goal.pareto_objectives: pareto is not an objective; choose from throughput, throughput_per_gpu, throughput_per_user, e2e_latency, ttft, goodput, goodput_per_gpu"),
        ({"target": "pareto", "pareto_objectives": ["throughput", "fast"]}, "goal.pareto_objectives[1]: 'fast' is not one of throughput,"),
        ({"target": "throughput", "pareto_objectives": ["throughput", "e2e_latency"]}, "goal: pareto_objectives is only allowed when target is pareto (target is throughput)"),
        ({"target": "pareto", "pareto_objectives": ["goodput", "e2e_latency"]}, "goal: pareto objective goodput needs sla.e2e_ms, or both sla.ttft_ms and sla.itl_ms"),
    ],
)
def test_goal_rules(goal, expected):
    lines = errors_of(base(goal=goal))
    assert any(line.startswith(expected) for line in lines), lines


def test_goals_upstream_accepts():
    e2e_only = SmartSearchConfig.from_mapping(base(goal={"target": "goodput", "sla": {"e2e_ms": 9000}})).goal
    assert e2e_only.sla == SLATarget(e2e_ms=9000.0)
    pareto = SmartSearchConfig.from_mapping(base(goal={"target": "pareto", "sla": {"ttft_ms": 500, "itl_ms": 20},
                                                       "pareto_objectives": ["goodput_per_gpu", "e2e_latency"]})).goal
    assert pareto.is_pareto and pareto.resolved_pareto_objectives == ["goodput_per_gpu", "e2e_latency"]
    assert pareto.objectives == ["goodput_per_gpu", "e2e_latency"]


# -- sweep rules -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "sweep, expected",
    [
        ({"algorithm": "bayes"}, "sweep.algorithm: 'bayes' is not one of vizier, grid"),
        ({"max_rounds": 0}, "sweep.max_rounds: 0: input should be greater than 0"),
        ({"parallel_evals": 0}, "sweep.parallel_evals: 0: input should be greater than 0"),
        ({"candidates_per_round": 0}, "sweep.candidates_per_round: 0: input should be greater than 0"),
        ({"max_eval_seconds": 0}, "sweep.max_eval_seconds: 0: input should be greater than 0"),
        ({"random_seed": "one"}, "sweep.random_seed: 'one': input should be a valid integer"),
        ({"seed": 3, "random_seed": 4}, "sweep: seed is the earlier name of random_seed; give only random_seed"),
        ({"max_evals": 3}, "sweep.max_evals: unknown field; allowed: algorithm, candidates_per_round, designer, max_eval_seconds,"),
    ],
)
def test_sweep_rules(sweep, expected):
    lines = errors_of(base(sweep=sweep))
    assert any(line.startswith(expected) for line in lines), lines


def test_sweep_published_names_and_the_earlier_aliases(config_warnings):
    published = SmartSearchConfig.from_mapping(base(sweep={"random_seed": 1, "max_eval_seconds": 600})).sweep
    assert (published.random_seed, published.max_eval_seconds) == (1, 600.0)
    earlier = SmartSearchConfig.from_mapping(base(sweep={"seed": 5, "candidate_timeout_s": 30})).sweep
    assert (earlier.random_seed, earlier.max_eval_seconds) == (5, 30.0)
    assert "sweep.seed is deprecated: call it sweep.random_seed" in config_warnings.text
    assert "sweep.candidate_timeout_s is deprecated: call it sweep.max_eval_seconds" in config_warnings.text
    assert SweepConfig(random_seed=-1).seed == 2**32 - 1  # any int is a seed; designers get it as 32 bits


# -- the Python API (README, "Coming from upstream Spica") --------------------------------------

def test_optimization_target_directions_and_planner_targets():
    assert [target.value for target in OptimizationTarget] == [
        "throughput", "throughput_per_gpu", "throughput_per_user", "e2e_latency", "ttft", "goodput", "goodput_per_gpu", "min_gpus", "cost_per_mtok",
        "energy_per_mtok", "min_cost", "pareto"]
    assert [target.maximize for target in OptimizationTarget if target is not OptimizationTarget.pareto] == [
        True, True, True, False, False, True, True, False, False, False, False]
    with pytest.raises(ValueError, match="no scalar direction"):
        OptimizationTarget.pareto.maximize
    assert {target.value: target.planner_optimization_target for target in OptimizationTarget} == {
        "throughput": "throughput", "throughput_per_gpu": "throughput", "throughput_per_user": "throughput",
        "e2e_latency": "latency", "ttft": "latency", "goodput": "sla", "goodput_per_gpu": "sla", "min_gpus": "sla",
        "cost_per_mtok": "throughput", "energy_per_mtok": "throughput", "min_cost": "sla", "pareto": "throughput"}
    assert OptimizationTarget("goodput") == "goodput" and f"{OptimizationTarget.goodput}" == "goodput"


def test_upstream_names_import_from_spica_and_spica_config():
    assert spica.SmartSearchConfig is SmartSearchConfig and spica.OptimizationTarget is OptimizationTarget
    assert callable(spica.run_smart_search)
    goal = OptimizationGoal(target="pareto")
    assert isinstance(goal.target, OptimizationTarget) and goal.is_pareto
    assert SearchSpace(model_name="m", hardware_sku="h").gpu_budget == 32
    candidate = Candidate("k", "agg", 0, "feasible", {"deployment_mode": "agg", "used_gpus": 4}, score=1.0,
                          metrics={"a": 1.0}, objectives={"throughput": 1.0})
    assert candidate.config["deployment_mode"] == "agg" and candidate.used_gpus == 4


@pytest.mark.parametrize(
    "model, values",
    [
        (SearchSpace, {"model_name": "m", "hardware_sku": "h", "gpu_budget": 0}),
        (Workload, {"isl": 1, "osl": 1, "concurrency": 1}),
        (OptimizationGoal, {"target": "goodput"}),
        (SLATarget, {"ttft_ms": -1}),
        (SweepConfig, {"max_rounds": 0}),
    ],
)
def test_constructing_a_model_with_bad_values_raises_pydantics_validation_error(model, values):
    with pytest.raises(ValidationError) as info:
        model(**values)
    assert isinstance(info.value, ValueError)


def test_from_yaml_reads_an_upstream_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "search_space:\n  model_name: Qwen/Qwen3-32B\n  hardware_sku: h200_sxm\n  min_gpu_budget: null\n"
        "workload:\n  isl: 1024\n  osl: 128\n  concurrency: 8\n  num_request_ratio: 10\n"
        "goal:\n  target: throughput_per_gpu\n  sla: null\nsweep:\n  random_seed: 1\n  max_eval_seconds: 600\n"
    )
    config = SmartSearchConfig.from_yaml(path)
    assert config.goal.target is OptimizationTarget.throughput_per_gpu and config.sweep.random_seed == 1
