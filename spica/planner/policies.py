"""docs/config.md (goal) and docs/search.md step 2: which planner scaling policies a goal can use.

Throughput scaling sizes pools to meet TTFT/ITL targets, so it only means something under
the Planner's "sla" optimization target, and that target needs both a TTFT and an ITL bound:
Dynamo's SLA planner cannot aim at an end-to-end latency. Policies a goal cannot use are
dropped before the search so no trial is spent on a configuration the Planner would ignore.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from spica.config.goal import OptimizationTarget
from spica.core.goals import PlannerTarget

log = logging.getLogger(__name__)

Policy = tuple[str, Mapping[str, Any]]


def optimization_target(goal_target: str) -> PlannerTarget:
    """The Planner's optimization target for a goal (the mapping lives on OptimizationTarget)."""
    try:
        return OptimizationTarget(goal_target).planner_optimization_target
    except ValueError:
        raise ValueError(f"goal.target: {goal_target!r} is not one of {', '.join(OptimizationTarget)}") from None


def is_static(fields: Mapping[str, Any]) -> bool:
    """A policy with both scalings off: the deployment keeps its initial worker counts."""
    return not fields.get("enable_throughput_scaling", False) and not fields.get("enable_load_scaling", False)


@dataclass(frozen=True)
class FilterResult:
    """Policies kept (in input order) and the dropped ones as (name, reason)."""

    kept: tuple[Policy, ...]
    dropped: tuple[tuple[str, str], ...]


def _drop_reason(
    fields: Mapping[str, Any], target: PlannerTarget, goal_target: str, has_ttft_itl: bool
) -> str | None:
    if is_static(fields):
        return None
    if target != "sla":
        if fields.get("enable_throughput_scaling", False):
            return f"throughput scaling needs a goodput goal (planner target 'sla'); goal {goal_target} maps to '{target}'"
        return None
    if not has_ttft_itl:
        return "the planner's 'sla' target needs sla.ttft_ms and sla.itl_ms; the goal has an e2e-only SLA, so only static policies run"
    return None


def _grouped(dropped: Sequence[tuple[str, str]]) -> str:
    by_reason: dict[str, list[str]] = {}
    for name, reason in dropped:
        by_reason.setdefault(reason, []).append(name)
    return "; ".join(f"{', '.join(names)} ({reason})" for reason, names in by_reason.items())


def filter_scaling_policies(
    policies: Sequence[Policy],
    target: str,
    sla_ttft_ms: float | None,
    sla_itl_ms: float | None,
    sla_e2e_ms: float | None,
) -> FilterResult:
    """Keep the policies goal `target` can use (docs/search.md step 2); log what was dropped.

    `target` is the goal's target (e.g. "goodput"). Raises ValueError (one line, naming every
    dropped policy and why) when nothing is left. `sla_e2e_ms` only matters through its
    absence of ttft/itl: an e2e bound alone cannot steer the Planner.
    """
    planner_target = optimization_target(target)
    has_ttft_itl = sla_ttft_ms is not None and sla_itl_ms is not None
    kept: list[Policy] = []
    dropped: list[tuple[str, str]] = []
    for name, fields in policies:
        reason = _drop_reason(fields, planner_target, target, has_ttft_itl)
        if reason is None:
            kept.append((name, fields))
        else:
            dropped.append((name, reason))
    if not kept:
        summary = _grouped(dropped) or "nothing (no policy given)"
        raise ValueError(
            f"no planner scaling policy is usable with goal {target} (sla ttft_ms={sla_ttft_ms}, itl_ms={sla_itl_ms}, "
            f"e2e_ms={sla_e2e_ms}); dropped {summary}; add 'disabled' or a policy the goal allows"
        )
    for name, reason in dropped:
        log.warning("planner_scaling_policy %s dropped: %s", name, reason)
    if dropped:
        log.info("planner scaling policies kept for goal %s: %s", target, ", ".join(name for name, _ in kept))
    return FilterResult(tuple(kept), tuple(dropped))
