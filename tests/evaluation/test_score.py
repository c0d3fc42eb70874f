"""Objective values and orderings: a worked example plus properties checked with hypothesis."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spica.core.goals import PerGpu
from spica.core.pareto import dominates
from spica.evaluation.score import (
    per_gpu,
    objective_values,
    pareto_front,
    provisioned_gpus,
    rank,
    signed_score,
)

SUMMARY = {
    "output_throughput_tok_s": 4000.0,
    "duration_ms": 1_800_000.0,  # half an hour
    "gpu_hours": 4.0,  # 8 GPUs on average
    "mean_output_token_throughput_per_user": 55.0,
    "mean_e2e_latency_ms": 9000.0,
}


def test_objectives_from_a_summary():
    assert provisioned_gpus(SUMMARY) == 8.0
    values = objective_values(SUMMARY)
    assert values == {"throughput": 4000.0, "throughput_per_gpu": 500.0, "throughput_per_user": 55.0, "e2e_latency": 9000.0,
                      "min_gpus": 8.0}
    assert objective_values({**SUMMARY, "mean_ttft_ms": 250.0})["ttft"] == 250.0
    with_sla = objective_values({**SUMMARY, "goodput_output_throughput_tok_s": 3000.0})
    assert (with_sla["goodput"], with_sla["goodput_per_gpu"]) == (3000.0, 375.0)


def test_costs_and_energy_credit_the_provisioned_gpus_at_the_candidates_rates():
    """8 GPUs on average at 3.5 per GPU-hour cost 28 per hour; at 700 W they draw 5.6 kW; 4,000 tok/s
    are 14.4 M tokens an hour."""
    values = objective_values(SUMMARY, PerGpu(price=3.5, watts=700.0))
    assert values["min_cost"] == 28.0
    assert values["cost_per_mtok"] == pytest.approx(28.0 / 14.4)
    assert values["energy_per_mtok"] == pytest.approx(5.6 / 14.4)
    assert "cost_per_mtok" not in objective_values({**SUMMARY, "output_throughput_tok_s": 0.0}, PerGpu(price=3.5))
    assert per_gpu(None, [("h100_sxm", 2)]) is None
    assert per_gpu({"h100_sxm": 2.0, "h200_sxm": 4.0}, [("h100_sxm", 2), ("h200_sxm", 6)]) == 3.5


def test_signed_score_negates_minimised_targets_and_names_bad_ones():
    values = objective_values(SUMMARY)
    assert signed_score("throughput_per_gpu", values) == 500.0
    assert signed_score("e2e_latency", values) == -9000.0
    with pytest.raises(ValueError, match="target: 'speed' is not one of throughput, "):
        signed_score("speed", values)
    with pytest.raises(ValueError, match="goodput needs a replay with an SLA"):
        signed_score("goodput", values)


def test_zero_duration_is_an_error_not_a_division_by_zero():
    with pytest.raises(ValueError, match="duration_ms must be positive"):
        provisioned_gpus({**SUMMARY, "duration_ms": 0.0})


scores = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False) | st.sampled_from([0.0, 1.0, math.nan])
candidates = st.lists(st.tuples(scores, st.integers(min_value=1, max_value=64)), max_size=30)


@given(candidates)
def test_rank_is_best_first_with_ties_to_fewer_gpus(items):
    ranked = rank(items, score_of=lambda c: c[0], gpus_of=lambda c: c[1])
    assert sorted(map(repr, ranked)) == sorted(map(repr, items))  # a permutation (repr: NaN != NaN)
    finite = [c for c in ranked if not math.isnan(c[0])]
    assert ranked[: len(finite)] == finite  # NaN scores last
    for better, worse in zip(finite, finite[1:]):
        assert better[0] > worse[0] or (better[0] == worse[0] and better[1] <= worse[1])


points = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6)), max_size=25)


@given(points)
def test_pareto_front_is_exactly_the_non_dominated_set(items):
    front = pareto_front(items, objectives_of=lambda p: p)
    assert len(front) == len([p for p in items if not any(dominates(q, p) for q in items)])
    for member in front:
        assert not any(dominates(other, member) for other in items)
    for item in items:
        assert item in front or any(dominates(member, item) for member in front)
    assert [p[-1] for p in front] == sorted(p[-1] for p in front)


@given(points)
def test_pareto_front_of_a_front_is_itself(items):
    front = pareto_front(items, objectives_of=lambda p: p)
    assert pareto_front(front, objectives_of=lambda p: p) == front


def test_pareto_front_skips_nan_and_keeps_duplicates():
    items = [(1.0, 2.0), (1.0, 2.0), (math.nan, 9.0), (0.5, 1.0), (2.0, 0.0)]
    assert pareto_front(items, objectives_of=lambda p: p) == [(2.0, 0.0), (1.0, 2.0), (1.0, 2.0)]


def test_hypervolume_2d_counts_each_dominated_area_once():
    from spica.evaluation.score import hypervolume_2d

    assert hypervolume_2d([(2.0, 3.0)], (0.0, 0.0)) == 6.0
    assert hypervolume_2d([(2.0, 1.0), (1.0, 2.0), (1.0, 1.0)], (0.0, 0.0)) == 3.0
    assert hypervolume_2d([(-1.0, 5.0)], (0.0, 0.0)) == 0.0


def test_sla_misses_name_each_bound_missed():
    from spica.evaluation.score import sla_misses

    summary = {"mean_ttft_ms": 2345.6, "mean_itl_ms": 40.0, "goodput_request_throughput_rps": 2.5}
    assert sla_misses(summary, {"mean_ttft_ms": 2000.0, "mean_itl_ms": 50.0}) == ["mean_ttft_ms 2,345.6 > 2,000"]
    assert sla_misses(summary, {"mean_itl_ms": 50.0}, min_goodput_rps=3.0) == ["goodput_request_throughput_rps 2.5 < min_goodput_rps 3"]
    assert sla_misses(summary, {"mean_ttft_ms": 3000.0, "mean_itl_ms": 50.0}, min_goodput_rps=2.0) == []
