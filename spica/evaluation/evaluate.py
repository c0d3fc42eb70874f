"""One candidate, scored: a pure function of (config, unrolled candidate) → Evaluation.

Build the Planner config (when a scaling policy is on), build the Replay call, replay it
with TP-aware timing, read the objectives. Everything it needs travels in its arguments and
everything it returns is plain data, so it runs unchanged in this process, a spawned worker
or a SLURM job. It never raises for a bad candidate: it returns a failed Evaluation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from spica.config import SmartSearchConfig
from spica.core.goals import GOALS, PerGpu
from spica.core.unrolled import Unrolled
from spica.evaluation import calibration, score, screening
from spica.evaluation.deployment import WorkloadSpec, build_replay_call
from spica.evaluation.replay import capped_worker, run_replay
from spica.planner.config import PlannerConfigError, planner_config
from spica.space.capacity import gpu_power_w
from spica.workloads.summary import check_trace


@dataclass(frozen=True)
class Evaluation:
    """status: feasible | infeasible | failed; reason: a category a person can filter on."""

    status: str
    reason: str | None = None
    objectives: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    replay_input: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    provenance: dict[str, Any] = field(default_factory=dict)


def workload_spec(config: SmartSearchConfig) -> WorkloadSpec:
    """The plan's traffic in Replay's terms; a candidate's own concurrency rides in `unrolled`."""
    workload = config.workload
    if workload.is_trace_based:
        return WorkloadSpec(
            kind="trace",
            trace_path=workload.trace_path,
            trace_format=workload.trace_format,
            arrival_speedup_ratio=workload.arrival_speedup_ratio,
            concurrency=workload.replay_concurrency,
            shared_prefix_ratio=workload.shared_prefix_ratio,
            num_prefix_groups=workload.num_prefix_groups,
        )
    levels = workload.concurrency_levels()
    count = workload.resolved_request_count()  # None for a KV-relative load: derived per candidate, below
    return WorkloadSpec(
        kind="synthetic",
        request_rate=workload.request_rate,
        concurrency=levels[0] if len(levels) == 1 else None,
        isl=workload.isl,
        osl=workload.osl,
        request_count=count or 1,
        shared_prefix_ratio=workload.shared_prefix_ratio,
        num_prefix_groups=workload.num_prefix_groups,
        turns_per_session=workload.turns_per_session,
        inter_turn_delay_ms=workload.inter_turn_delay_ms,
        arrival_seed=config.sweep.seed,
        length_spread=workload.length_spread,
        client_start=workload.client_start,
    )


def _spec_for(config: SmartSearchConfig, unrolled: Mapping[str, Any]) -> WorkloadSpec:
    spec = workload_spec(config)
    if spec.kind == "synthetic" and "concurrency" in unrolled and config.workload.request_rate is None:
        ratio = screening.request_ratio(config, unrolled)
        return replace(spec, request_count=config.workload.resolved_request_count(unrolled["concurrency"], ratio))
    return spec


def mean_prompt_tokens(spec: WorkloadSpec) -> float | None:
    """The workload's mean prompt length, which prices a calibration's per-token request overhead."""
    if spec.kind == "synthetic":
        return float(spec.isl)
    return check_trace(spec.trace_path, spec.trace_format).isl.mean  # the one checking pass, remembered per process


def request_count(config: SmartSearchConfig, unrolled: Mapping[str, Any]) -> int | None:
    """The requests the candidate's replay will simulate, known before it runs (what its replay
    time grows with); None for a trace, whose rows are the same for every candidate."""
    spec = _spec_for(config, unrolled)
    return spec.request_count if spec.kind == "synthetic" else None


SIMULATOR_CLOCK = ("wall_time_ms", "processed_tokens_per_s", "processed_output_tokens_per_s")
"""Replay's own speed, not the deployment's: kept in provenance so metrics are reproducible."""


def _scalars(summary: Mapping[str, Any]) -> dict[str, float]:
    return {key: float(value) for key, value in summary.items() if isinstance(value, (int, float)) and not isinstance(value, bool)}


def _split(summary: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """(the deployment's metrics, the simulator's clock)."""
    scalars = _scalars(summary)
    clock = {key: scalars.pop(key) for key in SIMULATOR_CLOCK if key in scalars}
    return scalars, clock


def evaluate(config: SmartSearchConfig, unrolled: Mapping[str, Any], draw: int = 0) -> Evaluation:
    """`draw`: which draw of a kv_router candidate (0 the search's; spica/search/spread.py)."""
    started = time.perf_counter()
    sweep = config.sweep
    if unrolled.get("kv_load_concurrency_capacity") == 0:
        reason = (
            f"kv_capacity: the pool holds {unrolled['kv_load_capacity_tokens']} KV tokens, less than one request "
            f"(isl + osl // 2 = {config.workload.isl + config.workload.osl // 2})"
        )
        return Evaluation("infeasible", reason, seconds=time.perf_counter() - started)
    try:
        view = Unrolled.of(unrolled)  # read once for the Planner's config and the Replay call
        spec = _spec_for(config, unrolled)
        overhead = calibration.request_overhead_ms(unrolled, mean_prompt_tokens(spec)) if unrolled.get(calibration.FIELD) else 0.0
        sla = calibration.shifted_sla(config.goal.sla, overhead)  # what Replay and the Planner must meet
        planner = planner_config(view, sla)
        call = build_replay_call(view, spec, sla, sweep.timing, planner)
    except PlannerConfigError as exc:
        return Evaluation("failed", f"planner_config: {exc}", seconds=time.perf_counter() - started)
    except (ValueError, KeyError) as exc:
        return Evaluation("failed", f"invalid_deployment: {exc}", seconds=time.perf_counter() - started)
    outcome = run_replay(call, sweep.max_eval_seconds, draw)
    if overhead:
        outcome = replace(outcome, summary=calibration.shifted_summary(outcome.summary, overhead))
    replay_input = call.to_dict()
    metrics, clock = _split(outcome.summary)
    provenance = {"replay_seconds": round(outcome.seconds, 4), "timing": sweep.timing, "simulator": clock}
    if overhead:  # replay.json reproduces Replay's own figures; the client's are these later
        provenance["ttft_overhead_ms"] = round(overhead, 3)
    if outcome.status != "ok":
        # an overrun is upstream's infeasible "exceed runtime": the study learns to avoid it
        status = "infeasible" if outcome.status in ("no_samples", "timeout") else "failed"
        category = "exceed runtime" if outcome.status == "timeout" else outcome.reason
        reason = f"{category}: {outcome.message}" if outcome.message else category
        return Evaluation(status, reason, metrics=metrics, replay_input=replay_input,
                          seconds=time.perf_counter() - started, provenance=provenance)
    rates = _rates(config, view)
    objectives = score.objective_values(outcome.summary, rates)
    metrics |= {"provisioned_gpus": score.provisioned_gpus(outcome.summary)}
    if rates.price is not None:  # what the candidate costs, whichever goal chose it (tables, report, manifest)
        metrics |= {"gpu_hour_price": rates.price, "cost_per_hour": objectives["min_cost"]}
        metrics |= {"cost_per_mtok": objectives["cost_per_mtok"]} if "cost_per_mtok" in objectives else {}
    status, reason = "feasible", None
    goal = config.goal
    misses = score.sla_misses(outcome.summary, goal.sla_bounds, goal.min_goodput_rps) if goal.sla_constrained else []
    if unrolled["used_gpus"] > config.search_space.gpu_budget:
        status, reason = "infeasible", f"over_budget: {unrolled['used_gpus']} GPUs > gpu_budget {config.search_space.gpu_budget}"
    elif misses:  # the study learns where the SLA breaks; the bound missed is in the reason
        status, reason = "infeasible", f"sla: {'; '.join(misses)}"
    elif screening.FIELD in unrolled:  # its objectives guide the study; a full replay of it may join the answer
        status = "screened"
    return Evaluation(status, reason, objectives, metrics, replay_input, time.perf_counter() - started, provenance)


def _rates(config: SmartSearchConfig, view: Unrolled) -> PerGpu:
    """The candidate's price per GPU-hour (with prices) and GPU power (only for a goal that needs it:
    reading AI Configurator's system spec is not free in a worker)."""
    pools = [(pool.hardware_sku, pool.total_gpus) for pool in view.pools]
    powered = any(GOALS[name].powered for name in config.goal.objectives)
    watts = score.per_gpu({sku: gpu_power_w(sku) for sku, _ in pools}, pools) if powered else None
    return PerGpu(score.per_gpu(config.goal.gpu_hour_price, pools), watts)


def evaluate_task(task: tuple[SmartSearchConfig, Mapping[str, Any]] | tuple[SmartSearchConfig, Mapping[str, Any], int]) -> Evaluation:
    """Pool entry point: one picklable argument, (config, unrolled[, draw])."""
    return evaluate(*task)


def prepare_worker() -> None:
    """An evaluation worker's start, forked from a forkserver that imported WORKER_IMPORTS
    (spica/evaluation/replay.py), this module among them: its replay child running, so the first
    replay of a search does not wait for it. The worker never replays itself (its own Rust and JAX
    state would not survive a fork)."""
    capped_worker.fork = True
    capped_worker.start()
