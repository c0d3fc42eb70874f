"""Upstream's whole GLM-5 study (examples/glm5_b200_72.yaml, unchanged: 80 rounds of 8, 640
samples) run here as a user would, and its front's hypervolume over wall time beside upstream's
published figure (640 samples, 12 h 07 m, 8 workers: 61,093) and SemiAnalysis's measured front.

    .venv/bin/python benchmarks/glm5_study.py [--seed 1] [--results DIR] [--out FILE] [--resume | --redraw]

Runs `spica --config-file examples/glm5_b200_72.yaml sweep.random_seed=SEED results_dir=DIR` (no
time budget) and reads its journal (evaluations.jsonl: a row per finished replay, in the order
they finished) every POLL_SECONDS, as a stopwatch beside it would; afterwards it takes, for each
reading, the hypervolume of the front of the full replays finished by then (reference (0, 0) on
tok/s/user, tok/s/GPU; a screened row is never on it). Writes the plot (default
benchmarks/results/glm5_study.png) and, beside it, the json: the wall, the rows, the hypervolume
at the end and at 15 and 30 minutes, and the curve. Ctrl-C stops the study (its finished
replays kept, as the search keeps them) and draws what finished; `--resume` runs the same study
again on that folder (the search resumes it, reusing every finished replay) and continues the
curve from the earlier sittings' wall, so a study longer than one sitting is measured whole.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from matplotlib.figure import Figure

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

from glm5_front import MEASURED, OBJECTIVES, UPSTREAM_HYPERVOLUME, read_points  # noqa: E402
from spica.evaluation.score import hypervolume_2d, pareto_front  # noqa: E402

STUDY = REPO / "examples" / "glm5_b200_72.yaml"
POLL_SECONDS = 2.0
UPSTREAM_WALL_S = 12 * 3600 + 7 * 60
MARKS_S = (900, 1800)


def finished_rows(journal: Path) -> int:
    try:
        return sum(1 for line in journal.read_text().splitlines() if line.endswith("}"))
    except OSError:
        return 0


def run_study(seed: int, folder: Path) -> tuple[float, list[tuple[float, int]], int, bool]:
    """The study's wall, (seconds, rows finished) readings, its exit code, and whether it was
    stopped (Ctrl-C: passed on to the search, which keeps what finished)."""
    command = [str(Path(sys.executable).with_name("spica")), "--config-file", str(STUDY),
               f"sweep.random_seed={seed}", f"results_dir={folder}"]
    journal = folder / "evaluations.jsonl"
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    readings, stopped = [], False
    while process.poll() is None:
        try:
            readings.append((time.monotonic() - started, finished_rows(journal)))
            time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            stopped = True
            process.send_signal(signal.SIGINT)
            process.wait()
    wall = time.monotonic() - started
    readings.append((wall, finished_rows(journal)))
    return wall, readings, process.returncode, stopped


def hypervolume_by(rows: list[dict], count: int) -> float:
    points = [tuple(row["objectives"][name] for name in OBJECTIVES) for row in rows[:count]
              if row["status"] == "feasible" and all(name in row["objectives"] for name in OBJECTIVES)]
    return hypervolume_2d(pareto_front(points, lambda point: point), (0, 0))


def _earlier_sittings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """The stopped study's record (its sittings and curve), which a resumed one continues."""
    record_path = args.out.with_suffix(".json")
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        parser.error(f"--resume: no record of a stopped study at {record_path}")
    if not record.get("stopped") or record.get("seed") != args.seed or not (args.results / "evaluations.jsonl").is_file():
        parser.error(f"--resume: {record_path} is not a stopped study of seed {args.seed} whose journal is in {args.results}")
    return {"sittings_s": record.get("sittings_s") or [record["wall_s"]], "curve": record["curve"]}


def draw(record: dict, out: Path) -> None:
    """The record's curve beside upstream's figure and SemiAnalysis's measured front, as a png."""
    curve, wall, sittings = record["curve"], record["wall_s"], record["sittings_s"]
    figure = Figure(figsize=(9, 5.5), dpi=120)
    axes = figure.add_subplot()
    ended = "stopped" if record["stopped"] else "done"
    axes.step([point["seconds"] / 60 for point in curve], [point["hypervolume"] for point in curve], where="post", color="C0",
              linewidth=1.8, label=f"Spica, seed {record['seed']}, 2 cores: {record['hypervolume']:,} {ended} at {wall / 60:.0f} min"
                    f"{f' ({len(sittings)} sittings)' if len(sittings) > 1 else ''} ({record['rows']} rows, {record['screened']} screened)")
    axes.axhline(UPSTREAM_HYPERVOLUME, color="crimson", linestyle=":",
                 label=f"upstream Spica: {UPSTREAM_HYPERVOLUME:,} after 640 samples in 12 h 07 m (8 workers)")
    measured = record["semianalysis_measured_hypervolume"]
    axes.axhline(measured, color="black", linestyle="--", label=f"SemiAnalysis measured (InferenceX): {measured:,}")
    for mark in MARKS_S:
        axes.axvline(mark / 60, color="grey", linewidth=0.6, alpha=0.6)
    axes.set_xlabel("wall minutes")
    axes.set_ylabel("front hypervolume, ref (0, 0) (tok/s/user × tok/s/GPU)")
    axes.set_title("Upstream's GLM-5-FP8 / 72 B200 study: front hypervolume over wall time", fontsize=11)
    axes.set_xlim(left=0)
    axes.set_ylim(bottom=0)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8, loc="lower right")
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, format="png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--results", type=Path, default=Path("/tmp/spica-glm5-study"))
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "glm5_study.png")
    parser.add_argument("--resume", action="store_true",
                        help="go on with the study stopped in --results, whose record is --out's json")
    parser.add_argument("--redraw", action="store_true", help="only draw --out again from its json record")
    args = parser.parse_args()
    if args.redraw:
        draw(json.loads(args.out.with_suffix(".json").read_text()), args.out)
        return
    earlier = _earlier_sittings(args, parser) if args.resume else {"sittings_s": [], "curve": []}
    if args.results.exists() and not args.resume:
        parser.error(f"{args.results} exists: the study must start from nothing (give another --results, or --resume)")
    sitting, readings, code, stopped = run_study(args.seed, args.results)
    if code != 0 and not stopped:
        sys.exit(f"the study exited with {code}; see {args.results}")
    sittings = [*earlier["sittings_s"], round(sitting, 1)]
    before = sum(earlier["sittings_s"])
    wall = before + sitting
    rows = [json.loads(line) for line in (args.results / "evaluations.jsonl").read_text().splitlines()]
    curve = [(point["seconds"], point["rows"], point["hypervolume"]) for point in earlier["curve"]]
    for seconds, count in readings:
        if not curve or count != curve[-1][1]:
            curve.append((round(before + seconds, 1), count, round(hypervolume_by(rows, count))))
    at = {f"{mark // 60} min": next((volume for seconds, _, volume in reversed(curve) if seconds <= mark), 0)
          for mark in MARKS_S if mark <= wall}
    measured = round(hypervolume_2d(read_points(MEASURED), (0, 0)))
    screened = sum(row["status"] == "screened" for row in rows)
    record = {
        "command": f"spica --config-file examples/glm5_b200_72.yaml sweep.random_seed={args.seed} results_dir=DIR",
        "seed": args.seed, "wall_s": round(wall, 1), "sittings_s": sittings, "stopped": stopped, "rows": len(rows), "screened": screened,
        "hypervolume": round(hypervolume_by(rows, len(rows))), "hypervolume_at": at,
        "upstream": {"samples": 640, "wall_s": UPSTREAM_WALL_S, "workers": 8, "hypervolume": UPSTREAM_HYPERVOLUME},
        "semianalysis_measured_hypervolume": measured,
        "curve": [{"seconds": seconds, "rows": count, "hypervolume": volume} for seconds, count, volume in curve],
    }
    draw(record, args.out)
    args.out.with_suffix(".json").write_text(json.dumps(record, indent=1))
    print(f"wall {wall:.0f} s, {len(rows)} rows ({screened} screened), hypervolume {record['hypervolume']:,}; "
          f"{', '.join(f'at {mark} {volume:,}' for mark, volume in at.items())}; wrote {args.out} and {args.out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
