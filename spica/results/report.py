"""Write a search's results folder: plan, ledger, views, plot, manifests, replay inputs.

    plan.yaml               the frozen plan that produced these results
    evaluations.jsonl       every finished evaluation as it happened (resume source)
    asks.jsonl              the studies' designers' answers (resume source; spica/results/ledger.py)
    ledger.json / .csv      every candidate: status, reason, metrics, unrolled config
    best.csv                the ranked top (scalar goal) or the Pareto front
    summary.json            tallies, timings, selection, predictor sub-sweep, engine versions, the
                            goal and the notes the reader needs (what report.html and
                            `spica compare` read besides the ledger and the plan)
    plot.png                score vs GPUs, or the front
    report.html             the same, one page to open offline (spica/results/page.py)
    deploy/NN-<key>/        for each selected candidate: dynamo.yaml (DynamoGraphDeployment,
                            spica.deploy.manifest), replay.json (the Replay call that
                            reproduces its score) and candidate.json (the unrolled sample,
                            upstream's keys, with what it scored)
"""

from __future__ import annotations

import json
import shutil
import logging
from pathlib import Path
from typing import Any, Mapping, Sequence

from spica.config.deploy import DeploySettings
from spica.core.candidate import Candidate
from spica.deploy.manifest import manifest_yaml
from spica.deploy.versions import engine_versions
from spica.evaluation.score import MINIMIZED
from spica.plan import Plan
from spica.results.ledger import write_ledger
from spica.results.outcome import SearchResults
from spica.results.page import write_report
from spica.results.plot import plot_results
from spica.results.table import UNITS, result_notes
from spica.space.branches import Branch

DEPLOY_TOP_N = 5
log = logging.getLogger(__name__)


def _selected(plan: Plan, best: Sequence[Candidate]) -> list[Candidate]:
    return list(best) if plan.config.goal.target == "pareto" else list(best)[:DEPLOY_TOP_N]


def write_results(
    folder: Path,
    plan: Plan,
    results: SearchResults,
    *,
    predictor_report: Mapping[str, Any],
    timings: Mapping[str, float],
    branches: Sequence[Branch],
    deploy: DeploySettings | None = None,
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    plan.write(folder / "plan.yaml")
    write_ledger(folder, results.ledger)
    selected = _selected(plan, list(results))
    write_ledger_view(folder / "best.csv", selected)
    config = plan.config
    title = f"{config.search_space.model_name} on {', '.join(config.search_space.hardware_skus)} — {config.goal.target}"
    plot_results(
        folder / "plot.png",
        results.ledger,
        objectives=config.goal.objectives,
        selected=selected,
        pareto=config.goal.target == "pareto",
        title=title,
        sla_line=next(iter(config.goal.sla_bounds.items()), None) if config.goal.sla_constrained else None,
    )
    undeployable: dict[str, str] = {}
    shutil.rmtree(folder / "deploy", ignore_errors=True)  # it holds this run's selection only
    for index, candidate in enumerate(selected, 1):
        target = folder / "deploy" / f"{index:02d}-{candidate.key}"
        target.mkdir(parents=True, exist_ok=True)
        try:
            (target / "dynamo.yaml").write_text(manifest_yaml(candidate, deploy, sla=config.goal.sla))
        except ValueError as exc:  # scored, but its engine would refuse it (e.g. TRT-LLM's token/block rule)
            undeployable[candidate.key] = str(exc)
            log.warning("%s: no manifest: %s", target.name, exc)
        (target / "replay.json").write_text(json.dumps(candidate.replay_input, indent=1, default=str))
        provenance = {"key": candidate.key, "config": candidate.config, "score": candidate.score,
                      "objectives": candidate.objectives, "metrics": candidate.metrics, "plan_fingerprint": plan.fingerprint,
                      **({"spread": candidate.provenance["spread"]} if "spread" in candidate.provenance else {})}
        (target / "candidate.json").write_text(json.dumps(provenance, indent=1, default=str))
    summary = {
        "plan_fingerprint": plan.fingerprint,
        "tallies": results.tallies,
        "timings": dict(timings),
        "selected": [candidate.key for candidate in selected],
        "branches": [{"deployment_mode": branch.mode, "systems": branch.systems, "backends": list(branch.backends), "configs": len(branch.configs)} for branch in branches],
        "predictor_sub_sweep": dict(predictor_report),
        "engine_versions": engine_versions(candidate.unrolled for candidate in selected),
        "undeployable": undeployable,
        "calibration": plan.calibration,  # null: scored uncalibrated
        "goal": {
            "title": title, "target": str(config.goal.target), "objectives": config.goal.objectives,
            "pareto": config.goal.target == "pareto", "units": {name: UNITS[name] for name in config.goal.objectives},
            "minimized": [name for name in config.goal.objectives if name in MINIMIZED],
            "sla_bounds": config.goal.sla_bounds, "sla_constrained": config.goal.sla_constrained,
        },
        "notes": result_notes(config, plan.calibration, results.tallies, timings, selected),
    }
    (folder / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    write_report(folder)
    return folder


def write_ledger_view(path: Path, candidates: Sequence[Candidate]) -> None:
    """A small CSV of the selected candidates: rank, key, label, GPUs and objectives."""
    import csv

    names = sorted({name for candidate in candidates for name in candidate.objectives})
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["rank", "key", "deployment", "used_gpus", *names])
        for index, candidate in enumerate(candidates, 1):
            writer.writerow([index, candidate.key, candidate.label(), candidate.used_gpus, *[candidate.objectives.get(n) for n in names]])
