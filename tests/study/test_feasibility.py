"""The feasibility rule for an objective known before replay (spica/study/feasibility.py)."""

from __future__ import annotations

import numpy as np

from spica.study.feasibility import feasible_picks


def pool(shapes: dict[int, int], budget: int):
    """Agg candidates: per TP width its replicas up to the budget; costs are GPUs."""
    rows = [(tp, r) for tp in shapes for r in range(1, budget // tp + 1)]
    costs = np.array([tp * r for tp, r in rows], dtype=float)
    continuous = np.array([[(c - 1) / (budget - 1), np.log2(tp) / 3] for (tp, _), c in zip(rows, costs)])
    return rows, costs, [tp for tp, _ in rows], continuous, np.zeros((len(rows), 0), dtype=int)


def test_with_no_results_the_first_pick_halves_the_gpu_range():
    rows, costs, groups, continuous, categorical = pool({1: 0, 2: 0}, 12)
    first = feasible_picks(costs, groups, continuous, categorical, {}, 1)
    assert costs[first[0]] in (6.0, 7.0)


def test_nothing_at_or_above_the_best_feasible_nor_below_an_infeasible_of_the_same_shape():
    rows, costs, groups, continuous, categorical = pool({1: 0, 2: 0}, 12)
    index = {row: i for i, row in enumerate(rows)}
    outcomes = {index[(2, 4)]: True, index[(1, 5)]: False}
    picks = feasible_picks(costs, groups, continuous, categorical, outcomes, 10)
    assert picks and {rows[i] for i in picks} <= {(1, 6), (1, 7), (2, 1), (2, 2), (2, 3)}  # could beat 8 GPUs


def test_a_batch_climbs_past_its_untold_picks():
    rows, costs, groups, continuous, categorical = pool({2: 0}, 12)
    picks = feasible_picks(costs, groups, continuous, categorical, {}, 3)
    assert [costs[i] for i in picks] == [8.0, 10.0, 12.0]


def test_an_infeasible_result_moves_the_boundary_of_the_neighbouring_shape():
    rows, costs, groups, continuous, categorical = pool({1: 0, 2: 0}, 12)
    index = {row: i for i, row in enumerate(rows)}
    before = feasible_picks(costs, groups, continuous, categorical, {index[(1, 6)]: True}, 1)
    after = feasible_picks(costs, groups, continuous, categorical, {index[(1, 6)]: True, index[(1, 3)]: False}, 1)
    assert rows[before[0]][0] == 1 or costs[before[0]] <= costs[after[0]]
    assert costs[after[0]] > 3 and rows[after[0]] != (1, 3)


def test_none_once_nothing_left_can_beat_the_best_feasible():
    rows, costs, groups, continuous, categorical = pool({1: 0}, 4)
    outcomes = {0: False, 1: True}  # 1 GPU misses, 2 GPUs meet the SLA
    assert feasible_picks(costs, groups, continuous, categorical, outcomes, 2) == []
