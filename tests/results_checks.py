"""What a results folder must say about the search that wrote it, read from the folder alone (a
search run in a container or a job leaves nothing else). Imported by name (tests/ is on the path
through its conftest.py)."""

from __future__ import annotations

import csv
import json
import struct
from pathlib import Path
from typing import Any

import yaml


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def check_results_folder(folder: Path) -> list[dict[str, Any]]:
    """Assert that every file holds this search's own figures, not merely something; returns its ledger.

    One ledger row per evaluation (json, csv, journal, tallies alike); best.csv ranks the best
    feasible candidate of the ledger first (scalar goal) and lists what summary.json selected;
    plot.png has the figure's size; deploy/ holds one folder per selected candidate, in rank
    order, each with that candidate's score, unrolled config, Replay call and manifest."""
    from spica.plan import load_plan
    from spica.results.plot import DPI, FIGSIZE

    goal = load_plan(folder / "plan.yaml").config.goal
    ledger = json.loads((folder / "ledger.json").read_text())
    summary = json.loads((folder / "summary.json").read_text())
    evaluations = (folder / "evaluations.jsonl").read_text().splitlines()
    counted = sum(summary["tallies"][status] for status in ("feasible", "infeasible", "failed", "unsupported", "screened"))
    assert len(ledger) == len(_rows(folder / "ledger.csv")) == len(evaluations) == counted > 0
    best = _rows(folder / "best.csv")
    assert [row["key"] for row in best][: len(summary["selected"])] == summary["selected"] != []
    feasible = [entry for entry in ledger if entry["status"] == "feasible"]
    if goal.target != "pareto":
        top = max(feasible, key=lambda entry: entry["score"])  # signed: higher is better, a minimised value negated
        assert (best[0]["key"], float(best[0][goal.target])) == (top["key"], top["objectives"][goal.target])
        assert [int(row["rank"]) for row in best] == list(range(1, len(best) + 1))
    png = (folder / "plot.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (FIGSIZE[0] * DPI, FIGSIZE[1] * DPI)
    folders = sorted(path.name for path in (folder / "deploy").iterdir())
    assert folders == [f"{rank:02d}-{key}" for rank, key in enumerate(summary["selected"], 1)]
    by_key = {entry["key"]: entry for entry in ledger}
    for name, key in zip(folders, summary["selected"]):
        entry, written = by_key[key], folder / "deploy" / name
        candidate = json.loads((written / "candidate.json").read_text())
        assert (candidate["key"], candidate["score"], candidate["config"]) == (key, entry["score"], entry["unrolled"])
        assert json.loads((written / "replay.json").read_text()) == entry["replay_input"]
        if key not in summary["undeployable"]:  # scored, but its engine would refuse it: no manifest
            assert yaml.safe_load((written / "dynamo.yaml").read_text())["metadata"]["annotations"]["spica/candidate"] == key
    return ledger
