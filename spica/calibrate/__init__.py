"""`spica calibrate`: measured points in, a timing calibration out (a data file a search scores with).

    spica calibrate MEASUREMENTS... -o calibration.yaml

MEASUREMENTS are silicon CSVs (AI Configurator's format, `spica.calibrate.measurements`) and
AIPerf profile exports of deployments Spica recommended (`spica.calibrate.aiperf`). Points are
grouped by (model, system, backend); each group gets a prefill and a decode correction and a request
overhead fitted on
all its points, validated by k-fold cross-validation, and refused if held-out error would get
worse. What was fitted on and the held-out error before and after go into the file with the
factors (`spica.evaluation.calibration`).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path
from typing import Sequence, TextIO

from spica.calibrate.fit import Predictors, cross_validate, fit, predictors
from spica.calibrate.formats import read_measurements
from spica.calibrate.measurements import Measurement, Skipped
from spica.core.errors import UserError
from spica.evaluation.calibration import Calibration, Correction
from spica.plan import installed_versions
from spica.search.pool import local_pool

MIN_POINTS = 4
"""Fewer points per (model, system, backend) cannot be split into folds that each fit and test."""
VERSIONED = ("spica", "ai-dynamo", "aisimulate", "aiconfigurator")


def calibrate(
    paths: Sequence[str | Path], *, candidate: str | Path | None = None, folds: int = 5, workers: int = 2, say: TextIO = sys.stderr,
) -> Calibration:
    """Fit, validate and return the calibration of every (model, system, backend) the files measure
    (`candidate`: the candidate.json AIPerf exports measured, when not beside them)."""
    items = [item for path in paths for item in read_measurements(path, candidate)]
    points = [item for item in items if isinstance(item, Measurement)]
    skipped = [item for item in items if isinstance(item, Skipped)]
    if skipped:
        say.write(f"spica calibrate: {len(skipped)} measured rows cannot be replayed as measured and are left out "
                  f"(e.g. {skipped[0].source}: {skipped[0].reason})\n")
    if not points:
        raise UserError(f"{', '.join(map(str, paths))}: no measured point Spica can replay")
    groups: dict[tuple[str, str, str], list[Measurement]] = defaultdict(list)
    for point in points:
        groups[(point.model, point.system, point.backend)].append(point)
    pool = local_pool(workers, workers)
    finished = False
    try:  # an error or a stop kills the workers and their replays at once (ProcessPool.close)
        runs = predictors(pool)
        corrections = tuple(_correction(group, members, runs, folds, say) for group, members in sorted(groups.items()))
        finished = True
    finally:
        pool.close(wait=finished)
    return Calibration(corrections, installed_versions(VERSIONED))


def _correction(
    group: tuple[str, str, str], members: list[Measurement], runs: Predictors, folds: int, say: TextIO,
) -> Correction:
    """One (model, system, backend)'s correction, cross-validated against uncalibrated Spica;
    UserError when it cannot help."""
    model, system, backend = group
    name = f"{model} on {system} with {backend}"
    predicted = runs[None](members, None)
    usable = [p.measurement for p in predicted if p.status == "feasible"]
    lost = [p for p in predicted if p.status != "feasible"]
    if lost:
        say.write(f"spica calibrate: {name}: {len(lost)} of {len(members)} points cannot be replayed "
                  f"(e.g. {lost[0].measurement.source}: {lost[0].reason})\n")
    if len(usable) < MIN_POINTS:
        raise UserError(f"{name}: {len(usable)} replayable measured points; a calibration needs at least {MIN_POINTS}")
    say.write(f"spica calibrate: {name}: fitting on {len(usable)} points, {min(folds, len(usable))}-fold cross-validation\n")
    validation = cross_validate(usable, runs, folds)
    before, after = validation.before, validation.after
    if not validation.improves:
        raise UserError(
            f"{name}: the calibration would make held-out error worse (median TTFT/TPOT error "
            f"{_pct(before.ttft_median_ape)}/{_pct(before.tpot_median_ape)} before, "
            f"{_pct(after.ttft_median_ape)}/{_pct(after.tpot_median_ape)} after): not written"
        )
    found = fit(usable, runs)
    factors = found.factors
    versions = sorted({p.backend_version for p in predicted if p.backend_version})
    say.write(f"spica calibrate: {name}: clients replayed {found.client_start or 'all at once'}, prefill ×{factors['prefill']:.3g}, decode ×{factors['decode']:.3g}, request overhead "
              f"{factors.get('ttft_overhead_ms', 0.0):.3g} ms + {factors.get('ttft_overhead_ms_per_1k_tokens', 0.0):.3g} ms per 1k prompt tokens; held-out "
              f"median TTFT error {_pct(before.ttft_median_ape)} -> {_pct(after.ttft_median_ape)}, "
              f"TPOT {_pct(before.tpot_median_ape)} -> {_pct(after.tpot_median_ape)}\n")
    return Correction(
        model=model, system=system, backend=backend, backend_version=versions[-1] if versions else "", **factors,
        fitted_on={**_fitted_on(usable), "client_start": found.client_start},
        held_out={"folds": validation.folds, "before": before.as_dict(), "after": after.as_dict()},
    )


def _fitted_on(points: Sequence[Measurement]) -> dict:
    sources = sorted({point.source.split(":")[0] for point in points})
    return {
        "points": len(points),
        "sources": sources,
        "modes": sorted({point.mode for point in points}),
        "isl_osl": sorted({f"{point.isl}/{point.osl}" for point in points}),
        "concurrency": [min(point.concurrency for point in points), max(point.concurrency for point in points)],
        "measured_engine_versions": sorted({point.backend_version for point in points if point.backend_version}),
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"
