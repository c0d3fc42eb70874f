"""What searching the GPU type costs: one three-system search against the three single-system
searches it holds (issue 46: within 1.5× their sum, with the same number of replays).

Each search is the `spica` command itself in a fresh process (so each single-system search pays
its own start-up, as a user running them one by one would): Qwen3-32B-FP8 on the shared
15-minute Mooncake trace, agg vLLM, min_cost under ttft 2 s / itl 50 ms with conf/prices' example
prices, 4 rounds × 2 candidates per branch, seed 1. A searched system is a branch of its own, so
the three-system search asks each system's study what the single search asks it.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_gpu_types.py
Writes benchmarks/results/gpu_types.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
RESULTS = REPO / "benchmarks" / "results" / "gpu_types.json"
SYSTEMS = ["h100_sxm", "h200_sxm", "b200_sxm"]
PRICES = {"h100_sxm": 2.5, "h200_sxm": 3.5, "b200_sxm": 5.5}  # conf/prices' examples
EXIT_NOTHING_FEASIBLE = 3


def config(systems: list[str]) -> dict:
    return {
        "search_space": {
            "model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": systems, "gpu_budget": 12, "deployment_mode": ["agg"],
            "backend": ["vllm"], "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"],
            "agg_max_num_seqs": [256], "agg_max_num_batched_tokens": [16384],
        },
        "workload": {"trace_path": str(SHARED / "data" / "mooncake" / "conversation_trace_15min.jsonl")},
        "goal": {"target": "min_cost", "sla": {"ttft_ms": 2000, "itl_ms": 50}, "gpu_hour_price": {sku: PRICES[sku] for sku in systems}},
        "sweep": {"max_rounds": 4, "parallel_evals": 2, "random_seed": 1, "max_eval_seconds": None},
    }


def run(systems: list[str]) -> dict:
    """One search in a fresh process: its process wall, replays and answer."""
    with tempfile.TemporaryDirectory() as scratch:
        path, folder = Path(scratch) / "search.yaml", Path(scratch) / "results"
        path.write_text(json.dumps(config(systems)))  # JSON is YAML
        command = [str(Path(sys.executable).with_name("spica")), "--config-file", str(path), f"results_dir={folder}"]
        launched = time.time()
        ran = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
        wall = time.time() - launched
        if ran.returncode not in (0, EXIT_NOTHING_FEASIBLE):
            raise RuntimeError(f"{systems}: spica exited {ran.returncode}: {ran.stderr[-2000:]}")
        summary = json.loads((folder / "summary.json").read_text())
        ledger = {entry["key"]: entry for entry in json.loads((folder / "ledger.json").read_text())}
    best = ledger[summary["selected"][0]] if summary["selected"] else None
    return {
        "systems": systems,
        "process_wall_seconds": round(wall, 2),
        "replays": len(ledger),
        "replay_seconds": round(sum(entry["provenance"].get("replay_seconds", 0.0) for entry in ledger.values()), 2),
        "best": None if best is None else {
            "system": best["unrolled"]["hardware_sku"], "gpus": best["unrolled"]["used_gpus"],
            "cost_per_hour": round(best["metrics"]["cost_per_hour"], 3), "cost_per_mtok": round(best["metrics"]["cost_per_mtok"], 3),
        },
    }


def main() -> None:
    singles = [run([system]) for system in SYSTEMS]
    together = run(SYSTEMS)
    total = sum(single["process_wall_seconds"] for single in singles)
    record = {
        "singles": singles,
        "three_systems": together,
        "sum_of_singles_wall_seconds": round(total, 2),
        "ratio_to_sum": round(together["process_wall_seconds"] / total, 3),
        "same_replays": together["replays"] == sum(single["replays"] for single in singles),
    }
    for single in singles:
        print(f"{single['systems'][0]:>9}: {single['process_wall_seconds']:6.1f} s, {single['replays']} replays, best {single['best']}")
    print(f"all three: {together['process_wall_seconds']:6.1f} s, {together['replays']} replays, best {together['best']}")
    print(f"ratio to the sum of the three: {record['ratio_to_sum']} (issue 46 asks for at most 1.5); same replays: {record['same_replays']}")
    RESULTS.write_text(json.dumps(record, indent=2) + "\n")
    print(f"written: {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
