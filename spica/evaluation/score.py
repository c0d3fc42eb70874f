"""Objective values from a Replay summary, and the orderings built on them (docs/search.md step 6).

Pure functions over the goals of spica/core/goals.py, which say how each value is read. Per-GPU
objectives divide by the *time-averaged provisioned* GPUs, gpu_hours / duration, so a Planner
that scales workers down during the replay is credited for the GPUs it gave back.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from spica.core.goals import GOALS, PerGpu
from spica.core.pareto import dominates

Item = TypeVar("Item")

MINIMIZED = tuple(name for name, goal in GOALS.items() if not goal.maximize)
OBJECTIVES = tuple(GOALS)
MS_PER_HOUR = 3.6e6


def provisioned_gpus(summary: Mapping[str, Any]) -> float:
    """Time-averaged GPUs allocated during the replay: gpu_hours / (duration_ms / 3.6e6)."""
    duration_ms = float(summary["duration_ms"])
    if duration_ms <= 0:
        raise ValueError(f"duration_ms must be positive to average GPUs over it (got {duration_ms})")
    return float(summary["gpu_hours"]) / (duration_ms / MS_PER_HOUR)


def per_gpu(per_system: Mapping[str, float] | None, pools: Iterable[tuple[str, int]]) -> float | None:
    """A per-system rate (price per GPU-hour, watts) for a candidate from its pools' (system, GPUs):
    one system's, or a mixed pair's weighted by each role's GPUs as deployed (None: no rates)."""
    if per_system is None:
        return None
    pools = list(pools)
    return sum(per_system[sku] * gpus for sku, gpus in pools) / sum(gpus for _, gpus in pools)


def objective_values(summary: Mapping[str, Any], rates: PerGpu = PerGpu()) -> dict[str, float]:
    """Every objective the summary supports; goodput ones only when the replay had an SLA, cost
    ones only with a price per GPU-hour, energy only with the GPU's power."""
    gpus = provisioned_gpus(summary)
    values = {name: goal.read(summary, gpus, rates) for name, goal in GOALS.items()}
    return {name: value for name, value in values.items() if value is not None}


def sla_misses(summary: Mapping[str, Any], bounds: Mapping[str, float], min_goodput_rps: float | None = None) -> list[str]:
    """Each SLA bound the replay missed, as "mean_ttft_ms 2,345.6 > 2,000" (empty: it met them)."""
    misses = [
        f"{metric} {float(summary[metric]):,.1f} > {bound:,.6g}"
        for metric, bound in bounds.items()
        if metric in summary and float(summary[metric]) > bound
    ]
    if min_goodput_rps is not None:
        goodput = float(summary.get("goodput_request_throughput_rps", 0.0))
        if goodput < min_goodput_rps:
            misses.append(f"goodput_request_throughput_rps {goodput:,.3g} < min_goodput_rps {min_goodput_rps:,.6g}")
    return misses


def signed_score(target: str, values: Mapping[str, float]) -> float:
    """Higher is better: the objective's value, negated for minimised targets."""
    if target not in OBJECTIVES:
        raise ValueError(f"target: {target!r} is not one of {', '.join(OBJECTIVES)}")
    if target not in values:
        raise ValueError(f"target {target!r} has no value here (goodput needs a replay with an SLA)")
    return -values[target] if target in MINIMIZED else values[target]


def candidate_score(objectives: Sequence[str], pareto: bool, values: Mapping[str, float]) -> float:
    """A candidate's score (docs/search.md step 6): the signed target for a scalar goal; for a Pareto
    goal the raw value of its first objective."""
    return float(values[objectives[0]]) if pareto else signed_score(objectives[0], values)


def rank(items: Iterable[Item], score_of: Callable[[Item], float], gpus_of: Callable[[Item], float]) -> list[Item]:
    """Best first by score; equal scores go to the candidate with fewer GPUs; NaN scores last."""

    def key(item: Item) -> tuple[bool, float, float]:
        score = score_of(item)
        return (math.isnan(score), -score if not math.isnan(score) else 0.0, gpus_of(item))

    return sorted(items, key=key)


def pareto_front(
    items: Iterable[Item], objectives_of: Callable[[Item], Sequence[float]], order_of: Callable[[Item], float] | None = None
) -> list[Item]:
    """The non-dominated items (objectives oriented higher-is-better, e.g. via `signed_score`),
    ascending along `order_of` (default: the last oriented objective). Items with a NaN
    objective are never on the front; items with identical objective vectors are all kept."""
    scored = [(item, tuple(objectives_of(item))) for item in items]
    scored = [(item, point) for item, point in scored if not any(math.isnan(v) for v in point)]
    front = [(item, point) for item, point in scored if not any(dominates(other, point) for _, other in scored)]
    key = (lambda pair: order_of(pair[0])) if order_of is not None else (lambda pair: pair[1][-1])
    return [item for item, _ in sorted(front, key=key)]


def hypervolume_2d(points: Iterable[Sequence[float]], reference: Sequence[float]) -> float:
    """Area dominated by `points` (both objectives higher-is-better) above `reference`."""
    front = sorted((tuple(p) for p in points if p[0] > reference[0] and p[1] > reference[1]), reverse=True)
    volume, best_y = 0.0, reference[1]
    for x, y in front:
        if y > best_y:
            volume += (x - reference[0]) * (y - best_y)
            best_y = y
    return volume
