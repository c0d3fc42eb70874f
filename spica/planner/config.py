"""The Planner's side of a candidate: its unrolled planner fields and the Replay PlannerConfig.

`unroll_planner_fields` writes exactly the planner keys of the unrolled candidate
(docs/unrolled-candidate.md): a field is present only when the chosen policy reads it, so two
trials that run the same Planner unroll identically. `planner_config` turns those keys into the
Planner's config, checked by Dynamo's own `PlannerConfig`: the dict
`dynamo.replay.run_trace_replay(planner_config=...)` accepts (every report, dashboard and port
off so thousands of replays write no files and bind no sockets) and, from the same builder, the
`--config` of the Planner a manifest deploys.

Dynamo's planner package takes seconds to import; it is loaded on first use only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Mapping

from spica.config.presets import PREDICTOR_FAMILY_FIELDS
from spica.core.quiet import quieted
from spica.core.sla import SlaLike
from spica.core.unrolled import Unrolled
from spica.space.timeable import ais_perf_config

if TYPE_CHECKING:
    from dynamo.planner.config.planner_config import PlannerConfig

FPM_KEYS = ("max_num_fpm_samples", "fpm_sample_bucket_size")
SENSITIVITY_KEYS = ("load_scaling_down_sensitivity", "load_min_observations")
THROUGHPUT_INTERVAL = "throughput_adjustment_interval_seconds"
LOAD_INTERVAL = "load_adjustment_interval_seconds"
PREDICTOR_KEYS = ("load_predictor",) + tuple(sorted({key for keys in PREDICTOR_FAMILY_FIELDS.values() for key in keys}))
PASSED_THROUGH = FPM_KEYS + SENSITIVITY_KEYS + (THROUGHPUT_INTERVAL, LOAD_INTERVAL) + PREDICTOR_KEYS
"""Unrolled keys that are PlannerConfig fields under the same name."""

SEARCH_SAFE = {
    "report_interval_hours": None,
    "live_dashboard_port": 0,
    "control_api_port": 0,
    "metric_reporting_prometheus_port": 0,
}
"""No HTML reports, dashboard, control API or metrics port: a search runs many Planners at once."""

Runtime = Literal["replay", "kubernetes"]
RUNTIMES: dict[str, dict[str, Any]] = {"replay": SEARCH_SAFE, "kubernetes": {"environment": "kubernetes"}}
"""What differs between the replayed and the deployed Planner: only where it runs and reports."""

_PLANNER_CONFIG_LOGGER = "dynamo.planner.config.planner_config"


class PlannerConfigError(ValueError):
    """Dynamo's PlannerConfig rejected a candidate's planner settings (one-line message)."""


def validated_planner_config(payload: Mapping[str, Any]) -> "PlannerConfig":
    """Dynamo's PlannerConfig for `payload`; its validation errors as one PlannerConfigError line."""
    from dynamo.planner.config.planner_config import PlannerConfig
    from pydantic import ValidationError

    try:
        with quieted([_PLANNER_CONFIG_LOGGER]):  # advice PlannerConfig logs on every validation; Replay handles its bootstrap
            return PlannerConfig.model_validate(dict(payload))
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"]) or "planner config"
            problems.append(f"{where}: {' '.join(str(error['msg']).split())}")
        raise PlannerConfigError("; ".join(problems)) from None


def complete_predictor_fields(fields: Mapping[str, Any], name: str | None = None) -> dict[str, Any]:
    """`load_predictor` and exactly its family's fields; unset ones take Dynamo's defaults (docs/config.md)."""
    family = fields.get("load_predictor")
    if family not in PREDICTOR_FAMILY_FIELDS:
        where = f"load_predictor_candidates[{name}]" if name else "load_predictor_candidates"
        raise ValueError(f"{where}.load_predictor: {family!r} is not one of {', '.join(PREDICTOR_FAMILY_FIELDS)}")
    from dynamo.planner.config.planner_config import PlannerConfig

    defaults = PlannerConfig.model_fields
    keys = ("load_predictor_log1p", *(key for key in PREDICTOR_FAMILY_FIELDS[family] if key != "load_predictor_log1p"))
    return {"load_predictor": family, **{key: fields.get(key, defaults[key].default) for key in keys}}


def _pick(fields: Mapping[str, Any], keys: tuple[str, ...], knob: str, policy_name: str) -> dict[str, Any]:
    missing = [key for key in keys if key not in fields]
    if missing:
        raise ValueError(f"{knob}: missing {', '.join(missing)} needed by planner_scaling_policy {policy_name}")
    return {key: fields[key] for key in keys}


def unroll_planner_fields(
    policy_entry: str | Mapping[str, Any],
    policy_fields: Mapping[str, Any],
    fpm_fields: Mapping[str, Any],
    sensitivity_fields: Mapping[str, Any],
    predictor_name: str | None,
    predictor_fields: Mapping[str, Any],
    optimization_target: str,
) -> dict[str, Any]:
    """The planner keys of one unrolled candidate (docs/unrolled-candidate.md): the policy entry as given (a preset
    id or its dict), both flags and the Planner's target always; when either scaling is on, both
    intervals, the fpm sampling and the load sensitivity; under throughput scaling, the winning
    predictor's family, its log1p switch and that family's own fields.
    """
    throughput = bool(policy_fields.get("enable_throughput_scaling", False))
    load = bool(policy_fields.get("enable_load_scaling", False))
    name = policy_entry if isinstance(policy_entry, str) else "custom"
    out: dict[str, Any] = {
        "planner_scaling_policy": policy_entry if isinstance(policy_entry, str) else dict(policy_entry),
        "enable_throughput_scaling": throughput,
        "enable_load_scaling": load,
        "planner_optimization_target": optimization_target,
    }
    if not (throughput or load):
        return out
    out.update(_pick(policy_fields, (THROUGHPUT_INTERVAL, LOAD_INTERVAL), "planner_scaling_policy", name))
    out.update(_pick(fpm_fields, FPM_KEYS, "planner_fpm_sampling", name))
    out.update(_pick(sensitivity_fields, SENSITIVITY_KEYS, "planner_load_sensitivity", name))
    if throughput:
        if not predictor_fields:
            raise ValueError(
                f"planner_scaling_policy {name}: no load predictor chosen for its "
                f"{policy_fields[THROUGHPUT_INTERVAL]} s throughput interval"
            )
        out.update(complete_predictor_fields(predictor_fields, predictor_name))
    return out


def _ais_perf_model(view: Unrolled) -> dict[str, Any]:
    """The AIS identity of each role's engine, the one Replay times it with (and seeds the replayed
    Planner from): without it a deployed Planner would start with no performance model."""
    return {"roles": {pool.worker_type: ais_perf_config(view, pool.role) for pool in view.pools}}


def planner_config(
    unrolled: Unrolled | Mapping[str, Any], sla: SlaLike | None = None, runtime: Runtime = "replay"
) -> dict[str, Any] | None:
    """The Planner's config for an unrolled candidate; None when both scalings are off.

    One builder for both places a Planner runs, so the cluster runs the Planner that was scored:
    runtime "replay" gives `dynamo.replay.run_trace_replay(planner_config=...)` (every report and
    port off), "kubernetes" the manifest's `python3 -m dynamo.planner --config` (Dynamo's
    defaults for those). Mode, backend, model and each role's AIS perf model come from the
    candidate; GPU bounds are the search's budget (the Planner may grow up to `gpu_budget`;
    unset `min_gpu_budget` / `min_endpoint` keep Dynamo's defaults); per-worker GPU counts let
    it price a replica. Under the "sla" target the goal's TTFT/ITL become the Planner's targets.
    """
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime: {runtime!r} is not one of {', '.join(RUNTIMES)}")
    view = Unrolled.of(unrolled)
    flat, planner = view.flat, view.planner
    if not planner.enabled:
        return None
    target = flat["planner_optimization_target"]
    if planner.throughput and target != "sla":
        raise PlannerConfigError(
            f"planner_scaling_policy {planner.policy}: throughput scaling needs "
            f"planner target 'sla' (a goodput goal), got {target!r}"
        )
    payload: dict[str, Any] = {
        "mode": view.mode,
        "backend": view.backend,
        "model_name": flat["model_name"],
        "optimization_target": target,
        "enable_throughput_scaling": planner.throughput,
        "enable_load_scaling": planner.load,
        **{key: flat[key] for key in PASSED_THROUGH if key in flat},
        "max_gpu_budget": int(flat["gpu_budget"]),
        **{key: int(flat[key]) for key in ("min_gpu_budget", "min_endpoint") if flat.get(key) is not None},
        "ais_perf_model": _ais_perf_model(view),
    }
    for pool in view.pools:  # an agg worker is priced as the Planner's decode engine
        payload[f"{'decode' if pool.role == 'agg' else pool.role}_engine_num_gpu"] = pool.gpus
    if view.nextn > 0:
        payload["speculative_nextn"] = view.nextn
    if target == "sla":
        if sla is None or sla.ttft_ms is None or sla.itl_ms is None:
            raise PlannerConfigError("planner target 'sla' needs goal.sla.ttft_ms and goal.sla.itl_ms")
        payload["ttft_ms"] = float(sla.ttft_ms)
        payload["itl_ms"] = float(sla.itl_ms)
    payload.update(RUNTIMES[runtime])
    validated_planner_config(payload)
    return payload
