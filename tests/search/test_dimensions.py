"""Dead dimensions are pruned from the study; irrelevant knobs are absent from candidates."""

from __future__ import annotations

import pytest

from spica.config import SmartSearchConfig, presets
from spica.search.branches import branches_for
from spica.search.dimensions import branch_knobs, knob_params, knob_values
from spica.search.unroll import candidate_key, unroll


def config(space=None, workload=None, goal=None) -> SmartSearchConfig:
    return SmartSearchConfig.from_mapping({
        "search_space": {"model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm", "gpu_budget": 2,
                         "context_length": 4096, "planner_scaling_policy": ["disabled"], **(space or {})},
        "workload": workload or {"isl": 512, "osl": 64, "concurrency": 8, "num_request_ratio": 10},
        "goal": goal or {"target": "throughput"},
    })


def searched(cfg, mode="agg") -> list[str]:
    return [param.name for param in knob_params(branch_knobs(cfg, mode))]


def test_round_robin_pinned_has_no_kv_router_dimensions():
    assert searched(config({"router_mode": ["round_robin"]})) == ["agg_max_num_batched_tokens", "agg_max_num_seqs"]


def test_kv_router_possible_adds_its_weights_but_not_offload_weights():
    names = searched(config({"router_mode": ["kv_router", "round_robin"]}))
    assert {"router_mode", "overlap_score_credit", "prefill_load_scale", "router_temperature"} <= set(names)
    assert "host_cache_hit_weight" not in names


def test_offload_adds_host_and_disk_weights():
    names = searched(config({"router_mode": ["kv_router"], "num_g2_blocks": 1000, "kv_bytes_per_token": 262144}))
    assert {"host_cache_hit_weight", "disk_cache_hit_weight"} <= set(names)


def test_planner_dimensions_follow_the_kept_policies():
    assert not {"planner_fpm_sampling", "planner_load_sensitivity"} & set(
        searched(config({"planner_fpm_sampling": ["small", "large"], "planner_load_sensitivity": ["aggressive", "default"]}))
    )
    load = config({"planner_scaling_policy": ["disabled", "load_180_5"], "planner_fpm_sampling": ["small", "large"],
                   "planner_load_sensitivity": ["aggressive", "default"]})
    assert {"planner_scaling_policy", "planner_fpm_sampling", "planner_load_sensitivity"} <= set(searched(load))
    # any scaling policy runs a Planner, which reads both its sampling and its sensitivity (upstream)
    throughput = config({"planner_scaling_policy": ["throughput_180_5"], "planner_load_sensitivity": ["aggressive", "default"]},
                        goal={"target": "goodput", "sla": {"ttft_ms": 500, "itl_ms": 30}})
    assert "planner_load_sensitivity" in searched(throughput)


def test_the_upstream_defaults_search_every_planner_preset_only_when_the_goal_can_use_them():
    from spica.plan import with_usable_policies

    cfg = with_usable_policies(config({"planner_scaling_policy": list(presets.PLANNER_SCALING_POLICIES)}))
    assert [name for name, _ in cfg.search_space.scaling_policies()] == ["disabled", "load_180_5", "load_180_10"]
    assert {"planner_scaling_policy", "planner_fpm_sampling", "planner_load_sensitivity"} <= set(searched(cfg))


def test_disagg_searches_role_knobs_only():
    names = searched(config(), mode="disagg")
    assert "agg_max_num_seqs" not in names and "prefill_max_num_seqs" in names and "decode_max_num_seqs" in names
    assert "decode_max_num_batched_tokens" not in names  # one value: pinned


def test_pareto_concurrency_list_is_a_dimension():
    cfg = config(workload={"isl": 512, "osl": 64, "concurrency": [4, 32], "num_request_ratio": 10}, goal={"target": "pareto"})
    assert "concurrency" in searched(cfg)


@pytest.fixture(scope="module")
def agg_branch():
    cfg = config({"deployment_mode": ["agg"], "router_mode": ["kv_router", "round_robin"]})
    return cfg, branches_for(cfg)[0]


def test_unrolled_round_robin_candidate_has_no_router_weights(agg_branch):
    cfg, branch = agg_branch
    knobs = branch_knobs(cfg, "agg")
    values = knob_values(knobs, {"agg_max_num_batched_tokens": 8192, "agg_max_num_seqs": 256, "router_mode": "round_robin",
                                 "overlap_score_credit": 0.5, "prefill_load_scale": 1.0, "router_temperature": 0.2})
    candidate = unroll(cfg, branch, branch.configs[0], "vllm", values, {})
    assert candidate["router_mode"] == "round_robin" and candidate["deployment_mode"] == "agg"
    assert not {"overlap_score_credit", "prefill_load_scale", "router_temperature", "no_admission_control"} & set(candidate)
    assert candidate["planner_scaling_policy"] == "disabled" and "max_num_fpm_samples" not in candidate
    assert candidate["agg_num_gpu_blocks"] == candidate["agg_kv_capacity_tokens"] // 64
    assert candidate["backend_version"] and candidate["concurrency"] == 8
    # pinned scalars as given (upstream's nulls included)
    assert (candidate["min_gpu_budget"], candidate["min_endpoint"], candidate["aic_nextn"]) == (None, None, None)
    # the weights cannot change a round_robin replay, so they cannot change its identity either
    other = unroll(cfg, branch, branch.configs[0], "vllm", {**values, "overlap_score_credit": 1.0}, {})
    assert candidate_key(other) == candidate_key(candidate)


def test_kv_load_concurrency_is_derived_from_the_candidates_own_capacity():
    cfg = config({"deployment_mode": ["agg"], "router_mode": ["round_robin"]},
                 workload={"isl": 2048, "osl": 511, "kv_load_ratio": 0.5, "num_request_ratio": 10})
    branch = branches_for(cfg)[0]
    parallel = next(c for c in branch.configs if c.pool("agg").replicas == 2)
    knobs = branch_knobs(cfg, "agg")

    def candidate(batched_tokens: int, ratio: float | None = None) -> dict:
        values = knob_values(knobs, {"agg_max_num_batched_tokens": batched_tokens, "agg_max_num_seqs": 256})
        return unroll(cfg, branch, parallel, "vllm", values, {}, ratio)

    small, large = candidate(8192), candidate(32768)
    # a smaller batch leaves more memory for KV: each candidate carries its own capacity
    assert small["agg_kv_capacity_tokens"] > large["agg_kv_capacity_tokens"] == parallel.kv_tokens("vllm", "agg")
    assert small["agg_kv_capacity_tokens"] == small["agg_num_gpu_blocks"] * 64
    tokens = small["agg_kv_capacity_tokens"] * 2
    fit = tokens // (2048 + 511 // 2)
    assert small["kv_load_capacity_tokens"] == tokens and small["kv_load_concurrency_capacity"] == fit
    assert small["concurrency"] == max(1, int(0.5 * fit)) and small["kv_load_ratio"] == 0.5
    assert candidate(8192, 0.0)["concurrency"] == 1  # ratio 0: one request in flight


def test_a_pool_that_holds_no_request_is_infeasible_before_any_replay():
    from spica.evaluation.evaluate import evaluate
    from spica.search.unroll import kv_load_fields

    cfg = config({"deployment_mode": ["agg"], "context_length": 65536},
                 workload={"isl": 60000, "osl": 2000, "kv_load_ratio": 0.5, "num_request_ratio": 10})
    unrolled = {"deployment_mode": "agg", "agg_kv_capacity_tokens": 40000, "replicas": 1, "used_gpus": 1}
    unrolled.update(kv_load_fields(cfg, unrolled, 0.5))
    assert (unrolled["kv_load_concurrency_capacity"], unrolled["concurrency"]) == (0, 1)
    outcome = evaluate(cfg, unrolled)
    assert outcome.status == "infeasible"
    assert outcome.reason == "kv_capacity: the pool holds 40000 KV tokens, less than one request (isl + osl // 2 = 61000)"
