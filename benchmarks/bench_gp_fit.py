"""GP hyperparameter fit: Vizier's way (raw values, fixed start + 4 random restarts) against
Spica's (log coordinates, fixed start + 8 random restarts), on the same loss.

Both minimise the same Vizier GP marginal likelihood (+ priors) with SciPy's L-BFGS-B, the
restarts in lockstep (spica.study.gp_fit.lockstep_lbfgsb). Data sets: random Spica-shaped
problems (5 continuous + 3 categorical features, 4-14 trials, smooth signal plus noise).
Prints, per fit and in total: batched loss evaluations, seconds, best loss; writes
benchmarks/results/gp_fit.json.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_gp_fit.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from vizier.jax import models

from spica.study import exported
from spica.study import gp_fit as fit
from spica.study.vizier_internals import types

RESULTS = Path(__file__).resolve().parent / "results" / "gp_fit.json"
CONTINUOUS, CATEGORICAL = 5, 3


def problem(trials: int, seed: int) -> types.ModelData:
    rng = np.random.default_rng(seed)
    x = rng.random((trials, CONTINUOUS))
    c = rng.integers(0, 3, (trials, CATEGORICAL))
    y = np.sin(3 * x[:, :1]) + 0.1 * rng.standard_normal((trials, 1)) + (c[:, :1] == 1)
    y = (y - y.mean()) / y.std()
    features = types.ModelInput(fit.pad_rows(x, 16, 0.0), fit.pad_rows(c.astype(types.INT_DTYPE), 16, 0))
    return types.ModelData(features, fit.pad_rows(y, 16, 0.0))


def run(data: types.ModelData, seed: int, *, log: bool, restarts: int) -> dict:
    per_metric = models.VizierGaussianProcess(_dim=types.ContinuousAndCategorical(CONTINUOUS, CATEGORICAL), _num_metrics=1)
    fixed = fit._fixed_start(data)
    layout = tuple((name, np.shape(value)) for name, value in sorted(fixed.items()))
    lower, upper = (fit._flatten(bound, layout) for bound in fit._bounds(per_metric))
    static = (("per_metric", per_metric), ("layout", layout))
    calls = 0

    def raw(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nonlocal calls
        calls += 1
        losses, grads = exported.call(fit._batched_loss_and_grad, (points, (data,)), static)
        finite = np.isfinite(np.asarray(losses))
        return np.where(finite, losses, 1e10), np.where(finite[:, None], np.asarray(grads), 0.0)

    def in_logs(log_points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        losses, grads = raw(np.exp(log_points))
        return losses, grads * np.exp(log_points)

    rng = np.random.default_rng(seed)
    starts = np.vstack([np.clip(fit._flatten(fixed, layout), lower, upper)[None],
                        np.exp(rng.uniform(np.log(lower), np.log(upper), size=(restarts, lower.size)))])
    started = time.monotonic()
    if log:
        solutions = np.exp(fit.lockstep_lbfgsb(in_logs, np.log(starts), np.log(lower), np.log(upper), 500))
    else:
        solutions = fit.lockstep_lbfgsb(raw, starts, lower, upper, 500)
    seconds = time.monotonic() - started
    return {"batches": calls, "seconds": round(seconds, 4), "best_loss": float(raw(solutions)[0].min())}


def main() -> None:
    methods = {"vizier_raw_4": dict(log=False, restarts=4), "spica_log_8": dict(log=True, restarts=8)}
    for settings in methods.values():  # trace (or load) each batch width once, outside the timings
        run(problem(4, 0), 0, **settings)
    rows = []
    for trials in (4, 6, 10, 14):
        for seed in range(5):
            data = problem(trials, seed)
            row = {"trials": trials, "seed": seed}
            row.update({name: run(data, 100 + seed, **settings) for name, settings in methods.items()})
            rows.append(row)
            a, b = row["vizier_raw_4"], row["spica_log_8"]
            print(f"trials {trials:2d} seed {seed}: raw/4 {a['batches']:4d} batches {a['seconds']:.3f}s loss {a['best_loss']:.4f} | "
                  f"log/8 {b['batches']:4d} batches {b['seconds']:.3f}s loss {b['best_loss']:.4f}", flush=True)
    summary = {
        name: {
            "batches": sum(row[name]["batches"] for row in rows),
            "seconds": round(sum(row[name]["seconds"] for row in rows), 3),
        }
        for name in methods
    }
    summary["log_better_or_equal"] = sum(row["spica_log_8"]["best_loss"] <= row["vizier_raw_4"]["best_loss"] + 1e-3 for row in rows)
    summary["fits"] = len(rows)
    print(json.dumps(summary))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"summary": summary, "fits": rows}, indent=1))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
