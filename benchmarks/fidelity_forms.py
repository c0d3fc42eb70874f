"""Which form of TTFT correction do the silicon measurements support? (docs/fidelity.md)

Every point of bench_fidelity's table groups is replayed with no calibration, once each way a
closed loop can start (every client at once, staggered) and once with its lengths drawn as
InferenceX's client draws them (uniform in [0.8·L, L], every client at once). Then, per group,
measured TTFT is modelled from the replayed one in a few forms — a factor alone; an overhead
outside the engine plus a factor; that plus a number of the replay's own decode steps (time a
first token waits in the engine after its prefill, e.g. for a streaming interval or for
attention-DP ranks to balance) — each fitted on one half of the group's points (minimising mean
|log error|) and scored on the other half: the median |predicted / measured - 1| held out, over
both halves. With --per-version each engine build's points are halved and fitted apart (the
builds with too few points together, as `bench_fidelity.py --per-version` calibrates them) and
the held-out errors of every build pooled.

This is a first-order look (the factor here scales the replayed TTFT, where a calibration scales
the timing Replay runs on); `bench_fidelity.py --table --calibrate` measures the calibration that
came of it end to end.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/fidelity_forms.py [--only TEXT] [--per-version] [--workers N]
Writes benchmarks/results/fidelity_forms.json (with --only: fidelity_forms_<text>.json, with
--per-version: ..._per_version.json) and prints the table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.optimize

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_fidelity import RESULTS, TABLE_GROUPS, _calibration_groups, _name, silicon_csv  # noqa: E402
from spica.calibrate.fit import folds_of, predictors  # noqa: E402
from spica.calibrate.measurements import Measurement, read_silicon_csv  # noqa: E402
from spica.search.pool import EvaluationPool, local_pool  # noqa: E402

Form = Callable[[np.ndarray, dict[str, np.ndarray]], np.ndarray]


def _steps(k: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    """An overhead, k[2] of the replay's mean decode steps (its TPOT), and a factor on its TTFT."""
    return abs(k[1]) + abs(k[2]) * p["tpot"] + math.exp(k[0]) * p["ttft"]

FORMS: dict[str, tuple[str, Form, int]] = {
    "factor, at once": ("at_once", lambda k, p: math.exp(k[0]) * p["ttft"], 1),
    "overhead + factor, at once": ("at_once", lambda k, p: abs(k[1]) + math.exp(k[0]) * p["ttft"], 2),
    "factor, staggered": ("staggered", lambda k, p: math.exp(k[0]) * p["ttft"], 1),
    "overhead + factor, staggered": ("staggered", lambda k, p: abs(k[1]) + math.exp(k[0]) * p["ttft"], 2),
    "overhead + per-1k overhead + factor, staggered":
        ("staggered", lambda k, p: abs(k[1]) + abs(k[2]) * p["isl_k"] + math.exp(k[0]) * p["ttft"], 3),
    "factor, InferenceX lengths": ("inferencex", lambda k, p: math.exp(k[0]) * p["ttft"], 1),
    "overhead + factor, InferenceX lengths": ("inferencex", lambda k, p: abs(k[1]) + math.exp(k[0]) * p["ttft"], 2),
    "overhead + decode steps + factor, at once": ("at_once", _steps, 3),
    "overhead + decode steps + factor, staggered": ("staggered", _steps, 3),
    "overhead + decode steps + factor, InferenceX lengths": ("inferencex", _steps, 3),
}
"""name: (traffic replayed, measured TTFT as a function of (numbers, the replayed points), how many numbers)."""
INFERENCEX_RANGE_RATIO = 0.8
"""InferenceX's client (`--random-range-ratio 0.8` in its benchmarks/*.sh) draws each length uniform in [0.8·L, L]."""


def _inferencex_lengths(pool: EvaluationPool) -> Callable:
    """A predictor replaying each point with its lengths drawn uniform in [r·L, L], r = INFERENCEX_RANGE_RATIO.
    Spica draws a synthetic length in M·[1-s, 1+s] around its mean M, so M = (1+r)/2·L and s = (1-r)/(1+r)."""
    ratio = INFERENCEX_RANGE_RATIO
    middle = (1 + ratio) / 2
    run = predictors(pool, length_spread=round((1 - ratio) / (1 + ratio), 6))[None]

    def replay(points: list[Measurement], factors: object) -> list:
        return run([dataclasses.replace(point, isl=round(point.isl * middle), osl=round(point.osl * middle)) for point in points], factors)

    return replay


def arrays(points: list[dict]) -> dict[str, np.ndarray]:
    return {key: np.array([point[key] for point in points]) for key in points[0]}


def fitted(form: Form, count: int, points: dict[str, np.ndarray]) -> np.ndarray:
    """The numbers minimising mean |log(form / measured)|, from a few starts (overheads in ms)."""
    def loss(k: np.ndarray) -> float:
        return float(np.mean(np.abs(np.log(np.maximum(form(k, points), 1e-9) / points["measured"]))))

    starts = [[0.0, 20.0, 10.0][:count], [-0.5, 60.0, 40.0][:count]]
    ends = [scipy.optimize.minimize(loss, start, method="Nelder-Mead", options={"maxiter": 4000}) for start in starts]
    return min(ends, key=lambda end: end.fun).x


def held_out_errors(form: Form, count: int, points: list[dict], halves: list[list[int]]) -> list[float]:
    """|predicted / measured - 1| of every point, each predicted by numbers fitted on the other half."""
    errors: list[float] = []
    for train, test in (halves, halves[::-1]):
        numbers = fitted(form, count, arrays([points[i] for i in train]))
        part = arrays([points[i] for i in test])
        errors += list(np.abs(form(numbers, part) / part["measured"] - 1))
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=None, help="only the table groups whose name holds this text (e.g. DeepSeek)")
    parser.add_argument("--per-version", action="store_true",
                        help="halve and fit each engine build's points apart (bench_fidelity.py --per-version's parts)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    chosen = [group for group in TABLE_GROUPS if args.only is None or args.only.lower() in _name(group).lower()]
    items = read_silicon_csv(silicon_csv())
    groups: dict[tuple, list[Measurement]] = defaultdict(list)
    for item in items:
        if isinstance(item, Measurement) and item.group in chosen:
            groups[item.group].append(item)
    pool = local_pool(args.workers, args.workers)
    report: dict[str, dict[str, float]] = {}
    try:
        runs = predictors(pool)
        inferencex = _inferencex_lengths(pool)
        for group in chosen:
            parts = [[point for fold in folds_of(part, 2) for point in fold]  # bench_fidelity's halves, in order
                     for part in _calibration_groups(groups[group], args.per_version)]
            members = [point for part in parts for point in part]
            replays = {"at_once": runs[None](members, None), "staggered": runs["staggered"](members, None),
                       "inferencex": [dataclasses.replace(item, measurement=point) for item, point in
                                      zip(inferencex(members, None), members)]}
            errors: dict[str, list[float]] = defaultdict(list)
            first = 0
            for part in parts:
                half = len(folds_of(part, 2)[0])
                kept = [i for i in range(first, first + len(part))
                        if all(replays[start][i].status == "feasible" for start in replays)]
                halves = [[j for j, i in enumerate(kept) if i < first + half], [j for j, i in enumerate(kept) if i >= first + half]]
                for name, (start, form, count) in FORMS.items():
                    points = [{"ttft": replays[start][i].ttft_ms, "tpot": replays[start][i].tpot_ms or 0.0,
                               "measured": members[i].ttft_ms, "isl_k": members[i].isl / 1000.0} for i in kept]
                    errors[name] += held_out_errors(form, count, points, halves)
                first += len(part)
            report[_name(group)] = {"points": len(errors[next(iter(FORMS))]), "parts": len(parts),
                                    **{name: round(float(np.median(errors[name])), 3) for name in FORMS}}
            print(_name(group), report[_name(group)], flush=True)
    finally:
        pool.close()
    name = "fidelity_forms" if args.only is None else f"fidelity_forms_{args.only.lower().replace(' ', '_')}"
    (RESULTS / f"{name}{'_per_version' if args.per_version else ''}.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
