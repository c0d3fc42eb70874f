"""Time the load-predictor sub-sweep (docs/search.md step 3), in all and per predictor family.

Runs `predictor_sub_sweep` on a trace with all preset predictors (the losses and winners the
search would pin), then once per family with that family's presets only, timing each call.
Prints the figures and writes benchmarks/results/predictors.json.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_predictors.py [--trace PATH] [--intervals 180 600]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from spica.config.presets import LOAD_PREDICTORS
from spica.planner.predictors import build_predictors, predictor_sub_sweep

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = Path(os.environ.get("SPICA_SHARED_DIR", REPO.parent / "shared")) / "data" / "mooncake" / "conversation_trace.jsonl"


def timed_sweep(trace: Path, intervals: list[int], names: list[str]) -> tuple[float, dict]:
    started = time.perf_counter()
    result = predictor_sub_sweep(str(trace), intervals, [(name, dict(LOAD_PREDICTORS[name])) for name in names])
    return round(time.perf_counter() - started, 2), result.to_dict()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--intervals", type=int, nargs="+", default=[180, 600])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "predictors.json")
    args = parser.parse_args()

    started = time.perf_counter()
    build_predictors(LOAD_PREDICTORS["constant_last"], args.intervals[0])  # imports Dynamo's planner stack
    import_seconds = round(time.perf_counter() - started, 2)
    load_before = os.getloadavg()[0]
    all_seconds, all_result = timed_sweep(args.trace, args.intervals, list(LOAD_PREDICTORS))
    families: dict[str, list[str]] = {}
    for name, fields in LOAD_PREDICTORS.items():
        families.setdefault(fields["load_predictor"], []).append(name)
    family_seconds = {family: timed_sweep(args.trace, args.intervals, names)[0] for family, names in families.items()}
    report = {
        "trace": args.trace.name,
        "intervals": args.intervals,
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "python": platform.python_version(),
        },
        "dynamo_planner_import_seconds": import_seconds,
        "sweep_seconds_all_presets": all_seconds,
        "sweep_seconds_per_family": family_seconds,
        "sweep": all_result,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")

    print(f"{args.trace.name}, intervals {args.intervals}: Dynamo planner import {import_seconds} s")
    for interval, choice in all_result["intervals"].items():
        print(f"interval {interval} s: {choice['windows']} windows, warm-up {choice['warmup_windows']}, "
              f"winner {choice['winner']} ({choice['reason']})")
        for name, loss in choice["losses"].items():
            print(f"  {name:24s} {'inf' if loss is None else f'{loss:.5f}'}")
    print(f"sub-sweep, all {len(LOAD_PREDICTORS)} presets: {all_seconds} s")
    print("sub-sweep per family:", ", ".join(f"{family} {seconds} s" for family, seconds in family_seconds.items()))
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
