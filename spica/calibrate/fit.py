"""Fit a timing calibration on measured points, and say how much it helps on points it never saw.

The correction is six numbers per (model, system, backend): a prefill pass of n new tokens takes
prefill·(n/1024)^prefill_exponent times what AIS says and a decode step of b requests
decode·(b/64)^decode_exponent times, applied to the timing table Replay runs on (so Replay still
schedules, batches and queues every request; only its timing inputs change); and a request
overhead, ttft_overhead_ms + ttft_overhead_ms_per_1k_tokens per thousand prompt tokens, added to
every TTFT outside the engine. Positive factors, bounded exponents and non-negative overheads,
with times kept non-decreasing in work, keep the timing monotone, and each reads as a sentence
("this cluster prefills 1,024 tokens 1.9× as long as AIS says, and answers 40 ms later").

Measured closed loops are replayed both ways a closed loop can start (CLIENT_STARTS) and the
fit keeps the one its points fit better: benchmark clients that drift apart measure a prompt
prefilled nearly alone plus time outside the engine, and replayed in lock-step their every wave
of prompts is prefilled as one burst that no timing correction fits; others stay in step
(docs/fidelity.md has the figures). The calibration records which (`fitted_on.client_start`).

Fitting: one replay of every point without correction and one probe per factor learn how each
point's TTFT and TPOT respond to each factor (`Response`); the six numbers that minimise the
mean |log(predicted / measured)| of both under that first-order model are replayed, the overhead
refitted to those replays, and the model solved once more from them. Of the numbers replayed
(no correction included), the one with the smallest median TTFT + TPOT error is kept, so a fit
is never worse on its own points.

Held-out error comes from k-fold cross-validation: each fold is predicted by factors fitted on
the others, and a fit that makes held-out error worse than uncalibrated Spica is refused
(spica/calibrate/__init__.py).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import scipy.optimize

from spica.calibrate.measurements import Measurement
from spica.calibrate.replayed import Predicted, predict
from spica.evaluation.calibration import MAX_EXPONENT, MAX_OVERHEAD_MS, OVERHEADS, PHASES
from spica.evaluation.timing import SCALE_REFERENCE_BATCH, SCALE_REFERENCE_TOKENS
from spica.search.pool import EvaluationPool, InlinePool, run_all

FACTOR_BOUNDS = (0.1, 10.0)
"""A factor outside these is not a calibration but a different machine: the fit stops there."""

Factors = Mapping[str, float]  # prefill, prefill_exponent, decode, decode_exponent and, when fitted, the overheads
CLIENT_STARTS = (None, "staggered")
"""How measured closed loops may be replayed to fit: every client at once (Spica's default) or
staggered (`workload.client_start`); each fit keeps the one its points fit better."""
Predictor = Callable[[Sequence[Measurement], Factors | None], list[Predicted]]
Predictors = Mapping[str | None, Predictor]


def scale_of(factors: Factors | None, mode: str) -> dict | None:
    """The candidate's `timing_calibration` entry for these factors (every role gets both)."""
    if factors is None:
        return None
    roles = ("agg",) if mode == "agg" else ("prefill", "decode")
    return {"id": "fitting", "roles": {role: dict(factors) for role in roles}}


def _predict_one(item: tuple[Measurement, Factors | None, Mapping[str, Any]]) -> Predicted:
    point, factors, options = item
    return predict(point, scale_of(factors, point.mode), **options)


def predictors(pool: EvaluationPool | None = None, **options: Any) -> dict[str | None, Predictor]:
    """A predictor per client start of CLIENT_STARTS (None: Spica's default, every client at once)."""
    return {start: predictor(pool, **options, **({"client_start": start} if start else {})) for start in CLIENT_STARTS}


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


@dataclass(frozen=True)
class Fit:
    """A fitted correction, the client start its points were replayed with, and its error on them
    (median TTFT + TPOT |predicted / measured - 1|)."""

    factors: dict[str, float]
    client_start: str | None
    error: float


def fit(points: Sequence[Measurement], runs: Predictors) -> Fit:
    """The correction, under whichever client start (CLIENT_STARTS) fits `points` better."""
    fits = []
    for start, run in runs.items():
        factors, error = fit_factors(points, run)
        fits.append(Fit(factors, start, error))
    return min(fits, key=lambda found: found.error)


def fit_factors(points: Sequence[Measurement], run: Predictor) -> tuple[dict[str, float], float]:
    """The correction that leaves the smallest median TTFT + TPOT error on `points` as `run`
    replays them, and that error (module docstring)."""
    base = run(points, IDENTITY)
    probes = [run(points, {**IDENTITY, phase: math.exp(PROBE)}) for phase in PHASES]
    kept = [index for index, item in enumerate(base) if all(_feasible(replays[index]) for replays in (base, *probes))]
    if not kept:
        raise ValueError("none of the measured points could be replayed")
    elasticity = [_elasticity(base[i], probes[0][i], probes[1][i]) for i in kept]
    response = Response([base[i] for i in kept], elasticity, IDENTITY)
    best = (response.error({**IDENTITY, **NO_OVERHEAD}), dict(IDENTITY))  # no correction at all
    numbers = {**IDENTITY, **response.overhead()}
    for _ in range(SOLVE_ROUNDS):
        timing = {name: value for name, value in response.solve(numbers).items() if name in IDENTITY}
        replays = run(points, timing)
        if not all(_feasible(replays[i]) for i in kept):
            break  # a correction that loses points is no fit for them
        response = Response([replays[i] for i in kept], elasticity, timing)
        numbers = {**timing, **response.overhead()}  # the overhead that fits the replays themselves
        best = min(best, (response.error(numbers), numbers), key=lambda pair: pair[0])
    return best[1], best[0]


IDENTITY = {"prefill": 1.0, "prefill_exponent": 0.0, "decode": 1.0, "decode_exponent": 0.0}
NO_OVERHEAD = {name: 0.0 for name in OVERHEADS}
PROBE = 0.3
"""log of the factor each probe applies to learn how TTFT and TPOT respond (×1.35)."""
MAX_ELASTICITY = 2.0
SOLVE_ROUNDS = 2
"""Solve, replay, solve again from those replays (5 replays of every point in all)."""


def _feasible(item: Predicted) -> bool:
    return item.status == "feasible" and bool(item.ttft_ms) and bool(item.tpot_ms)


def _elasticity(base: Predicted, prefill: Predicted, decode: Predicted) -> tuple[float, float, float, float]:
    """How log TTFT and log TPOT move per unit of log prefill and log decode factor."""
    def slope(after: float, before: float) -> float:
        return max(0.0, min(MAX_ELASTICITY, math.log(after / before) / PROBE))

    return (slope(prefill.ttft_ms, base.ttft_ms), slope(decode.ttft_ms, base.ttft_ms),
            slope(prefill.tpot_ms, base.tpot_ms), slope(decode.tpot_ms, base.tpot_ms))


class Response:
    """The first-order model the fit solves on: replays at the timing `replayed`, and how each
    point's TTFT and TPOT move away from them. A prefill pass of a staggered client holds about
    its own prompt, so a prefill exponent scales point i's prefill by (isl_i/1024)^e; a decode step
    holds the requests in flight per rank (`load_per_rank`), so the decode exponent scales by
    (load_i/64)^e. The overhead is added outside the engine, to TTFT only."""

    def __init__(self, replays: Sequence[Predicted], elasticity: Sequence[tuple[float, ...]], replayed: Factors) -> None:
        points = [item.measurement for item in replays]
        self.replayed = dict(replayed)
        self.ttft = np.array([item.ttft_ms for item in replays])
        self.tpot = np.array([item.tpot_ms for item in replays])
        self.elasticity = np.array(elasticity)
        self.measured_ttft = np.array([point.ttft_ms for point in points])
        self.measured_tpot = np.array([point.tpot_ms for point in points])
        self.prompt_k = np.array([point.isl for point in points]) / 1000.0
        self.log_prompt = np.log(np.array([point.isl for point in points]) / SCALE_REFERENCE_TOKENS)
        self.log_batch = np.log(np.array([load_per_rank(point) for point in points]) / SCALE_REFERENCE_BATCH)

    def predicted(self, numbers: Factors) -> tuple[np.ndarray, np.ndarray]:
        """TTFT and TPOT the model predicts at `numbers` (timing factors and overheads)."""
        old, new = self.replayed, numbers
        prefill = (math.log(new["prefill"] / old["prefill"])
                   + (new["prefill_exponent"] - old["prefill_exponent"]) * self.log_prompt)
        decode = (math.log(new["decode"] / old["decode"])
                  + (new["decode_exponent"] - old["decode_exponent"]) * self.log_batch)
        a, b, u, v = self.elasticity.T
        ttft = new["ttft_overhead_ms"] + new["ttft_overhead_ms_per_1k_tokens"] * self.prompt_k + self.ttft * np.exp(a * prefill + b * decode)
        return ttft, self.tpot * np.exp(u * prefill + v * decode)

    def error(self, numbers: Factors) -> float:
        """Median |predicted / measured - 1| of TTFT plus that of TPOT: what a fit is judged by."""
        ttft, tpot = self.predicted(numbers)
        return float(np.median(np.abs(ttft / self.measured_ttft - 1)) + np.median(np.abs(tpot / self.measured_tpot - 1)))

    def _loss(self, numbers: Factors) -> float:
        """Mean |log(predicted / measured)| of TTFT plus that of TPOT: smooth enough to descend."""
        ttft, tpot = self.predicted(numbers)
        return float(np.mean(np.abs(np.log(ttft / self.measured_ttft))) + np.mean(np.abs(np.log(tpot / self.measured_tpot))))

    def free(self) -> tuple[str, ...]:
        """What these points can tell apart: the exponents and the per-token overhead need prompts
        (loads) of more than one size and enough points; otherwise they stay 0 rather than fit noise."""
        names = ["prefill", "decode", "ttft_overhead_ms"]
        if len(self.prompt_k) >= MIN_POINTS_FOR_SHAPE and len(set(self.prompt_k)) > 1:
            names += ["prefill_exponent", "ttft_overhead_ms_per_1k_tokens"]
        if len(self.log_batch) >= MIN_POINTS_FOR_SHAPE and len(set(self.log_batch)) > 1:
            names += ["decode_exponent"]
        return tuple(names)

    def overhead(self) -> dict[str, float]:
        """The request overhead that best fits these replays as they are (timing unchanged)."""
        found = self.minimise({**self.replayed, **NO_OVERHEAD}, [name for name in self.free() if name in OVERHEADS])
        return {name: round(found[name], 2) for name in OVERHEADS}

    def solve(self, start: Factors) -> dict[str, float]:
        """Timing factors, exponents and overhead that minimise the model's loss, within bounds and
        within TRUST of the factors replayed (a first-order model is not trusted far from its replays)."""
        return {name: round(value, 4) for name, value in self.minimise(start, self.free(), self._trusted).items()}

    def _trusted(self, numbers: dict[str, float]) -> dict[str, float]:
        for phase in PHASES:
            here = self.replayed[phase]
            numbers[phase] = min(here * math.exp(TRUST), max(here * math.exp(-TRUST), numbers[phase]))
        return numbers

    def minimise(self, start: Factors, free: Sequence[str], within: Callable[[dict], dict] = dict) -> dict[str, float]:
        """`start` with the `free` numbers moved to minimise the loss (Nelder-Mead in PARAMETERS' units),
        each trial kept `within` bounds."""
        def numbers(x: np.ndarray) -> dict[str, float]:
            return within({**start, **{name: PARAMETERS[name][0](value) for name, value in zip(free, x)}})

        first = np.array([PARAMETERS[name][1](start[name]) for name in free])
        simplex = np.vstack([first, first + SIMPLEX_STEP * np.eye(len(free))])
        found = scipy.optimize.minimize(lambda x: self._loss(numbers(x)), first, method="Nelder-Mead",
                                        options={"initial_simplex": simplex, "maxiter": 4000, "xatol": 1e-4, "fatol": 1e-7})
        return numbers(found.x)


MIN_POINTS_FOR_SHAPE = 8
TRUST = 0.5
"""How far (in log) one solve may move a factor from its replays: ×1.65 (two solves: ×2.7)."""
SIMPLEX_STEP = 0.1
"""The first moves: ×1.1 on a factor, 0.1 on an exponent, 10 ms on an overhead."""


def _overhead(value: float) -> float:
    return min(MAX_OVERHEAD_MS, abs(float(value)))


def _exponent(value: float) -> float:
    return max(-MAX_EXPONENT, min(MAX_EXPONENT, float(value)))


PARAMETERS: dict[str, tuple[Callable[[float], float], Callable[[float], float]]] = {
    "prefill": (lambda x: _bounded(math.exp(x)), math.log),  # (value of the search variable, variable of a value)
    "prefill_exponent": (_exponent, float),
    "decode": (lambda x: _bounded(math.exp(x)), math.log),
    "decode_exponent": (_exponent, float),
    "ttft_overhead_ms": (lambda x: _overhead(100.0 * x), lambda ms: ms / 100.0),
    "ttft_overhead_ms_per_1k_tokens": (lambda x: _overhead(100.0 * x), lambda ms: ms / 100.0),
}


def load_per_rank(point: Measurement) -> float:
    """Requests in flight per attention rank of the pool that decodes: the batch a decode step
    runs, and how many prompts compete for a prefill pass."""
    pool = point.pools[-1]  # agg, or disagg's decode pool
    return max(1.0, point.concurrency / (pool.replicas * pool.shape.attention_dp))


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


def held_out(points: Sequence[Measurement], runs: Predictors, folds: int) -> tuple[list[Predicted], list[Fit]]:
    """Every point predicted with a correction fitted on the other folds only (replayed with the
    client start that fit chose), and each fold's fit."""
    parts = folds_of(points, folds)
    predictions: list[Predicted] = []
    fitted = []
    for index, held in enumerate(parts):
        training = [point for other, part in enumerate(parts) if other != index for point in part]
        fitted.append(fit(training, runs))
        predictions += runs[fitted[-1].client_start](held, fitted[-1].factors)
    return predictions, fitted


def cross_validate(points: Sequence[Measurement], runs: Predictors, folds: int = 5) -> CrossValidation:
    """Held-out error before (Spica uncalibrated, as a search replays: every client at once) and
    after (each fold predicted with a correction fitted on the others)."""
    folds = max(2, min(folds, len(points)))
    after, _ = held_out(points, runs, folds)
    return CrossValidation(folds, errors(runs[None](points, None)), errors(after))
