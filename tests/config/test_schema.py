"""Every validation rule of SPEC §2.5 with at least one bad config, message checked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spica.config import ConfigError, SmartSearchConfig
from spica.config import presets

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = Path(os.environ.get("SPICA_SHARED_DIR", REPO.parent / "shared")) / "scenarios"


def base(**blocks):
    data = {
        "search_space": {"model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm"},
        "workload": {"isl": 1024, "osl": 128, "concurrency": 32},
    }
    for block, fields in blocks.items():
        data.setdefault(block, {}).update(fields)
    return data


def errors_of(data) -> list[str]:
    with pytest.raises(ConfigError) as info:
        SmartSearchConfig.from_mapping(data)
    return info.value.lines


@pytest.mark.parametrize("name", ["s1_dense_budget8", "s2_trace_goodput", "s3_moe_pareto"])
def test_shared_scenarios_load(name, monkeypatch):
    monkeypatch.chdir(REPO)
    config = SmartSearchConfig.from_yaml(SCENARIOS / f"{name}.yaml")
    assert config.search_space.hardware_sku == "h200_sxm"


def test_defaults_match_spec():
    config = SmartSearchConfig.from_mapping(base())
    space = config.search_space
    assert space.deployment_mode == ["agg", "disagg"]
    assert space.backend == ["vllm"]
    assert space.gpu_budget == 32
    assert space.agg_max_num_seqs == [256, 512, 1024]
    assert space.prefill_max_num_seqs == [1, 2, 4, 8]
    assert space.decode_max_num_batched_tokens == [8192]
    assert space.prefill_load_scale == [0.0, 0.25, 0.5, 1.0, 2.0, 4.0]
    assert config.sweep.max_rounds == 20 and config.sweep.parallel_evals == 16
    assert config.sweep.per_round == 16
    assert config.goal.target == "throughput"
    assert config.goal.pareto_objectives == ["throughput_per_gpu", "throughput_per_user"]


def test_frozen_and_unknown_keys():
    config = SmartSearchConfig.from_mapping(base())
    with pytest.raises(Exception):
        config.search_space.gpu_budget = 3  # type: ignore[misc]
    lines = errors_of(base(search_space={"gpu_budgett": 8}))
    assert lines[0].startswith("search_space.gpu_budgett: unknown field; allowed: agg_block_size,")


@pytest.mark.parametrize(
    "blocks, expected",
    [
        ({"search_space": {"router_mode": ["random"]}}, "search_space.router_mode[0]: 'random' is not one of kv_router, round_robin"),
        ({"search_space": {"backend": ["vllm", "tensorrt"]}}, "search_space.backend[1]: 'tensorrt' is not one of vllm, sglang, trtllm"),
        ({"search_space": {"deployment_mode": ["both"]}}, "search_space.deployment_mode[0]: 'both' is not one of agg, disagg"),
        ({"search_space": {"backend": ["vllm", "vllm"]}}, "search_space.backend: 'vllm' is listed twice"),
        ({"search_space": {"agg_max_num_seqs": []}}, "search_space.agg_max_num_seqs: needs at least 1 entries, got 0"),
        ({"search_space": {"gpu_budget": 4, "min_gpu_budget": 8}}, "search_space: min_gpu_budget (8) must be <= gpu_budget (4)"),
        ({"search_space": {"gpu_budget": 0}}, "search_space.gpu_budget: 0: input should be greater than 0"),
        ({"search_space": {"num_g2_blocks": 100}}, "search_space: kv_bytes_per_token is required when host offload is on (num_g2_blocks > 0)"),
        ({"search_space": {"decode_enable_prefix_caching": True}}, "search_space.decode_enable_prefix_caching: decode workers never cache prefixes; only false is allowed"),
        ({"search_space": {"parallel_configs": [{"tp": 2}]}}, "search_space: a pinned parallel_configs entry needs deployment_mode to hold exactly one mode, got agg, disagg"),
        ({"search_space": {"deployment_mode": ["agg"], "parallel_configs": [{"prefill": {"tp": 1}, "decode": {"tp": 2}}]}}, "search_space: parallel_configs[0] is a disagg config but deployment_mode is agg"),
        ({"search_space": {"deployment_mode": ["agg"], "parallel_configs": [{"tp": 2, "used_gpus": 2}]}}, "search_space.parallel_configs[0]: used_gpus is derived and cannot be set"),
        ({"search_space": {"deployment_mode": ["agg"], "parallel_configs": [{"tp": 2, "dp": 2}]}}, "search_space.parallel_configs[0]: unknown key 'dp'; allowed: tp, pp, attention_dp, moe_tp, moe_ep, replicas"),
        ({"search_space": {"deployment_mode": ["agg"], "parallel_configs": [{"tp": 0}]}}, "search_space.parallel_configs[0]: tp: 0 must be a positive integer"),
        ({"search_space": {"deployment_mode": ["disagg"], "parallel_configs": [{"prefill": {"tp": 1}}]}}, "search_space.parallel_configs[0]: a disagg entry needs both prefill and decode; decode is missing"),
        ({"goal": {"target": "goodput"}}, "goal: target goodput needs sla.e2e_ms, or both sla.ttft_ms and sla.itl_ms"),
        ({"goal": {"target": "goodput_per_gpu", "sla": {"ttft_ms": 500}}}, "goal: target goodput_per_gpu needs sla.e2e_ms, or both sla.ttft_ms and sla.itl_ms"),
        ({"goal": {"target": "speed"}}, "goal.target: 'speed' is not one of throughput, throughput_per_gpu, throughput_per_user, e2e_latency, goodput, goodput_per_gpu, pareto"),
        ({"goal": {"sla": {"itl_ms": 0}}}, "goal.sla.itl_ms: 0: input should be greater than 0"),
        ({"goal": {"target": "pareto", "pareto_objectives": ["throughput"]}}, "goal.pareto_objectives: needs at least 2 entries, got 1"),
        ({"goal": {"target": "pareto", "pareto_objectives": ["throughput", "throughput"]}}, "goal.pareto_objectives: 'throughput' is listed twice"),
        ({"goal": {"target": "pareto", "pareto_objectives": ["throughput", "pareto"]}}, "goal.pareto_objectives[1]: 'pareto' is not one of throughput, throughput_per_gpu, throughput_per_user, e2e_latency, goodput, goodput_per_gpu"),
        ({"sweep": {"algorithm": "bayes"}}, "sweep.algorithm: 'bayes' is not one of vizier, grid"),
        ({"sweep": {"max_rounds": 0}}, "sweep.max_rounds: 0: input should be greater than 0"),
    ],
)
def test_rules_name_the_field_and_the_allowed_values(blocks, expected):
    assert expected in errors_of(base(**blocks))


@pytest.mark.parametrize(
    "workload, expected",
    [
        ({"isl": 1, "osl": 1}, "workload: set exactly one of trace_path, request_rate, concurrency, kv_load_ratio (got: none)"),
        ({"isl": 1, "osl": 1, "concurrency": 4, "request_rate": 2.0}, "workload: set exactly one of trace_path, request_rate, concurrency, kv_load_ratio (got: request_rate, concurrency)"),
        ({"osl": 1, "concurrency": 4}, "workload: isl is required for a synthetic workload"),
        ({"isl": 1, "osl": 1, "concurrency": 4, "replay_concurrency": 3}, "workload: replay_concurrency applies only to a trace workload (set trace_path)"),
        ({"isl": 1, "osl": 1, "kv_load_ratio": [0.8, 0.2]}, "workload: kv_load_ratio range [0.8, 0.2] must be [min, max] with min < max"),
        ({"trace_path": "no/such/trace.jsonl"}, "workload.trace_path: trace file not found: no/such/trace.jsonl"),
    ],
)
def test_workload_shape_rules(workload, expected):
    lines = errors_of({"search_space": {"model_name": "m", "hardware_sku": "h"}, "workload": workload})
    assert any(line.startswith(expected) for line in lines), lines


def test_trace_rejects_synthetic_fields(tmp_path, monkeypatch):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [0]}\n')
    monkeypatch.chdir(tmp_path)
    lines = errors_of({"search_space": {"model_name": "m", "hardware_sku": "h"}, "workload": {"trace_path": "t.jsonl", "isl": 100}})
    assert lines == ["workload: isl is a synthetic-workload field and cannot be used with trace_path"]
    ok = SmartSearchConfig.from_mapping({"search_space": {"model_name": "m", "hardware_sku": "h"}, "workload": {"trace_path": "t.jsonl"}})
    assert ok.workload.trace_path == str(trace.resolve())  # relative to where the user ran


def test_list_workload_dimensions_need_pareto():
    assert errors_of(base(workload={"concurrency": [8, 16]})) == [
        "workload.concurrency: a list of levels is only allowed under goal.target pareto; give one value"
    ]
    lines = errors_of({**base(), "workload": {"isl": 1, "osl": 1, "kv_load_ratio": [0.1, 0.5]}})
    assert lines == ["workload.kv_load_ratio: a [min, max] range is only allowed under goal.target pareto; give one value"]
    SmartSearchConfig.from_mapping({**base(goal={"target": "pareto"}), "workload": {"isl": 1, "osl": 1, "kv_load_ratio": [0.1, 0.5]}})


def test_scalar_pins_a_list_knob():
    config = SmartSearchConfig.from_mapping(base(search_space={"backend": "sglang", "router_mode": "round_robin"}))
    assert config.search_space.backend == ["sglang"]
    assert config.search_space.router_mode == ["round_robin"]
