"""What a resumed search costs before it measures anything new: upstream's GLM-5 study
(examples/glm5_b200_72.yaml) stopped by a time budget, then resumed with a fresh one, as a user
would run the same command again.

    .venv/bin/python benchmarks/bench_resume.py [--seed 1] [--first 600] [--resume 300]

Runs `spica --config-file examples/glm5_b200_72.yaml sweep.random_seed=SEED
sweep.max_search_seconds=FIRST` into a temporary folder, copies it twice, and resumes each copy
with `sweep.max_search_seconds=RESUME`, one after the other: one as it is, one without its
asks.jsonl, which is how every resume ran before the studies' answers were journaled (each
study asked its designer again for every answer up to where the search had stopped). For each it
prints and writes (benchmarks/results/resume.json): seconds from the command's launch until it
handed out its first replay (the first one the stopped search had not finished; none if its
budget ran out first), the rows its
sitting added to evaluations.jsonl, the designer answers it took back, and the seconds its
studies spent choosing.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STUDY = REPO / "examples" / "glm5_b200_72.yaml"
SPICA = Path(sys.executable).with_name("spica")


def rows(folder: Path) -> int:
    return sum(1 for line in (folder / "evaluations.jsonl").read_text().splitlines() if line.endswith("}"))


def sitting(folder: Path, seed: int, budget: float) -> dict:
    """One run of the study's command into `folder`, with a `budget` of seconds."""
    before = rows(folder) if (folder / "evaluations.jsonl").exists() else 0
    launched = time.time()
    done = subprocess.run([str(SPICA), "--config-file", str(STUDY), f"sweep.random_seed={seed}",
                           f"sweep.max_search_seconds={budget:g}", f"results_dir={folder}"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO)
    wall = time.time() - launched
    if done.returncode != 0:
        raise SystemExit(f"bench_resume: the study exited {done.returncode}: {done.stderr[-2000:]}")
    timings = json.loads((folder / "summary.json").read_text())["timings"]
    taken_back = re.search(r"resuming: (\d+) designer answers taken back", done.stderr)
    first = timings["first_evaluation_at"]
    return {
        "wall_s": round(wall, 1),
        "first_replay_after_s": round(first - launched, 1) if first else None,
        "rows_added": rows(folder) - before,
        "answers_taken_back": int(taken_back.group(1)) if taken_back else 0,
        "choosing_s": round(timings["optimizer_seconds"], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--first", type=float, default=600.0, help="the first sitting's budget, seconds")
    parser.add_argument("--resume", type=float, default=300.0, help="each resumed sitting's budget, seconds")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "resume.json")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="spica-bench-resume-") as scratch:
        first = Path(scratch) / "first"
        stopped = sitting(first, args.seed, args.first)
        print(f"first sitting ({args.first:g} s budget): {stopped['rows_added']} rows, "
              f"{sum(1 for _ in (first / 'asks.jsonl').open())} designer answers journaled, wall {stopped['wall_s']} s")
        resumed = {}
        for name, keep_answers in (("without asks.jsonl (as before)", False), ("with asks.jsonl", True)):
            copy = Path(scratch) / ("with" if keep_answers else "without")
            shutil.copytree(first, copy)
            if not keep_answers:
                (copy / "asks.jsonl").unlink()
            resumed[name] = sitting(copy, args.seed, args.resume)

    print(f"\nresumed with a {args.resume:g} s budget    first replay after   rows added   answers taken back   choosing")
    for name, figures in resumed.items():
        first_replay = "none" if figures["first_replay_after_s"] is None else f"{figures['first_replay_after_s']} s"
        print(f"{name:<34} {first_replay:>14} {figures['rows_added']:>12} "
              f"{figures['answers_taken_back']:>20} {figures['choosing_s']:>9} s")
    record = {"study": str(STUDY.relative_to(REPO)), "seed": args.seed, "first_budget_s": args.first,
              "resume_budget_s": args.resume, "first_sitting": stopped, "resumed": resumed,
              "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()}
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
