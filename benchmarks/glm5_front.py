"""The GLM-5 headline on one plot: Spica's fronts for upstream's study (examples/glm5_b200_72.yaml),
SemiAnalysis's measured points and upstream Spica's published front points, with each one's
hypervolume (reference (0, 0) on tok/s/user, tok/s/GPU, as upstream and SemiAnalysis give it).

    .venv/bin/python benchmarks/glm5_front.py "15 min, seed 1=DIR" "30 min, seed 1=DIR" [--out FILE]

Each DIR is a results folder of that study (its ledger.json; a search stopped by its time budget
writes one). Writes benchmarks/results/glm5_front.png and, beside it, glm5_front.json with the
hypervolumes and fronts drawn.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from matplotlib.figure import Figure

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from spica.evaluation.score import hypervolume_2d, pareto_front  # noqa: E402
from spica.evaluation.screening import full_candidate  # noqa: E402
from spica.search.unroll import candidate_key  # noqa: E402

MEASURED = REPO.parent / "shared" / "data" / "measured" / "glm5_fp8_b200_semianalysis.csv"
UPSTREAM = REPO / "benchmarks" / "data" / "upstream_glm5_front.csv"
UPSTREAM_HYPERVOLUME = 61_093  # its whole front's, as published (only seven of its 204 points were)
OBJECTIVES = ("throughput_per_user", "throughput_per_gpu")


def read_points(path: Path) -> list[tuple[float, float]]:
    rows = csv.DictReader(line for line in path.read_text().splitlines() if not line.startswith("#"))
    return [(float(row["throughput_per_user_tok_s"]), float(row["throughput_per_gpu_tok_s"])) for row in rows]


def spica_front(folder: Path) -> tuple[list[tuple[float, float]], int, int, int]:
    """The front of a results folder's feasible candidates (full replays: a screened row is not
    one), how many rows its ledger holds, how many of them are screening replays, and how many of
    those were confirmed (replayed in full too)."""
    rows = json.loads((folder / "ledger.json").read_text())
    points = [tuple(row["objectives"][name] for name in OBJECTIVES) for row in rows
              if row["status"] == "feasible" and all(name in row["objectives"] for name in OBJECTIVES)]
    screened = [row for row in rows if row["status"] == "screened"]
    full = {row["key"] for row in rows if row["status"] != "screened"}
    confirmed = sum(candidate_key(full_candidate(row["unrolled"])) in full for row in screened)
    return sorted(pareto_front(points, lambda point: point), key=lambda point: point[0]), len(rows), len(screened), confirmed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", metavar="LABEL=DIR")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "glm5_front.png")
    args = parser.parse_args()
    figure = Figure(figsize=(10, 6.5), dpi=120)
    axes = figure.add_subplot()
    measured, upstream = read_points(MEASURED), read_points(UPSTREAM)
    record: dict = {"reference": [0, 0], "objectives": list(OBJECTIVES), "runs": {}}
    record["semianalysis_measured"] = {"hypervolume": round(hypervolume_2d(measured, (0, 0))), "points": measured}
    record["upstream_published"] = {"hypervolume": UPSTREAM_HYPERVOLUME, "points_shown": upstream,
                                    "hypervolume_of_points_shown": round(hypervolume_2d(upstream, (0, 0)))}
    axes.plot(*zip(*sorted(measured)), color="black", marker="s", linewidth=1.4,
              label=f"SemiAnalysis measured (InferenceX): HV {record['semianalysis_measured']['hypervolume']:,}")
    axes.plot(*zip(*sorted(upstream)), color="crimson", marker="^", linestyle=":", linewidth=1.2,
              label=f"upstream Spica, 640 samples in 12 h 07 m: HV {UPSTREAM_HYPERVOLUME:,} (7 of its points published)")
    for index, run in enumerate(args.runs):
        label, _, folder = run.partition("=")
        if not folder:
            parser.error(f"{run}: give LABEL=DIR")
        front, replayed, screened, confirmed = spica_front(Path(folder))
        volume = round(hypervolume_2d(front, (0, 0)))
        record["runs"][label] = {"folder": folder, "replayed": replayed, "screened": screened, "confirmed": confirmed,
                                 "hypervolume": volume, "front": front}
        rows = f"{replayed} rows, {screened} screened, {confirmed} confirmed" if screened else f"{replayed} candidates"
        axes.plot(*zip(*front), marker="o", markersize=4, linewidth=1.6, color=f"C{index}", drawstyle="steps-pre",
                  label=f"Spica, {label}: HV {volume:,} ({rows})")
        print(f"{label}: {rows}, front of {len(front)}, hypervolume {volume:,}")
    axes.set_xlabel("throughput per user (tok/s/user) — higher is better")
    axes.set_ylabel("throughput per GPU (tok/s/GPU) — higher is better")
    axes.set_title("GLM-5-FP8 on 72 B200s, SGLang disagg, 1k/1k: fronts and hypervolume (ref (0, 0))", fontsize=11)
    axes.grid(True, alpha=0.3)
    axes.set_xlim(left=0)
    axes.set_ylim(bottom=0)
    axes.legend(fontsize=8, loc="upper right")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out, format="png")
    args.out.with_suffix(".json").write_text(json.dumps(record, indent=1))
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
