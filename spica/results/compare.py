"""`spica compare DIR...`: results folders side by side, as a terminal table and one page.

A DIR is a results folder, or a folder of them such as a Hydra multirun's (`spica -m
workload=chat,summarize` writes one numbered job folder per search). Each search is named by
its Hydra overrides where it has them, else by its folder; the page overlays their fronts (or
scores against GPUs), links each search's own report.html, and lists what differs in their plans.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from spica.core.errors import UserError
from spica.results.page import candidate_views, html_page
from spica.results.saved import SavedSearch
from spica.results.table import render_table

ABSENT = "(not set)"


def results_folders(paths: Sequence[str | Path]) -> list[Path]:
    """Each path as a results folder, or the results folders directly in it, in job order."""
    found: list[Path] = []
    for path in map(Path, paths):
        if (path / "summary.json").is_file():
            found.append(path)
        elif path.is_dir():
            jobs = sorted((child for child in path.iterdir() if (child / "summary.json").is_file()), key=_natural)
            if not jobs:
                raise UserError(f"{path}: neither a results folder nor a folder of them (no summary.json in it or its subfolders)")
            found += jobs
        else:
            raise UserError(f"{path}: not found")
    unique: dict[Path, Path] = {}
    for path in found:  # a folder named twice (or by two spellings) is compared once, as first named
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def _natural(path: Path) -> list[Any]:
    """Job folders 0, 1, ..., 10 in that order, not 0, 1, 10, 2."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def search_label(folder: Path) -> str:
    """A Hydra job's overrides (`workload=chat`), else the folder's path as given."""
    overrides = folder / ".hydra" / "overrides.yaml"
    if overrides.is_file():
        try:
            items = yaml.safe_load(overrides.read_text())
        except yaml.YAMLError:
            items = None
        if isinstance(items, list) and items:
            return " ".join(str(item) for item in items if not str(item).startswith(("results_dir=", "hydra.")))
    return str(folder)


def _labels(folders: Sequence[Path]) -> list[str]:
    labels = [search_label(folder) or str(folder) for folder in folders]
    return [f"{label} ({folder})" if labels.count(label) > 1 else label for label, folder in zip(labels, folders)]


def _flat(prefix: str, value: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(value, Mapping) and value:
        for key, inner in value.items():
            yield from _flat(f"{prefix}.{key}" if prefix else str(key), inner)
    else:
        yield prefix, value


def config_differences(searches: Sequence[SavedSearch]) -> list[dict[str, Any]]:
    """Each plan field (dotted) whose value is not the same in every search, with each one's value."""
    flats = [dict(_flat("", {name: search.plan.get(name) for name in ("seed", "versions", "trace_sha256", "calibration", "config")}))
             for search in searches]
    fields = sorted({field for flat in flats for field in flat})
    rows = []
    for field in fields:
        values = [flat.get(field, ABSENT) for flat in flats]
        if len({json.dumps(value, default=str, sort_keys=True) for value in values}) > 1:
            rows.append({"field": field, "values": values})
    return rows


def _best(search: SavedSearch) -> Any:
    """The table's first row: the best candidate, or the front's best in its first objective."""
    selected = search.selected
    if not selected:
        return None
    if search.goal["pareto"]:
        first = search.goal["objectives"][0]
        sign = 1 if first in search.goal["minimized"] else -1
        return min(selected, key=lambda candidate: sign * candidate.objectives[first])
    return selected[0]


def _cell(value: Any, width: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


def format_compare(searches: Sequence[SavedSearch], labels: Sequence[str]) -> str:
    """The terminal view: one row per search (its best, or its front's size and best in the first
    objective), then each plan field that differs."""
    objectives = list(dict.fromkeys(name for search in searches for name in search.goal["objectives"]))
    units = {name: unit for search in searches for name, unit in search.goal["units"].items()}
    headers = ["#", "search", "goal", "replayed", "feasible", "front", "best deployment", "GPUs",
               *[f"{name} ({units[name]})" for name in objectives], "ttft ms", "tpot ms"]
    rows = []
    for index, (search, label) in enumerate(zip(searches, labels), 1):
        best = _best(search)
        feasible = sum(candidate.feasible for candidate in search.ledger)
        front = len(search.selected) if search.goal["pareto"] else "-"
        values = [best.objectives.get(name) if best else None for name in objectives]
        rows.append([index, _cell(label, 32), search.goal["target"], len(search.ledger), feasible, front,
                     best.label() if best else "(none feasible)", best.used_gpus if best else None, *values,
                     best.metrics.get("mean_ttft_ms") if best else None, best.metrics.get("mean_tpot_ms") if best else None])
    lines = ["", f"{len(searches)} searches", render_table(headers, rows), ""]
    differences = config_differences(searches)
    if differences:
        lines.append("What differs in their plans (" + " | ".join(f"#{i}" for i in range(1, len(searches) + 1)) + "):")
        lines += [f"  {row['field']}: " + " | ".join(_cell(value) for value in row["values"]) for row in differences]
    else:
        lines.append("Their plans are the same.")
    return "\n".join(lines)


def compare_data(searches: Sequence[SavedSearch], labels: Sequence[str], page_folder: Path) -> dict[str, Any]:
    def relative(path: Path) -> str:
        return Path(os.path.relpath(path.resolve(), page_folder.resolve())).as_posix()

    return {
        "title": f"{len(searches)} searches compared",
        "searches": [
            {
                "label": label, "folder": relative(search.folder), "title": search.goal["title"], "goal": search.goal,
                "report": relative(search.folder / "report.html") if (search.folder / "report.html").is_file() else None,
                "tallies": search.summary.get("tallies", {}), "replayed": len(search.ledger),
                "wall_seconds": search.summary.get("timings", {}).get("wall_seconds"), "notes": search.summary.get("notes", []),
                "best": (best.key if (best := _best(search)) else None),
                "candidates": [view for view in candidate_views(search, with_inputs=False) if view["status"] == "feasible"],
            }
            for search, label in zip(searches, labels)
        ],
        "differences": config_differences(searches),
    }


def compare(paths: Sequence[str | Path], output: str | Path | None = None) -> tuple[str, Path]:
    """The terminal table and the written page's path. The page goes to `output`, else into the
    one folder of results folders given (a multirun), else ./compare.html."""
    folders = results_folders(paths)
    searches = [SavedSearch.load(folder) for folder in folders]
    labels = _labels(folders)
    if output is None:
        single = Path(paths[0]) if len(paths) == 1 and not (Path(paths[0]) / "summary.json").is_file() else None
        output = (single or Path(".")) / "compare.html"
    output = Path(output)
    if output.is_dir():
        output = output / "compare.html"
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(html_page("compare", compare_data(searches, labels, output.parent)))
    except OSError as exc:
        raise UserError(f"-o: {output} cannot be written ({exc.strerror or exc})") from None
    return format_compare(searches, labels), output
