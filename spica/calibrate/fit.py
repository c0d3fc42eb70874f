"""Fit a timing calibration on measured points, and say how much it helps on points it never saw.

The correction is four numbers per (model, system, backend): a prefill pass of n new tokens
takes prefill·(n/1024)^prefill_exponent times what AIS says, a decode step of b requests
decode·(b/64)^decode_exponent times, applied to the timing table Replay runs on (so Replay still
schedules, batches and queues every request; only its timing inputs change). Positive factors
and bounded exponents, with times kept non-decreasing in work, keep the timing monotone, and
each reads as a sentence ("this cluster prefills 1,024 tokens 1.9× as long as AIS says").

Fitting starts from no correction. TTFT and TPOT pull on each other (a slower prefill also
slows the decode steps it shares a pass with), so two probes first learn how the median
measured / predicted TTFT and TPOT respond to each factor, and Newton steps then move both
factors together to bring both medians to 1. The exponents then take up how the error left
moves with the load (the slope of log(measured / predicted) against log(requests in flight per
attention rank)), and the factors are refitted. Every set of numbers tried is scored; the one
that leaves the smallest median TTFT + TPOT error is kept (no correction included, so a fit is
never worse on its own points). Measured on AI Configurator's silicon rows (docs/fidelity.md).

Held-out error comes from k-fold cross-validation: each fold is predicted by factors fitted on
the others, and a fit that makes held-out error worse is refused (spica/calibrate/__init__.py).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from spica.calibrate.measurements import Measurement
from spica.calibrate.replayed import Predicted, predict
from spica.evaluation.calibration import MAX_EXPONENT, PHASES
from spica.search.pool import EvaluationPool, InlinePool, run_all

SLOPE_ROUNDS = 1
NEWTON_ROUNDS = 3
"""Newton steps on the factors before and after the exponents' move (9 replays of every point in
all, with the two probes): on the silicon groups the medians settle within three."""
FACTOR_BOUNDS = (0.1, 10.0)
"""A factor outside these is not a calibration but a different machine: the fit stops there."""

Factors = Mapping[str, float]  # {"prefill": f, "prefill_exponent": e, "decode": f, "decode_exponent": e}
Predictor = Callable[[Sequence[Measurement], Factors | None], list[Predicted]]


def scale_of(factors: Factors | None, mode: str) -> dict | None:
    """The candidate's `timing_calibration` entry for these factors (every role gets both)."""
    if factors is None:
        return None
    roles = ("agg",) if mode == "agg" else ("prefill", "decode")
    return {"id": "fitting", "roles": {role: dict(factors) for role in roles}}


def _predict_one(item: tuple[Measurement, Factors | None, Mapping[str, Any]]) -> Predicted:
    point, factors, options = item
    return predict(point, scale_of(factors, point.mode), **options)


def predictor(pool: EvaluationPool | None = None, **options: Any) -> Predictor:
    """Predictions of many points, on `pool` (the search's own, spica/search/pool.py: its workers
    are born with Ctrl-C blocked and killed when the command stops) or in this process; `options`
    go to `spica.calibrate.replayed.measured_config` (e.g. length_spread)."""

    def run(points: Sequence[Measurement], factors: Factors | None) -> list[Predicted]:
        items = [(point, factors, options) for point in points]
        results = run_all(pool or InlinePool(), _predict_one, items)
        for result in results:
            if isinstance(result, Exception):  # predict returns a failure for a bad point: this is a bug
                raise result
        return results

    return run


@dataclass(frozen=True)
class Errors:
    """How far predictions are from measurements, over the points that could be predicted."""

    predicted: int
    ttft_median_ape: float | None
    tpot_median_ape: float | None
    ttft_mean_ape: float | None
    tpot_mean_ape: float | None
    ttft_bias: float | None  # median predicted / measured
    tpot_bias: float | None

    def as_dict(self) -> dict[str, float | int | None]:
        return {name: (round(value, 4) if isinstance(value, float) else value) for name, value in self.__dict__.items()}


def errors(predictions: Iterable[Predicted]) -> Errors:
    done = [p for p in predictions if p.status == "feasible" and p.ttft_ms and p.tpot_ms]
    ttft = [p.ttft_ms / p.measurement.ttft_ms for p in done]
    tpot = [p.tpot_ms / p.measurement.tpot_ms for p in done]

    def ape(ratios: list[float], how: Callable[[list[float]], float]) -> float | None:
        return how([abs(r - 1.0) for r in ratios]) if ratios else None

    return Errors(
        predicted=len(done),
        ttft_median_ape=ape(ttft, statistics.median), tpot_median_ape=ape(tpot, statistics.median),
        ttft_mean_ape=ape(ttft, statistics.fmean), tpot_mean_ape=ape(tpot, statistics.fmean),
        ttft_bias=statistics.median(ttft) if ttft else None, tpot_bias=statistics.median(tpot) if tpot else None,
    )


def fit_factors(points: Sequence[Measurement], run: Predictor) -> dict[str, float]:
    """The correction that leaves the smallest median TTFT + TPOT error on `points` (module docstring)."""
    best: tuple[float, dict[str, float]] | None = None

    def gaps(numbers: dict[str, float]) -> tuple[list[Predicted], list[float]]:
        """Replays at `numbers`; keeps the best; log of the median measured / predicted, per phase."""
        nonlocal best
        done = _done(run(points, numbers))
        if not done:
            raise ValueError("none of the measured points could be replayed")
        found = errors(done)
        total = (found.ttft_median_ape or 0.0) + (found.tpot_median_ape or 0.0)
        if best is None or total < best[0]:
            best = (total, dict(numbers))
        return done, [math.log(statistics.median(ratio(p) for p in done)) for ratio in RATIOS.values()]

    factors = dict(IDENTITY)
    done, gap = gaps(factors)
    # how each phase's median responds to each factor: one probe per factor (the Jacobian of the gaps)
    response = []
    for phase in PHASES:
        _, probed = gaps({**factors, phase: math.exp(PROBE)})
        response.append([(before - after) / PROBE for before, after in zip(gap, probed)])
    for step in range(SLOPE_ROUNDS + 1):
        if step:  # the exponents take up how the error left still moves with the load
            for phase, ratio in RATIOS.items():
                exponent = factors[f"{phase}_exponent"] + _slope(done, ratio)
                factors[f"{phase}_exponent"] = round(max(-MAX_EXPONENT, min(MAX_EXPONENT, exponent)), 4)
            done, gap = gaps(factors)
        for _ in range(NEWTON_ROUNDS):
            move = _solve(response, gap)
            for phase, change in zip(PHASES, move):
                factors[phase] = round(_bounded(factors[phase] * math.exp(change)), 4)
            done, gap = gaps(factors)
    assert best is not None
    return best[1]


IDENTITY = {"prefill": 1.0, "prefill_exponent": 0.0, "decode": 1.0, "decode_exponent": 0.0}
RATIOS: dict[str, Callable[[Predicted], float]] = {
    "prefill": lambda p: p.measurement.ttft_ms / p.ttft_ms,
    "decode": lambda p: p.measurement.tpot_ms / p.tpot_ms,
}
PROBE = 0.3
"""log of the factor each probe applies to learn how TTFT and TPOT respond (×1.35)."""


def _solve(response: list[list[float]], gap: list[float]) -> list[float]:
    """The log-factor moves that close both gaps if TTFT and TPOT respond linearly: response[j][i]
    is how much the log gap of phase i shrinks per unit of log factor j; each move is bounded."""
    (a, c), (b, d) = response  # columns: one factor each
    det = a * d - b * c
    if abs(det) < 1e-6:  # the phases do not respond separately: move each on its own gap
        moves = [gap[0] / a if abs(a) > 1e-6 else 0.0, gap[1] / d if abs(d) > 1e-6 else 0.0]
    else:
        moves = [(d * gap[0] - b * gap[1]) / det, (a * gap[1] - c * gap[0]) / det]
    return [max(-MAX_MOVE, min(MAX_MOVE, move)) for move in moves]


MAX_MOVE = 1.0
"""At most e× (2.7×) per move: a Newton step far outside the probes is not trusted."""


def _done(predictions: Iterable[Predicted]) -> list[Predicted]:
    return [p for p in predictions if p.status == "feasible" and p.ttft_ms and p.tpot_ms]


def load_per_rank(point: Measurement) -> float:
    """Requests in flight per attention rank of the pool that decodes: the batch a decode step
    runs, and how many prompts compete for a prefill pass."""
    pool = point.pools[-1]  # agg, or disagg's decode pool
    return max(1.0, point.concurrency / (pool.replicas * pool.shape.attention_dp))


def _slope(done: Sequence[Predicted], ratio: Callable[[Predicted], float]) -> float:
    """The least-squares slope of log(measured / predicted) against log(load per rank), bounded:
    the exponent that lets the correction follow the load (0 when the load does not vary)."""
    x = [math.log(load_per_rank(p.measurement)) for p in done]
    y = [math.log(ratio(p)) for p in done]
    mean_x, mean_y = statistics.fmean(x), statistics.fmean(y)
    spread = sum((value - mean_x) ** 2 for value in x)
    if spread < 1e-9:
        return 0.0
    slope = sum((a - mean_x) * (b - mean_y) for a, b in zip(x, y)) / spread
    return round(max(-MAX_EXPONENT, min(MAX_EXPONENT, slope)), 4)


def _bounded(value: float) -> float:
    low, high = FACTOR_BOUNDS
    return min(high, max(low, value))


@dataclass(frozen=True)
class CrossValidation:
    folds: int
    before: Errors
    after: Errors

    @property
    def improves(self) -> bool:
        """Held-out error is lower with the calibration (the sum of TTFT and TPOT median errors)."""
        def total(errors_: Errors) -> float:
            return (errors_.ttft_median_ape or 0.0) + (errors_.tpot_median_ape or 0.0)

        return total(self.after) < total(self.before)


def folds_of(points: Sequence[Measurement], folds: int) -> list[list[Measurement]]:
    """Points dealt round robin into `folds` groups, in a stable order (by source)."""
    ordered = sorted(points, key=lambda point: point.source)
    return [ordered[index::folds] for index in range(folds)]


def held_out(points: Sequence[Measurement], run: Predictor, folds: int) -> tuple[list[Predicted], list[dict[str, float]]]:
    """Every point predicted with factors fitted on the other folds only, and each fold's factors."""
    parts = folds_of(points, folds)
    predictions: list[Predicted] = []
    fitted = []
    for index, held in enumerate(parts):
        training = [point for other, part in enumerate(parts) if other != index for point in part]
        fitted.append(fit_factors(training, run))
        predictions += run(held, fitted[-1])
    return predictions, fitted


def cross_validate(points: Sequence[Measurement], run: Predictor, folds: int = 5) -> CrossValidation:
    """Held-out error before and after: each fold predicted with factors fitted on the others."""
    folds = max(2, min(folds, len(points)))
    after, _ = held_out(points, run, folds)
    return CrossValidation(folds, errors(run(points, None)), errors(after))
