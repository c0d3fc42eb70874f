"""Every goal a search can aim at, one record each (docs/config.md, goal).

A goal says which way is better, how its value is read from a Replay summary, whether it needs
an SLA, which optimization target the Dynamo Planner gets under it, and the unit tables and
plots label it with. The config's `OptimizationTarget`, the scores, the Planner policies and the
results all read this table: adding a goal is one entry here plus `conf/goal/<name>.yaml`.

Values are read from the summary, never recomputed from requests. Per-GPU values divide by the
time-averaged provisioned GPUs (gpu_hours / duration), so a Planner that scales workers down
during the replay is credited for the GPUs it gave back; so do costs, which multiply those GPUs
by the candidate's price per GPU-hour (goal.gpu_hour_price, in the user's currency), and energy,
which multiplies them by the GPU's board power as AI Configurator's system spec states it
(`gpu.power`, its TDP): GPU energy at full board power, an upper bound that leaves out the host,
network and cooling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping

PlannerTarget = Literal["sla", "latency", "throughput"]
SlaNeed = Literal["none", "goodput", "any"]


@dataclass(frozen=True)
class PerGpu:
    """What one GPU of the candidate costs and draws (a mixed pair: weighted by its roles' GPUs)."""

    price: float | None = None  # per GPU-hour, goal.gpu_hour_price's currency; None: no prices given
    watts: float | None = None  # board power (AI Configurator's system spec); None: not asked for


Reader = Callable[[Mapping[str, Any], float, PerGpu], "float | None"]
"""(Replay summary, provisioned GPUs, per-GPU rates) → the value; None when this replay cannot tell it."""


@dataclass(frozen=True)
class Goal:
    name: str
    maximize: bool
    read: Reader
    unit: str
    planner_target: PlannerTarget = "throughput"
    needs_sla: SlaNeed = "none"  # goodput: sla.e2e_ms, or both ttft_ms and itl_ms; any: at least one bound
    sla_constrained: bool = False  # a candidate missing the SLA is infeasible, and ties go to the better goodput
    pareto_objective: bool = True  # may be traded on a Pareto front
    gpus: bool = False  # the value is the candidate's GPUs: known before its replay
    extensive: bool = False  # the value grows with the deployment's size (k× replicas at k× load: k× the value)
    priced: bool = False  # needs goal.gpu_hour_price
    powered: bool = False  # needs each system's GPU power


def _summary(key: str, per_gpu: bool = False) -> Reader:
    def read(summary: Mapping[str, Any], gpus: float, rates: PerGpu) -> float | None:
        value = summary.get(key)
        if value is None:
            return None
        return float(value) / gpus if per_gpu else float(value)

    return read


def _per_mtok(rate: Callable[[PerGpu], float | None], scale: float = 1.0) -> Reader:
    """A per-GPU-hour rate × provisioned GPU-hours per million output tokens; None without the rate or output."""

    def read(summary: Mapping[str, Any], gpus: float, rates: PerGpu) -> float | None:
        per_gpu_hour, tokens_per_s = rate(rates), float(summary.get("output_throughput_tok_s") or 0.0)
        if per_gpu_hour is None or tokens_per_s <= 0:
            return None
        return per_gpu_hour * scale * gpus / 3600.0 / tokens_per_s * 1e6

    return read


GOALS: dict[str, Goal] = {
    goal.name: goal
    for goal in (
        Goal("throughput", True, _summary("output_throughput_tok_s"), "tok/s", extensive=True),
        Goal("throughput_per_gpu", True, _summary("output_throughput_tok_s", per_gpu=True), "tok/s/GPU"),
        Goal("throughput_per_user", True, _summary("mean_output_token_throughput_per_user"), "tok/s/user"),
        Goal("e2e_latency", False, _summary("mean_e2e_latency_ms"), "ms", planner_target="latency"),
        Goal("ttft", False, _summary("mean_ttft_ms"), "ms", planner_target="latency"),
        Goal("goodput", True, _summary("goodput_output_throughput_tok_s"), "good tok/s", planner_target="sla", needs_sla="goodput",
             extensive=True),
        Goal("goodput_per_gpu", True, _summary("goodput_output_throughput_tok_s", per_gpu=True), "good tok/s/GPU",
             planner_target="sla", needs_sla="goodput"),
        Goal("min_gpus", False, lambda summary, gpus, rates: gpus, "GPUs", planner_target="sla", needs_sla="any",
             sla_constrained=True, pareto_objective=False, gpus=True, extensive=True),
        Goal("cost_per_mtok", False, _per_mtok(lambda rates: rates.price), "price/Mtok", priced=True),
        Goal("energy_per_mtok", False, _per_mtok(lambda rates: rates.watts, scale=1e-3), "kWh/Mtok", powered=True),
        # like min_gpus, priced: within a branch (one system, or one prefill/decode pair) the cost orders as the GPUs do
        Goal("min_cost", False, lambda summary, gpus, rates: None if rates.price is None else rates.price * gpus, "price/h",
             planner_target="sla", needs_sla="any", sla_constrained=True, pareto_objective=False, gpus=True, extensive=True,
             priced=True),
    )
}
PARETO = "pareto"  # not a goal of its own: a front over several goals' values
