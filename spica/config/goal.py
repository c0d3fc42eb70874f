"""OptimizationGoal: what 'best' means (a goal of spica/core/goals.py, or a Pareto front) and its SLA."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated, Any, Literal, Mapping

from pydantic import BeforeValidator, Field, field_validator, model_validator

from spica.config.fields import Flag, Frozen, PositiveNumber, unique
from spica.core.goals import GOALS, PARETO, Goal, PlannerTarget

class _Target(StrEnum):
    """What `goal.target` aims at: a goal of spica/core/goals.py, or pareto, which trades several."""

    @property
    def goal(self) -> Goal:
        if self.value == PARETO:
            raise ValueError("pareto has no scalar direction; each of goal.resolved_pareto_objectives has its own")
        return GOALS[self.value]

    @property
    def maximize(self) -> bool:
        return self.goal.maximize

    @property
    def needs_sla(self) -> bool:
        return self.value != PARETO and self.goal.needs_sla != "none"

    @property
    def planner_optimization_target(self) -> PlannerTarget:
        """The Dynamo Planner's target under this goal (a front aims at throughput)."""
        return "throughput" if self.value == PARETO else self.goal.planner_target


OptimizationTarget = _Target(
    "OptimizationTarget", {name: name for name in (*GOALS, PARETO)}, module=__name__, qualname="OptimizationTarget"
)
OBJECTIVES = tuple(name for name, goal in GOALS.items() if goal.pareto_objective)
DEFAULT_PARETO_OBJECTIVES = (OptimizationTarget.throughput_per_gpu, OptimizationTarget.throughput_per_user)


SLA_TARGETS = tuple(name for name, goal in GOALS.items() if goal.sla_constrained)
PRICED = tuple(name for name, goal in GOALS.items() if goal.priced)


def _prices(value: Any) -> Any:
    """{system: price per GPU-hour}: each a finite number > 0 (any currency, the same for all)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"must be a mapping {{system: price per GPU-hour}}, got {value!r}")
    for sku, price in value.items():
        number = isinstance(price, (int, float)) and not isinstance(price, bool)
        if not number or not math.isfinite(price) or price <= 0:
            raise ValueError(f"{sku}: {price!r} is not a price; give a finite number > 0 per GPU-hour")
    return {str(sku): float(price) for sku, price in value.items()}


def _needs_sla_text(what: str) -> str:
    return f"{what} needs sla.e2e_ms, or both sla.ttft_ms and sla.itl_ms"


class SLATarget(Frozen):
    """Per-request bounds in ms; goodput counts only the requests that meet every bound set."""

    ttft_ms: PositiveNumber | None = None
    itl_ms: PositiveNumber | None = None
    e2e_ms: PositiveNumber | None = None

    @property
    def bounds_goodput(self) -> bool:
        return self.e2e_ms is not None or (self.ttft_ms is not None and self.itl_ms is not None)


SlaAggregate = Literal["mean", "median", "p75", "p90", "p95", "p99"]
SLA_METRICS = {"ttft_ms": "ttft_ms", "itl_ms": "itl_ms", "e2e_ms": "e2e_latency_ms"}
"""Each SLA bound and the Replay summary metric it bounds (as `<aggregate>_<metric>`)."""
_ANY_SLA_BOUND = f"an sla with at least one of {', '.join(SLA_METRICS)}"


class OptimizationGoal(Frozen):
    """What 'best' means. goodput targets carry an SLA; pareto trades two or more objectives;
    min_gpus (and any target with strict_sla) keeps only the candidates that meet the SLA."""

    target: OptimizationTarget = OptimizationTarget.throughput
    sla: SLATarget | None = None
    pareto_objectives: Annotated[list[OptimizationTarget], Field(min_length=2)] | None = None
    sla_aggregate: SlaAggregate = "mean"  # what a replay's latencies are held to the SLA as
    strict_sla: Flag = False  # every target: a candidate whose replay misses the SLA is infeasible
    min_goodput_rps: PositiveNumber | None = None  # min_gpus: SLA-good requests/s the answer must serve
    gpu_hour_price: Annotated[dict[str, Any], BeforeValidator(_prices)] | None = None  # Spica's own: {system: price per GPU-hour}

    @field_validator("pareto_objectives")
    @classmethod
    def _objectives(cls, values: list[OptimizationTarget] | None) -> list[OptimizationTarget] | None:
        if values is None:
            return None
        if OptimizationTarget.pareto in values:
            raise ValueError(f"pareto is not an objective; choose from {', '.join(OBJECTIVES)}")
        constrained = [value for value in values if value not in OBJECTIVES]
        if constrained:
            raise ValueError(f"{constrained[0]} is not a pareto objective (it is defined under the SLA); choose from {', '.join(OBJECTIVES)}")
        return unique(values)

    @model_validator(mode="after")
    def _rules(self) -> "OptimizationGoal":
        if self.pareto_objectives is not None and not self.is_pareto:
            raise ValueError(f"pareto_objectives is only allowed when target is pareto (target is {self.target})")
        goals = [name.goal for name in self.resolved_pareto_objectives] if self.is_pareto else [self.target.goal]
        for goal in goals:
            what = f"pareto objective {goal.name}" if self.is_pareto else f"target {goal.name}"
            if goal.needs_sla == "goodput" and not (self.sla is not None and self.sla.bounds_goodput):
                raise ValueError(_needs_sla_text(what))
            if goal.needs_sla == "any" and not self.sla_bounds:
                raise ValueError(f"{what} needs {_ANY_SLA_BOUND}")
        if self.strict_sla and not self.sla_bounds:
            raise ValueError(f"strict_sla needs {_ANY_SLA_BOUND}")
        if self.min_goodput_rps is not None and not self.target_constrained:
            raise ValueError(f"min_goodput_rps is only allowed with target {' or '.join(SLA_TARGETS)} (target is {self.target})")
        priced = [goal.name for goal in goals if goal.priced]
        if priced and self.gpu_hour_price is None:
            raise ValueError(f"gpu_hour_price: required by {priced[0]}; give {{system: price per GPU-hour}} for each system searched")
        if self.gpu_hour_price is not None and not priced:
            raise ValueError(f"gpu_hour_price: only the cost goals use it ({', '.join(PRICED)}); the goal here does not (target {self.target})")
        return self

    @property
    def is_pareto(self) -> bool:
        return self.target is OptimizationTarget.pareto

    @property
    def resolved_pareto_objectives(self) -> list[OptimizationTarget]:
        return list(self.pareto_objectives or DEFAULT_PARETO_OBJECTIVES)

    @property
    def objectives(self) -> list[str]:
        """The objective names a candidate is measured by: the target, or the Pareto objectives."""
        return [str(name) for name in self.resolved_pareto_objectives] if self.is_pareto else [str(self.target)]

    @property
    def target_constrained(self) -> bool:
        """Whether the target itself is defined under the SLA (min_gpus)."""
        return not self.is_pareto and self.target.goal.sla_constrained

    @property
    def sla_constrained(self) -> bool:
        """Whether only candidates that meet the SLA count (min_gpus, or strict_sla)."""
        return self.strict_sla or self.target_constrained

    @property
    def sla_bounds(self) -> dict[str, float]:
        """Each SLA bound that is set, keyed by the summary metric it bounds, e.g. mean_ttft_ms."""
        if self.sla is None:
            return {}
        return {f"{self.sla_aggregate}_{metric}": float(getattr(self.sla, field))
                for field, metric in SLA_METRICS.items() if getattr(self.sla, field) is not None}
