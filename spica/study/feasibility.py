"""Picks for an objective known before any replay (min_gpus): search for feasibility, not value.

Under min_gpus a candidate's value is its GPUs, fixed by its point (`Objective.ordered_by` names
the study dimension that orders it); only whether its replay meets the SLA is unknown. GP-UCB-PE
models the value and, told an infeasible trial as a low label, reads a surface that falls where
GPUs fall: on the benchmark's min_gpus scenario it answered 12 GPUs for every seed where the grid
finds 10 (5×TP2). This rule models feasibility instead and asks for the cheapest candidate likely
to be feasible:
- feasibility is a GP regression on +1 (met the SLA) / -1 (infeasible, whatever the reason) with a
  prior mean rising linearly from -1 at the cheapest candidate to +1 at the dearest, so with no
  results the first pick halves the GPU range, and each result moves the boundary for every shape
  near it (one kernel over all the study's dimensions);
- a candidate is skipped when it cannot beat the best feasible one, or when a candidate of the same
  shape (every other dimension equal) with at least as many GPUs was infeasible (feasibility is
  monotone in replicas): what is left is a bisection of replicas per shape, ordered by the GP;
- a pick still untold is a label 0 (unknown) for the GP and the floor of its shape, so a batch
  climbs and spreads across shapes rather than guessing the same boundary twice.
Pure NumPy over a handful of points: no fit, no JAX.
"""

from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np

LENGTHSCALE = 0.3  # in the designer's [0, 1] feature scale: one TP step (of 4) correlates ≈ 0.5
NOISE = 0.1  # variance of a ±1 label: shapes disagree near the boundary


def feasible_picks(
    costs: np.ndarray,
    groups: Sequence[Hashable],
    continuous: np.ndarray,
    categorical: np.ndarray,
    outcomes: dict[int, bool | None],
    count: int,
) -> list[int]:
    """Up to `count` candidate rows to measure next, cheapest likely feasible first.

    `costs`: each candidate's objective (lower is better); `groups`: its shape (the candidates
    that differ only in cost); `continuous` / `categorical`: its features for the kernel;
    `outcomes`: the rows already asked, True feasible, False infeasible, None still untold.
    Fewer than `count` once no candidate left can beat the best feasible one.
    """
    costs = np.asarray(costs, dtype=float)
    known = {row: {True: 1.0, False: -1.0, None: 0.0}[ok] for row, ok in outcomes.items()}
    feasible = [costs[row] for row, ok in outcomes.items() if ok]
    incumbent = min(feasible, default=np.inf)
    span = float(costs.max() - costs.min()) or 1.0
    prior = 2.0 * (costs - costs.min()) / span - 1.0
    picks: list[int] = []
    for _ in range(count):
        floors: dict[Hashable, float] = {}  # per shape: the dearest infeasible (or untold) cost
        for row, label in known.items():
            if label <= 0:
                floors[groups[row]] = max(floors.get(groups[row], -np.inf), costs[row])
        eligible = [
            row for row in range(len(costs))
            if row not in known and costs[row] < incumbent and costs[row] > floors.get(groups[row], -np.inf)
        ]
        if not eligible:
            break
        mean = _posterior_mean(continuous, categorical, prior, known)
        likely = [row for row in eligible if mean[row] >= 0.0]
        if likely:
            pick = min(likely, key=lambda row: (costs[row], -mean[row], row))
        else:
            pick = min(eligible, key=lambda row: (-mean[row], costs[row], row))
        picks.append(pick)
        known[pick] = 0.0
    return picks


def _posterior_mean(
    continuous: np.ndarray, categorical: np.ndarray, prior: np.ndarray, known: dict[int, float]
) -> np.ndarray:
    """The GP's feasibility mean at every candidate given the labels in `known`."""
    if not known:
        return prior
    rows = np.array(sorted(known))
    labels = np.array([known[row] for row in rows])
    gram = _kernel(continuous, categorical, rows)
    weights = np.linalg.solve(gram[rows] + NOISE * np.eye(len(rows)), labels - prior[rows])
    return prior + gram @ weights


def _kernel(continuous: np.ndarray, categorical: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Squared-exponential kernel between every candidate and `rows` (a categorical mismatch
    counts as a distance of 1)."""
    squared = ((continuous[:, None, :] - continuous[None, rows, :]) ** 2).sum(axis=2)
    squared = squared + (categorical[:, None, :] != categorical[None, rows, :]).sum(axis=2)
    return np.exp(-squared / (2.0 * LENGTHSCALE**2))
