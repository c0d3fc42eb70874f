"""Which form of TTFT correction do the silicon measurements support? (docs/fidelity.md)

Every point of bench_fidelity's table groups is replayed once each way a closed loop can start
(every client at once, staggered) with no calibration. Then, per group, measured TTFT is modelled
from the replayed one in a few forms — a factor alone, or an overhead outside the engine plus a
factor — each fitted on one half of the group's points (minimising mean |log error|) and scored
on the other half: the median |predicted / measured - 1| held out, over both halves.

This is a first-order look (the factor here scales the replayed TTFT, where a calibration scales
the timing Replay runs on); `bench_fidelity.py --table --calibrate` measures the calibration that
came of it end to end.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/fidelity_forms.py
Writes benchmarks/results/fidelity_forms.json and prints the table.
"""

from __future__ import annotations

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

from bench_fidelity import RESULTS, TABLE_GROUPS, _name, silicon_csv  # noqa: E402
from spica.calibrate.fit import folds_of, predictors  # noqa: E402
from spica.calibrate.measurements import Measurement, read_silicon_csv  # noqa: E402
from spica.search.pool import local_pool  # noqa: E402

Form = Callable[[np.ndarray, dict[str, np.ndarray]], np.ndarray]
FORMS: dict[str, tuple[str, Form, int]] = {
    "factor, at once": ("at_once", lambda k, p: math.exp(k[0]) * p["ttft"], 1),
    "overhead + factor, at once": ("at_once", lambda k, p: abs(k[1]) + math.exp(k[0]) * p["ttft"], 2),
    "factor, staggered": ("staggered", lambda k, p: math.exp(k[0]) * p["ttft"], 1),
    "overhead + factor, staggered": ("staggered", lambda k, p: abs(k[1]) + math.exp(k[0]) * p["ttft"], 2),
    "overhead + per-1k overhead + factor, staggered":
        ("staggered", lambda k, p: abs(k[1]) + abs(k[2]) * p["isl_k"] + math.exp(k[0]) * p["ttft"], 3),
}
"""name: (client start replayed, measured TTFT as a function of (numbers, the replayed points), how many numbers)."""


def arrays(points: list[dict]) -> dict[str, np.ndarray]:
    return {key: np.array([point[key] for point in points]) for key in points[0]}


def fitted(form: Form, count: int, points: dict[str, np.ndarray]) -> np.ndarray:
    """The numbers minimising mean |log(form / measured)|, from a few starts (overheads in ms)."""
    def loss(k: np.ndarray) -> float:
        return float(np.mean(np.abs(np.log(np.maximum(form(k, points), 1e-9) / points["measured"]))))

    starts = [[0.0, 20.0, 10.0][:count], [-0.5, 60.0, 40.0][:count]]
    ends = [scipy.optimize.minimize(loss, start, method="Nelder-Mead", options={"maxiter": 4000}) for start in starts]
    return min(ends, key=lambda end: end.fun).x


def held_out_error(form: Form, count: int, points: list[dict], halves: list[list[int]]) -> float:
    errors: list[float] = []
    for train, test in (halves, halves[::-1]):
        numbers = fitted(form, count, arrays([points[i] for i in train]))
        part = arrays([points[i] for i in test])
        errors += list(np.abs(form(numbers, part) / part["measured"] - 1))
    return float(np.median(errors))


def main() -> None:
    items = read_silicon_csv(silicon_csv())
    groups: dict[tuple, list[Measurement]] = defaultdict(list)
    for item in items:
        if isinstance(item, Measurement) and item.group in TABLE_GROUPS:
            groups[item.group].append(item)
    pool = local_pool(2, 2)
    report: dict[str, dict[str, float]] = {}
    try:
        runs = predictors(pool)
        for group in TABLE_GROUPS:
            members = [point for fold in folds_of(groups[group], 2) for point in fold]  # bench_fidelity's halves, in order
            replays = {"at_once": runs[None](members, None), "staggered": runs["staggered"](members, None)}
            kept = [i for i in range(len(members)) if all(replays[start][i].status == "feasible" for start in replays)]
            half = len(folds_of(groups[group], 2)[0])
            halves = [[j for j, i in enumerate(kept) if i < half], [j for j, i in enumerate(kept) if i >= half]]
            report[_name(group)] = {"points": len(kept)}
            for name, (start, form, count) in FORMS.items():
                points = [{"ttft": replays[start][i].ttft_ms, "measured": members[i].ttft_ms, "isl_k": members[i].isl / 1000.0}
                          for i in kept]
                report[_name(group)][name] = round(held_out_error(form, count, points, halves), 3)
            print(_name(group), report[_name(group)], flush=True)
    finally:
        pool.close()
    (RESULTS / "fidelity_forms.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
