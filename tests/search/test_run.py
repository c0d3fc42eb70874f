"""The points a branch's study scores: the whole grid where it can be listed, else a seeded
sample of the same grid, so that every point scored is a real config."""

from __future__ import annotations

import math

import pytest

from spica.evaluation.evaluate import evaluate
from spica.search.branches import branches_for, searched_branch
from spica.search.dimensions import branch_knobs, knob_values
from spica.search.run import _grid_points, study_params
from spica.search.unroll import unroll
from spica.space import projection
from tests.search.test_scale_free import config


def _disagg():
    cfg = config({"deployment_mode": ["disagg"], "backend": ["vllm", "sglang"], "prefill_max_num_seqs": [4], "decode_max_num_seqs": [256],
                  "prefill_max_num_batched_tokens": [4096, 8192, 16384]})  # max_num_seqs pinned: no value merged (below)
    branch = branches_for(cfg)[0]
    knobs = branch_knobs(cfg, branch.mode, branch.quant_knobs())
    return cfg, branch, knobs, study_params(cfg, branch, knobs)


def _key(point):
    return tuple(sorted(point.items()))


def test_a_sampled_grid_holds_only_points_of_the_listed_grid_drawn_by_the_seed():
    cfg, branch, knobs, params = _disagg()
    listed = _grid_points(branch, knobs, cfg, params)
    combos = math.prod(len(knob.values) for knob in knobs)
    assert len(listed) == 5 * combos * sum(len(parallel.backends) for parallel in branch.configs)  # 5 load levels
    sample = _grid_points(branch, knobs, cfg, params, (100, 7))
    assert len(sample) == len({_key(point) for point in sample}) == 100
    assert {_key(point) for point in sample} <= {_key(point) for point in listed}
    assert sample == _grid_points(branch, knobs, cfg, params, (100, 7))
    assert sample != _grid_points(branch, knobs, cfg, params, (100, 8))
    assert _grid_points(branch, knobs, cfg, params, (len(listed) + 1, 7)) == listed  # a sample as large as the grid is the grid


def _seqs_menu(seqs, policies=("disabled",)):
    cfg = config({"deployment_mode": ["agg"], "backend": ["vllm"], "agg_max_num_seqs": seqs, "planner_scaling_policy": list(policies)})
    branch = searched_branch(cfg, branches_for(cfg)[0])
    knobs = branch_knobs(cfg, branch.mode, branch.quant_knobs())
    return cfg, branch, knobs, study_params(cfg, branch, knobs)


def _seqs_by_rest(points) -> dict[tuple, list[int]]:
    """The max_num_seqs values the grid holds for each of its points' other values."""
    kept: dict[tuple, list[int]] = {}
    for point in points:
        rest = _key({name: value for name, value in point.items() if name != "agg_max_num_seqs"})
        kept.setdefault(rest, []).append(point["agg_max_num_seqs"])
    return kept


def test_the_pool_keeps_the_smallest_of_the_max_num_seqs_values_no_request_reaches():
    seqs = [4, 16, 64, 256, 1024]
    cfg, branch, knobs, params = _seqs_menu(seqs)
    points = _grid_points(branch, knobs, cfg, params)
    kept = _seqs_by_rest(points)
    merged = 0
    for rest, values in kept.items():
        point = dict(rest)
        parallel = projection.project(branch, "vllm", point)
        any_seqs = knob_values(knobs, {**point, "agg_max_num_seqs": seqs[0]})
        bound = unroll(cfg, branch, parallel, "vllm", any_seqs, {}, point["kv_load_ratio"])["concurrency"]
        reached, unreached = [value for value in seqs if value < bound], [value for value in seqs if value >= bound]
        assert sorted(values) == reached + unreached[:1]
        merged += max(0, len(unreached) - 1)
    assert merged > 0  # the menu's low loads reach none of the larger values
    assert len(points) + merged == len(kept) * len(seqs)


def test_under_a_scaling_planner_every_max_num_seqs_value_stays():
    """A Planner that scales reads max_num_seqs as an engine's capacity: the values replay differently."""
    seqs = [256, 1024]
    cfg, branch, knobs, params = _seqs_menu(seqs, ("disabled", "throughput_180_5"))
    by_policy = {policy: _seqs_by_rest([point for point in _grid_points(branch, knobs, cfg, params)
                                         if point["planner_scaling_policy"] == policy]) for policy in ("disabled", "throughput_180_5")}
    assert all(values == seqs for values in by_policy["throughput_180_5"].values())
    assert any(values == [256] for values in by_policy["disabled"].values())


@pytest.mark.e2e
def test_max_num_seqs_values_at_least_the_concurrency_replay_alike():
    """The premise, on real replays: an engine that can hold every request in flight never holds one back."""
    cfg, branch, knobs, _ = _seqs_menu([256, 1024])
    parallel = branch.configs[0]
    unrolled = [unroll(cfg, branch, parallel, "vllm", knob_values(knobs, {"agg_max_num_seqs": seqs}), {}, 0.1) for seqs in (256, 1024)]
    assert unrolled[0]["concurrency"] <= 256
    first, second = (evaluate(cfg, candidate) for candidate in unrolled)
    assert first.status == second.status == "feasible"
    assert first.metrics == second.metrics


def test_round_robin_points_differing_only_in_the_kv_routers_weights_are_one_point():
    """Under round_robin the KV router's weights are never read: of those points the grid keeps the first."""
    router = {"router_mode": ["kv_router", "round_robin"], "overlap_score_credit": [0.0, 1.0], "prefill_load_scale": [0.5, 2.0],
              "router_temperature": [0.0, 0.5]}
    cfg = config({"deployment_mode": ["agg"], "backend": ["vllm"], **router})
    branch = searched_branch(cfg, branches_for(cfg)[0])
    knobs = branch_knobs(cfg, branch.mode, branch.quant_knobs())
    points = _grid_points(branch, knobs, cfg, study_params(cfg, branch, knobs))
    by_router: dict[str, list[dict]] = {}
    for point in points:
        by_router.setdefault(point["router_mode"], []).append(point)
    rest = {_key({name: value for name, value in point.items() if name != "router_mode"}) for point in by_router["kv_router"]}
    assert len(by_router["kv_router"]) == len(rest) == 8 * len(by_router["round_robin"])  # every weight combination
    assert {(p["overlap_score_credit"], p["prefill_load_scale"], p["router_temperature"]) for p in by_router["round_robin"]} == {(0.0, 0.5, 0.0)}
