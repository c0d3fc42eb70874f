"""Where a `spica` process's time goes before (and after) its replays: S1 as the command runs it.

Each run launches a fresh interpreter that imports `spica.cli.commands` and calls its `main()`
exactly as the `spica` script does (`--config-file` S1, the results in a temporary folder); a few
of the search's own steps are wrapped to note the time they end at. Printed per step (medians over the
runs): when it ends, counted from the launch, and how long it took; written to
benchmarks/results/startup.json.

    .venv/bin/python benchmarks/bench_startup.py [--runs 3] [--scenario s1]

The steps: the interpreter's own start-up (Python and site), Spica's imports, the config
validated and the plan compiled, the branches enumerated (KV capacities from the disk cache),
the load-predictor step, the studies opened (Vizier imported, the GP's executables read, the
evaluation workers starting meanwhile), the first replay handed out, the last one back, and the
results folder written (after replaying the best kv_router candidates again, where there are
any) and the process gone.

"Studies opened" is mostly imports, and the process is bound by one core through them (its CPU
time equals its wall). Importing the GP stack (GP-UCB-PE, TensorFlow Probability: 0.6 s) in the
designer's warm-up instead of with the study moved S1's first replay 0.5 s earlier but not its
end (3.35 s against 3.29 s, 12 runs each in pairs): its quasi-random rounds replay in 0.3 s, and
the first model-based ask waited for the import instead.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_search import REPO, SCENARIOS, SHARED

RESULTS = REPO / "benchmarks" / "results" / "startup.json"

STEPS = (
    ("interpreter", "interpreter start-up (Python, site)"),
    ("imports", "Spica's imports (spica.cli)"),
    ("plan", "config validated, plan compiled"),
    ("branches", "branches enumerated"),
    ("predictor", "load-predictor step"),
    ("studies", "studies opened (Vizier imported, GP executables read, workers starting)"),
    ("first_replay", "first replay handed out"),
    ("replays", "the replays and the asks"),
    ("exit", "results folder written (kv_router bests replayed again), process gone"),
)

# Runs in the measured interpreter: notes when each wrapped step returns, then runs the command.
DRIVER = """
import json, sys, time
marks = open(sys.argv[1], "a")
def mark(name):
    marks.write(json.dumps([name, time.time()]) + "\\n"); marks.flush()
mark("interpreter")
import spica.__main__
import spica.cli.commands
mark("imports")
import spica.search.run as run
def noting(name, function):
    def wrapped(*args, **kwargs):
        result = function(*args, **kwargs)
        mark(name)
        return result
    return wrapped
for name, attribute in (("plan", "_as_plan"), ("branches", "branches_for"), ("predictor", "_predictor_winners"), ("studies", "open_searches")):
    setattr(run, attribute, noting(name, getattr(run, attribute)))
sys.argv = ["spica", *sys.argv[2:]]
spica.__main__.main()
"""


def measure(scenario: Path) -> dict[str, float]:
    """One process: each step's end, in seconds from the launch."""
    with tempfile.TemporaryDirectory() as scratch:
        marks, folder = Path(scratch) / "marks.jsonl", Path(scratch) / "results"
        command = [sys.executable, "-c", DRIVER, str(marks), "--config-file", str(scenario), f"results_dir={folder}"]
        launched = time.time()
        subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPO)
        ended = time.time()
        ends = dict(json.loads(line) for line in marks.read_text().splitlines())
        timings = json.loads((folder / "summary.json").read_text())["timings"]
    ends |= {"first_replay": timings["first_evaluation_at"], "replays": timings["evaluations_done_at"], "exit": ended}
    return {name: round(ends[name] - launched, 3) for name, _ in STEPS}


def breakdown(runs: list[dict[str, float]]) -> list[dict[str, object]]:
    """Per step, the median of its end and of its length over the runs."""
    rows, previous = [], [0.0] * len(runs)
    for name, label in STEPS:
        ends = [run[name] for run in runs]
        rows.append({"step": name, "label": label, "ends_at": statistics.median(ends),
                     "takes": round(statistics.median(end - before for end, before in zip(ends, previous)), 3)})
        previous = ends
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scenario", choices=SCENARIOS, default="s1")
    args = parser.parse_args()
    runs = [measure(SHARED / "scenarios" / SCENARIOS[args.scenario]) for _ in range(args.runs)]
    rows = breakdown(runs)
    width = max(len(label) for _, label in STEPS)
    print(f"{args.scenario}: {args.runs} runs, medians")
    print(f"{'step':<{width}}  {'ends at':>8}  {'takes':>7}")
    for row in rows:
        print(f"{row['label']:<{width}}  {row['ends_at']:>7.2f}s  {row['takes']:>6.2f}s")
    earlier = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    earlier[args.scenario] = {"runs": runs, "medians": rows}
    RESULTS.write_text(json.dumps(earlier, indent=1) + "\n")


if __name__ == "__main__":
    main()
