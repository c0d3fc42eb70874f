"""docs/search.md step 3: pick the load predictor the Planner will run, per throughput interval.

Every candidate is one of Dynamo's own predictor classes (`dynamo.planner.core.load`), built
from a validated PlannerConfig exactly as the Planner builds it, so the winner is what runs in
the loop. Like the Planner, a candidate keeps three predictors (request count, mean ISL, mean
OSL), is asked for a forecast at each interval and then fed the observation.

Warm-up. Below its own `minimum_data_points` a Dynamo predictor returns the last value (it
*is* constant_last there): constant 1 point, ARIMA and Prophet 5 (Prophet's window only bounds
history), Kalman `kalman_min_points`. Windows before the largest warm-up among the compared
candidates are not scored, so every candidate is judged on the same windows with its own model.

Loss per scored window (N requests, mean ISL I, mean OSL O; hats are forecasts):
0.4·e(N̂·Î, N·I) + 0.4·e(N̂·Ô, N·O) + 0.1·e(Î, I) + 0.1·e(Ô, O), e(p, a) = |log1p(max(p, 0)) − log1p(max(a, 0))|;
a candidate's score is the mean. A forecast that raises (the Planner would have none) or is not
finite scores infinity.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from statistics import fmean
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from spica.config.presets import LOAD_PREDICTORS, PREDICTOR_FAMILY_FIELDS
from spica.planner.config import SEARCH_SAFE, PlannerConfigError, complete_predictor_fields, validated_planner_config
from spica.planner.windows import TrafficWindow, cut_windows, read_arrivals

log = logging.getLogger("spica.planner")

if TYPE_CHECKING:
    from dynamo.planner.core.load.predictors import BasePredictor

FALLBACK = "constant_last"
PREDICTOR_ERRORS = (ArithmeticError, IndexError, RuntimeError, TypeError, ValueError)
"""What the Planner catches around `predict_next` (it then skips the interval's forecast)."""

LoadPredictor = tuple[str, Mapping[str, Any]]
"""A load predictor to try: its name and fields (one entry of `load_predictor_candidates`)."""


def prediction_error(predicted: float, actual: float) -> float:
    return abs(math.log1p(max(predicted, 0.0)) - math.log1p(max(actual, 0.0)))


def window_loss(num_requests: float, mean_isl: float, mean_osl: float, window: TrafficWindow) -> float:
    """The spec's weighted one-step-ahead loss of one forecast (N̂, Î, Ô) against one window."""
    return (
        0.4 * prediction_error(num_requests * mean_isl, window.num_requests * window.mean_isl)
        + 0.4 * prediction_error(num_requests * mean_osl, window.num_requests * window.mean_osl)
        + 0.1 * prediction_error(mean_isl, window.mean_isl)
        + 0.1 * prediction_error(mean_osl, window.mean_osl)
    )


def build_predictors(fields: Mapping[str, Any], interval_s: int) -> tuple["BasePredictor", "BasePredictor", "BasePredictor"]:
    """Dynamo's predictors for (request count, ISL, OSL), configured as the Planner would be."""
    from dynamo.planner.core.load.predictors import LOAD_PREDICTORS as DYNAMO_PREDICTORS

    config = validated_planner_config(
        {
            "optimization_target": "sla",
            "enable_throughput_scaling": True,
            "enable_load_scaling": False,
            "throughput_adjustment_interval_seconds": interval_s,
            **complete_predictor_fields(fields),
            **SEARCH_SAFE,
        }
    )
    predictor_class = DYNAMO_PREDICTORS[config.load_predictor]
    return predictor_class(config), predictor_class(config), predictor_class(config)


def warmup_windows(name: str, fields: Mapping[str, Any], interval_s: int) -> int:
    """Windows a predictor needs before it forecasts with its own model (Dynamo's minimum_data_points)."""
    try:
        return build_predictors(fields, interval_s)[0].minimum_data_points
    except PlannerConfigError as exc:
        raise PlannerConfigError(f"load_predictor_candidates[{name}]: {exc}") from None


def candidate_loss(windows: Sequence[TrafficWindow], fields: Mapping[str, Any], interval_s: int, warmup: int) -> float:
    """Mean one-step-ahead loss over windows[warmup:]; infinite when none is scored or a forecast fails."""
    requests, isl, osl = build_predictors(fields, interval_s)
    losses: list[float] = []
    for index, window in enumerate(windows):
        try:
            forecast = (requests.predict_next(), isl.predict_next(), osl.predict_next())
        except PREDICTOR_ERRORS:
            return math.inf
        if not all(math.isfinite(value) for value in forecast):
            return math.inf
        if index >= warmup:
            losses.append(window_loss(*forecast, window))
        requests.add_data_point(window.num_requests)
        isl.add_data_point(window.mean_isl)
        osl.add_data_point(window.mean_osl)
    return fmean(losses) if losses else math.inf


@dataclass(frozen=True)
class IntervalChoice:
    """The predictor pinned for one throughput interval, why, and every candidate's mean loss."""

    interval_s: int
    winner: str
    winner_fields: Mapping[str, Any]
    reason: str
    losses: Mapping[str, float] = field(default_factory=dict)
    windows: int = 0
    warmup_windows: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "interval_s": self.interval_s,
            "winner": self.winner,
            "winner_fields": dict(self.winner_fields),
            "reason": self.reason,
            "losses": {name: loss if math.isfinite(loss) else None for name, loss in self.losses.items()},
            "windows": self.windows,
            "warmup_windows": self.warmup_windows,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "IntervalChoice":
        """The inverse of to_dict; a malformed entry raises ValueError (KeyError, TypeError)."""
        losses = {str(name): math.inf if loss is None else float(loss) for name, loss in dict(data["losses"]).items()}
        fields = dict(data["winner_fields"])
        if fields.get("load_predictor") not in PREDICTOR_FAMILY_FIELDS:
            raise ValueError(f"unknown load_predictor {fields.get('load_predictor')!r}")
        return cls(int(data["interval_s"]), str(data["winner"]), fields, str(data["reason"]), losses,
                   int(data["windows"]), int(data["warmup_windows"]))


@dataclass(frozen=True)
class SubSweepResult:
    """Per-interval choices; `reason` is "swept" or the shortcut that replaced the sweep."""

    reason: str
    intervals: Mapping[int, IntervalChoice] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "intervals": {str(s): choice.to_dict() for s, choice in self.intervals.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SubSweepResult":
        return cls(str(data["reason"]), {int(s): IntervalChoice.from_dict(choice) for s, choice in dict(data["intervals"]).items()})


def _fallback(interval_s: int, reason: str, **scores: Any) -> IntervalChoice:
    return IntervalChoice(interval_s, FALLBACK, complete_predictor_fields(LOAD_PREDICTORS[FALLBACK]), reason, **scores)


def _same_forecasts_key(fields: Mapping[str, Any], window_count: int) -> str:
    """Candidates with equal keys forecast identically on `window_count` windows.

    Prophet keeps only its last `prophet_window_size` points, so every window size at least as
    long as the trace sees the same history: w20 and w50 coincide on a 20-window trace, and
    Prophet fits are the slow part of the sweep (seconds each).
    """
    complete = complete_predictor_fields(fields)
    if complete["load_predictor"] == "prophet":
        complete["prophet_window_size"] = min(complete["prophet_window_size"], window_count)
    return json.dumps(complete, sort_keys=True)


def _sweep_interval(windows: Sequence[TrafficWindow], interval_s: int, candidates: Sequence[LoadPredictor]) -> IntervalChoice:
    warmup = max(warmup_windows(name, fields, interval_s) for name, fields in candidates)
    by_forecasts: dict[str, float] = {}
    losses: dict[str, float] = {}
    for name, fields in candidates:
        key = _same_forecasts_key(fields, len(windows))
        if key not in by_forecasts:
            by_forecasts[key] = candidate_loss(windows, fields, interval_s, warmup)
        losses[name] = by_forecasts[key]
    scores = {"losses": losses, "windows": len(windows), "warmup_windows": warmup}
    best_name, best_fields = min(candidates, key=lambda candidate: losses[candidate[0]])
    if not math.isfinite(losses[best_name]):
        return _fallback(interval_s, "all_losses_infinite", **scores)
    return IntervalChoice(interval_s, best_name, complete_predictor_fields(best_fields, best_name), "best_loss", **scores)


def predictor_sub_sweep(
    trace_path: str | None,
    intervals: Sequence[int],
    candidates: Sequence[LoadPredictor],
    arrival_speedup_ratio: float = 1.0,
    has_throughput_scaling: bool = True,
    trace_format: str = "mooncake",
) -> SubSweepResult:
    """Lowest mean loss per throughput interval over the trace's windows (ties: first candidate).

    Shortcuts: no throughput-scaling policy ⇒ nothing to choose; no trace (synthetic, static
    load) ⇒ constant_last everywhere; a trace too short to score any window ⇒ constant_last there.
    """
    if not has_throughput_scaling or not intervals:
        return SubSweepResult("no_throughput_scaling_candidate")
    distinct = sorted(set(intervals))
    if trace_path is None:
        return SubSweepResult("static_workload_constant", {s: _fallback(s, "static_workload_constant") for s in distinct})
    if not candidates:
        raise ValueError("load_predictor_candidates: empty; list at least one predictor (e.g. constant_last)")
    from threadpoolctl import threadpool_limits

    arrivals = read_arrivals(trace_path, arrival_speedup_ratio, trace_format)
    # ARIMA fits tiny matrices; multi-threaded BLAS only adds contention (≈7× slower on 2 busy cores).
    with threadpool_limits(limits=1):
        choices = {s: _sweep_interval(cut_windows(arrivals, s), s, candidates) for s in distinct}
    return SubSweepResult("swept", choices)


def cached_predictor_sub_sweep(
    trace_path: str | None,
    trace_sha256: str | None,
    intervals: Sequence[int],
    candidates: Sequence[LoadPredictor],
    arrival_speedup_ratio: float = 1.0,
    has_throughput_scaling: bool = True,
    trace_format: str = "mooncake",
) -> SubSweepResult:
    """predictor_sub_sweep, remembered on disk by trace content and inputs (the bytes decide the
    format: one file reads as one format only).

    A full-trace sweep fits Prophet and ARIMA dozens of times (about a minute here); the
    answer only depends on the trace bytes, the speedup, the intervals and the candidates.
    """
    import hashlib

    from spica.core.paths import cache_root
    from spica.space.cache import atomic_write_text

    if trace_path is None or not has_throughput_scaling or not intervals:
        return predictor_sub_sweep(trace_path, intervals, candidates, arrival_speedup_ratio, has_throughput_scaling, trace_format)
    key = json.dumps([trace_sha256, arrival_speedup_ratio, sorted(set(intervals)), [list(c) for c in candidates]], sort_keys=True, default=str)
    path = cache_root() / "predictors" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"
    if path.exists():
        try:  # data, never code: a malformed or foreign entry is recomputed
            return SubSweepResult.from_dict(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("predictor cache entry %s is not valid (%s); recomputing it", path, exc)
    result = predictor_sub_sweep(trace_path, intervals, candidates, arrival_speedup_ratio, has_throughput_scaling, trace_format)
    atomic_write_text(path, json.dumps(result.to_dict(), sort_keys=True))
    return result
