"""report.html and compare.html: one self-contained page each, that opens offline.

The page is static HTML with its data as JSON and a small script of Spica's own
(spica/results/page.js, page.css) inlined: no plotting library, no network request, a few
hundred kilobytes that can be committed beside the ledger. Every string from the user's input
(model names, paths, trace names, reasons) reaches the page only as JSON data that the script
puts in as text, never as markup; and the page's Content-Security-Policy lets no script run
but its own (by its hash) and no request leave the file.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from pathlib import Path
from typing import Any, Mapping

from spica.core.candidate import Candidate
from spica.results.saved import SavedSearch
from spica.results.table import knob_summary

ASSETS = Path(__file__).resolve().parent
DEPLOY_FILES = {"manifest": "dynamo.yaml", "replay": "replay.json", "candidate": "candidate.json"}
FOLDER_FILES = ("ledger.csv", "ledger.json", "best.csv", "summary.json", "plan.yaml", "plot.png", "evaluations.jsonl")


def _finite_only(value: Any) -> Any:
    """JSON has no NaN or infinity (JSON.parse refuses them): they show as blanks."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(key): _finite_only(inner) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_only(inner) for inner in value]
    return value


def _json_for_script(data: Any) -> str:
    """JSON that cannot end its <script> element or open another one, whatever its strings hold."""
    text = json.dumps(_finite_only(data), default=str, allow_nan=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def html_page(view: str, data: Mapping[str, Any]) -> str:
    """The page: `view` is the script's entry ("report" or "compare"), `data` its JSON."""
    script = (ASSETS / "page.js").read_text() + f"\nSpica.{view}(JSON.parse(document.getElementById('spica-data').textContent));\n"
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src 'self'"
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>Spica {view}</title>\n<style>\n{(ASSETS / 'page.css').read_text()}</style>\n</head>\n<body>\n"
        "<main id=\"app\"><noscript>This page draws itself with JavaScript; the same results are in ledger.csv and best.csv.</noscript></main>\n"
        f"<script type=\"application/json\" id=\"spica-data\">{_json_for_script(data)}</script>\n"
        f"<script>{script}</script>\n</body>\n</html>\n"
    )


def _numbers(values: Mapping[str, Any]) -> dict[str, float]:
    """The numeric entries only: what can be plotted, sorted and compared."""
    return {name: float(value) for name, value in values.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)}


def _front_keys(saved: SavedSearch) -> set[str]:
    return {candidate.key for candidate in saved.selected} if saved.goal["pareto"] else set()


def candidate_view(candidate: Candidate, rank: int | None, files: Mapping[str, str] | None, front: bool,
                   undeployable: str | None = None, with_inputs: bool = True) -> dict[str, Any]:
    """What the page knows of one candidate: what it is, how it did, where its files are."""
    objective = next(iter(candidate.objectives), None)
    view = {
        "key": candidate.key, "label": candidate.label(), "status": candidate.status, "reason": candidate.reason,
        "gpus": candidate.used_gpus, "branch": candidate.branch, "round": candidate.round, "rank": rank, "front": front,
        "group": candidate.group, "system": "/".join(candidate.view.hardware_skus),
        "objectives": _numbers(candidate.objectives), "metrics": _numbers(candidate.metrics), "knobs": knob_summary(candidate),
        "spread": candidate.spread_percent(objective) if objective else None, "files": dict(files) if files else None,
        "undeployable": undeployable, "step_of": candidate.provenance.get("replica_step_of"),
    }
    if with_inputs:
        view.update(config=candidate.unrolled, replay=candidate.replay_input, seconds=candidate.seconds)
    return view


def candidate_views(saved: SavedSearch, *, with_inputs: bool) -> list[dict[str, Any]]:
    ranks = {candidate.key: rank for rank, candidate in enumerate(saved.selected, 1)}
    front = _front_keys(saved)
    undeployable = saved.summary.get("undeployable", {})
    views = []
    for candidate in saved.ledger:
        rank = ranks.get(candidate.key)
        folder = saved.deploy_folder(rank, candidate) if rank else None
        files = {kind: f"{folder}/{name}" for kind, name in DEPLOY_FILES.items() if (saved.folder / folder / name).is_file()} if folder else None
        views.append(candidate_view(candidate, rank, files, candidate.key in front, undeployable.get(candidate.key), with_inputs))
    return views


def report_data(saved: SavedSearch) -> dict[str, Any]:
    summary = saved.summary
    return {
        "title": saved.goal["title"],
        "goal": saved.goal,
        "fingerprint": summary.get("plan_fingerprint"),
        "tallies": summary.get("tallies", {}),
        "timings": {name: value for name, value in summary.get("timings", {}).items() if isinstance(value, (int, float))},
        "notes": summary.get("notes", []),
        "versions": saved.plan.get("versions", {}),
        "engine_versions": summary.get("engine_versions", {}),
        "calibration": summary.get("calibration"),
        "candidates": candidate_views(saved, with_inputs=True),
        "plan": saved.plan_text,
        "files": [name for name in FOLDER_FILES if (saved.folder / name).is_file()],
    }


def write_report(folder: Path) -> Path:
    """report.html in a results folder, from the folder's own files."""
    path = Path(folder) / "report.html"
    path.write_text(html_page("report", report_data(SavedSearch.load(folder))))
    return path

