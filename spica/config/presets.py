"""Named presets for the composite knobs of docs/config.md.

A composite knob entry is either one of these ids or a complete dict of the same fields;
a dict replaces the preset (no merging). Field names are Dynamo PlannerConfig's own, so an
unrolled preset can be passed to the Planner unchanged.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping


def _frozen(table: dict[str, dict[str, Any]]) -> Mapping[str, Mapping[str, Any]]:
    return MappingProxyType({name: MappingProxyType(fields) for name, fields in table.items()})


def _scaling(throughput: bool, load: bool, throughput_s: int | None, load_s: int | None) -> dict[str, Any]:
    fields: dict[str, Any] = {"enable_throughput_scaling": throughput, "enable_load_scaling": load}
    if throughput or load:  # docs/config.md: a scaling policy names both intervals
        fields["throughput_adjustment_interval_seconds"] = throughput_s
        fields["load_adjustment_interval_seconds"] = load_s
    return fields


PLANNER_SCALING_POLICIES = _frozen(
    {
        "disabled": _scaling(False, False, None, None),
        "throughput_180_5": _scaling(True, False, 180, 5),
        "throughput_600_5": _scaling(True, False, 600, 5),
        "load_180_5": _scaling(False, True, 180, 5),
        "load_180_10": _scaling(False, True, 180, 10),
        "hybrid_180_5": _scaling(True, True, 180, 5),
        "hybrid_600_5": _scaling(True, True, 600, 5),
    }
)
"""Planner scaling policies. Throughput scaling re-sizes pools from predicted load every
throughput interval (needs an SLA); load scaling reacts to queue/KV pressure every load interval.
Presets carry both intervals as the table in docs/config.md does (Dynamo paces its perf-model updates by
the load interval even under throughput-only scaling); unroll keeps what the policy uses."""

PLANNER_FPM_SAMPLING = _frozen(
    {
        "small": {"max_num_fpm_samples": 32, "fpm_sample_bucket_size": 4},
        "default": {"max_num_fpm_samples": 64, "fpm_sample_bucket_size": 16},
        "large": {"max_num_fpm_samples": 128, "fpm_sample_bucket_size": 16},
        "fine": {"max_num_fpm_samples": 128, "fpm_sample_bucket_size": 64},
    }
)

PLANNER_LOAD_SENSITIVITY = _frozen(
    {
        "aggressive": {"load_scaling_down_sensitivity": 70, "load_min_observations": 3},
        "default": {"load_scaling_down_sensitivity": 80, "load_min_observations": 5},
        "conservative": {"load_scaling_down_sensitivity": 90, "load_min_observations": 8},
    }
)


def _kalman(q_level: float, q_trend: float, r: float, min_points: int, log1p: bool) -> dict[str, Any]:
    return {
        "load_predictor": "kalman",
        "load_predictor_log1p": log1p,
        "kalman_q_level": q_level,
        "kalman_q_trend": q_trend,
        "kalman_r": r,
        "kalman_min_points": min_points,
    }


LOAD_PREDICTORS = _frozen(
    {
        "constant_last": {"load_predictor": "constant"},
        "arima_raw": {"load_predictor": "arima", "load_predictor_log1p": False},
        "arima_log1p": {"load_predictor": "arima", "load_predictor_log1p": True},
        "prophet_w20_raw": {"load_predictor": "prophet", "prophet_window_size": 20, "load_predictor_log1p": False},
        "prophet_w20_log1p": {"load_predictor": "prophet", "prophet_window_size": 20, "load_predictor_log1p": True},
        "prophet_w50_raw": {"load_predictor": "prophet", "prophet_window_size": 50, "load_predictor_log1p": False},
        "prophet_w50_log1p": {"load_predictor": "prophet", "prophet_window_size": 50, "load_predictor_log1p": True},
        "kalman_default_raw": _kalman(1.0, 0.1, 10.0, 5, False),
        "kalman_default_log1p": _kalman(1.0, 0.1, 10.0, 5, True),
        "kalman_reactive_raw": _kalman(10.0, 1.0, 5.0, 3, False),
        "kalman_reactive_log1p": _kalman(10.0, 1.0, 5.0, 3, True),
    }
)
"""Load-predictor candidates for the sub-sweep (docs/search.md step 3). Not a study dimension."""

PREDICTOR_FAMILY_FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "constant": (),
        "arima": ("load_predictor_log1p",),
        "prophet": ("prophet_window_size", "load_predictor_log1p"),
        "kalman": ("load_predictor_log1p", "kalman_q_level", "kalman_q_trend", "kalman_r", "kalman_min_points"),
    }
)
"""Fields each predictor family reads; a dict entry may set these and nothing else."""
