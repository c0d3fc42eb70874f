"""A scale-free search studies one config per replica ratio, and only where replicas cannot
change a score: checked on the real enumeration, and the premise on real replays."""

from __future__ import annotations

import math

import pytest

from spica.config import SmartSearchConfig
from spica.evaluation import score
from spica.plan import scale_free
from spica.results.table import SCALE_NOTE, format_results
from spica.search import run_smart_search
from spica.search.branches import branches_for, searched_branch


def config(space=None, workload=None, goal=None, sweep=None) -> SmartSearchConfig:
    return SmartSearchConfig.from_mapping({
        "search_space": {"model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm", "gpu_budget": 8,
                         "context_length": 4096, "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"],
                         "agg_max_num_batched_tokens": [8192], "agg_max_num_seqs": [256], **(space or {})},
        "workload": workload or {"isl": 512, "osl": 32, "kv_load_ratio": [0.1, 0.6], "num_request_ratio": 1},
        "goal": goal or {"target": "pareto"},
        "sweep": sweep or {},
    })


@pytest.mark.parametrize("space, workload, goal, free", [
    ({}, None, None, True),
    ({}, {"isl": 512, "osl": 32, "kv_load_ratio": 0.3, "num_request_ratio": 1}, {"target": "throughput_per_gpu"}, True),
    ({}, {"isl": 512, "osl": 32, "concurrency": 64, "num_request_ratio": 1}, None, False),  # the same load on more replicas
    ({"router_mode": ["kv_router", "round_robin"]}, None, None, False),
    ({"planner_scaling_policy": ["disabled", "throughput_180_5"]}, None, None, False),
    ({}, None, {"target": "pareto", "pareto_objectives": ["throughput", "throughput_per_user"]}, False),  # grows with replicas
])
def test_a_search_is_scale_free_only_where_replicas_cannot_change_a_score(space, workload, goal, free):
    assert scale_free(config(space, workload, goal)) is free


def test_a_scale_free_study_searches_the_fewest_gpu_config_of_every_replica_ratio():
    cfg = config({"deployment_mode": ["agg", "disagg"], "backend": ["vllm", "sglang"]})
    for branch in branches_for(cfg):
        searched = searched_branch(cfg, branch)

        def ratio(parallel):
            common = math.gcd(*(pool.replicas for pool in parallel.pools))
            return tuple((pool.shape, pool.replicas // common) for pool in parallel.pools)

        kept = {ratio(parallel): parallel for parallel in searched.configs}
        assert len(kept) == len(searched.configs) < len(branch.configs)  # one of each, fewer than enumerated
        assert set(kept) == {ratio(parallel) for parallel in branch.configs}  # and every one of them
        for parallel in branch.configs:
            assert kept[ratio(parallel)].used_gpus <= parallel.used_gpus
        if branch.mode == "agg":
            assert {parallel.pools[0].replicas for parallel in searched.configs} == {1}


def test_a_search_that_is_not_scale_free_or_pins_its_menu_studies_every_config():
    fixed = config(workload={"isl": 512, "osl": 32, "concurrency": 64, "num_request_ratio": 1})
    branch = branches_for(fixed)[0]
    assert searched_branch(fixed, branch) is branch
    menu = config({"deployment_mode": ["agg"], "parallel_configs": [{"tp": 2}, {"tp": 2, "replicas": 2}]})
    branch = branches_for(menu)[0]
    assert searched_branch(menu, branch) is branch


@pytest.mark.e2e
def test_twice_the_replicas_at_twice_the_load_score_the_same_and_the_table_says_so(tmp_path):
    """The premise, on real replays: TP2 with one and with two replicas at the same KV-load ratio."""
    menu = config({"gpu_budget": 4, "deployment_mode": ["agg"], "backend": ["vllm"],
                   "parallel_configs": [{"tp": 2}, {"tp": 2, "replicas": 2}]},
                  {"isl": 512, "osl": 32, "kv_load_ratio": 0.3, "num_request_ratio": 2},
                  {"target": "throughput_per_gpu"}, {"algorithm": "grid", "parallel_evals": 1})
    results = run_smart_search(menu, results_dir=tmp_path)
    by_replicas = {candidate.unrolled["replicas"]: candidate for candidate in results.ledger}
    one, two = by_replicas[1], by_replicas[2]
    assert two.unrolled["concurrency"] == pytest.approx(2 * one.unrolled["concurrency"], abs=1)
    values = [score.objective_values(candidate.metrics) for candidate in (one, two)]
    for name in ("throughput_per_gpu", "throughput_per_user", "e2e_latency", "ttft"):
        assert values[1][name] == pytest.approx(values[0][name], rel=0.01), name
    assert values[1]["throughput"] == pytest.approx(2 * values[0]["throughput"], rel=0.01)  # it does grow
    assert SCALE_NOTE in format_results(menu, results, {})
