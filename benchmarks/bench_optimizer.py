"""Optimizer benchmark: Spica's "fast" Vizier designer vs Vizier's default vs random search
(and any other study algorithm of spica/study/algorithms.py, e.g. optuna_tpe).

A synthetic but Spica-shaped problem: six mixed knobs (backend, GPUs per worker, replicas,
max_num_seqs, max_num_batched_tokens, router) over a finite pool of valid configurations
(GPU budget 16), with out-of-memory configurations infeasible; a smooth goodput-per-GPU
objective (single) and a throughput-per-GPU vs per-user-speed trade-off with a continuous
load ratio (Pareto). Every study runs in a fresh process, as a Spica run does, and follows
Spica's loop: ask a round, project each suggestion onto the nearest valid configuration,
reuse results for configurations already measured (asking a bounded number of
replacements), tell results (infeasible as infeasible).

Figures: seconds per ask (mean, and total per study), process setup (imports), best value
after N unique evaluations as a fraction of the pool's optimum (single) or hypervolume
fraction of the pool's Pareto front (Pareto); medians over seeds.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_optimizer.py --algorithms fast random   # ~15 min
    PYTHONPATH=. .venv/bin/python benchmarks/bench_optimizer.py --algorithms default \
        --scenarios single_8x2 --seeds 0 1 2        # Vizier's default: 10-20 min per study here
    PYTHONPATH=. .venv/bin/python benchmarks/bench_optimizer.py --algorithms optuna_tpe   # ~2 min
    PYTHONPATH=. .venv/bin/python benchmarks/bench_optimizer.py --quick    # 1 seed, 8x2 only
Results merge into benchmarks/results/optimizer.json (per seed, so runs can be split).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from spica.evaluation.score import hypervolume_2d

RESULTS = Path(__file__).resolve().parent / "results" / "optimizer.json"

BACKEND_SPEED = {"vllm": 1.0, "sglang": 1.07, "trtllm": 1.13}
SHAPES = (1, 2, 4, 8)
GPU_BUDGET = 16
LOADS = (0.2, 0.6, 1.0)
REPLACEMENT_ASKS = 2  # per round, for suggestions that project onto measured configurations

SCENARIOS = {
    # name: (rounds, per_round, pareto)
    "single_8x2": (8, 2, False),
    "single_20x4": (20, 4, False),
    "pareto_8x2": (8, 2, True),
    "pareto_20x4": (20, 4, True),
}


# ----------------------------------------------------------------------------- problem


def space(pareto: bool) -> list[Any]:
    from spica.study import Param

    params = [
        Param("backend", "categorical", tuple(BACKEND_SPEED)),
        Param("gpus_per_worker", "discrete", SHAPES),
        Param("replicas", "integer", low=1, high=8),
        Param("max_num_seqs", "discrete", (256, 512, 1024)),
        Param("max_num_batched_tokens", "discrete", (8192, 16384, 32768)),
        Param("router", "categorical", ("kv_router", "round_robin")),
    ]
    if pareto:
        params.append(Param("load", "double", low=LOADS[0], high=LOADS[-1]))
    return params


def pool(pareto: bool) -> list[dict[str, Any]]:
    """Valid configurations: within the GPU budget (a Spica branch's projected pool)."""
    points = []
    for backend, tp, replicas, seqs, tokens, router in itertools.product(
        BACKEND_SPEED, SHAPES, range(1, 9), (256, 512, 1024), (8192, 16384, 32768), ("kv_router", "round_robin")
    ):
        if tp * replicas <= GPU_BUDGET:
            point = dict(
                backend=backend, gpus_per_worker=tp, replicas=replicas, max_num_seqs=seqs,
                max_num_batched_tokens=tokens, router=router,
            )
            points.extend([{**point, "load": load} for load in LOADS] if pareto else [point])
    return points


def evaluate(p: dict[str, Any]) -> dict[str, float] | None:
    """Smooth stand-in for a replay's summary; None = out of KV memory (infeasible)."""
    tp, replicas, seqs, tokens = p["gpus_per_worker"], p["replicas"], p["max_num_seqs"], p["max_num_batched_tokens"]
    if tp == 1 and seqs * tokens > 512 * 16384:
        return None
    load = p.get("load", 0.7)
    batch = min(seqs, tokens / 40) * load
    router_gain = 1.0 + (0.05 * math.log2(replicas) if p["router"] == "kv_router" else 0.0)
    per_worker = BACKEND_SPEED[p["backend"]] * 700 * tp**0.75 * (1 - math.exp(-batch / 250)) * router_gain
    throughput = min(replicas * per_worker, 9000 * (1 + 0.05 * math.log2(replicas * tp)))
    per_user = 90 * tp**0.45 / (1 + batch / 300) * BACKEND_SPEED[p["backend"]] ** 0.5
    sla_ok = 1 / (1 + math.exp(-(per_user - 25) / 3))
    gpus = tp * replicas
    return {
        "goodput_per_gpu": throughput * sla_ok / gpus,
        "throughput_per_gpu": throughput / gpus,
        "throughput_per_user": per_user,
    }


def objectives(pareto: bool) -> list[Any]:
    from spica.study import Objective

    if pareto:
        return [Objective("throughput_per_gpu"), Objective("throughput_per_user")]
    return [Objective("goodput_per_gpu")]


def project(point: dict[str, Any], candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """Nearest valid configuration (normalised L2 over numeric knobs, 1 per categorical mismatch)."""
    if point in candidates:
        return point

    def distance(c: dict[str, Any]) -> float:
        d = 0.0
        for name, value in point.items():
            if isinstance(value, str):
                d += value != c[name]
            elif name == "load":
                d += (value - c[name]) ** 2
            else:
                d += (math.log2(value) - math.log2(c[name])) ** 2 / 9
        return d

    nearest = min(candidates, key=distance)
    return {**nearest, "load": point["load"]} if "load" in point else nearest


# ----------------------------------------------------------------------------- one study


def run_study(algorithm: str, scenario: str, seed: int, max_rounds: int | None = None) -> dict[str, Any]:
    """One study in this process (optionally cut after `max_rounds`, for timing the slow
    default designer on long scenarios); returns timings and the evaluation trace.

    `algorithm` is a Vizier designer, or a study algorithm of the registry built as a search
    builds it (its imports are then part of `open_seconds`, not `setup_seconds`)."""
    started = time.perf_counter()
    from spica.study.algorithms import ALGORITHMS, StudyRequest

    if algorithm not in ALGORITHMS:
        from spica.study.vizier_study import VizierStudy
    setup_seconds = time.perf_counter() - started
    rounds, per_round, pareto = SCENARIOS[scenario]
    candidates = pool(pareto)
    with tempfile.TemporaryDirectory() as storage:
        opened = time.perf_counter()
        if algorithm in ALGORITHMS:
            request = StudyRequest(
                f"bench-{scenario}", tuple(space(pareto)), tuple(objectives(pareto)), seed, "bench", candidates,
                (per_round, rounds), "fast",
            )
            study = ALGORITHMS[algorithm].build(request)
        else:
            study = VizierStudy(
                f"bench-{scenario}", space(pareto), objectives(pareto), seed=seed, storage_dir=Path(storage),
                fingerprint="bench", algorithm=algorithm, candidates=candidates,
            )
        open_seconds = time.perf_counter() - opened
        ask_seconds: list[float] = []
        ask_cpu_seconds: list[float] = []
        measured: dict[str, dict[str, float] | None] = {}
        trace: list[dict[str, float] | None] = []
        for _ in range(min(rounds, max_rounds or rounds)):
            fresh, asks = 0, 0
            while fresh < per_round and asks <= REPLACEMENT_ASKS:
                t0, c0 = time.perf_counter(), time.process_time()
                suggestions = study.ask(per_round - fresh)
                ask_seconds.append(time.perf_counter() - t0)
                ask_cpu_seconds.append(time.process_time() - c0)
                asks += 1
                if not suggestions:
                    break
                for s in suggestions:
                    config = project(dict(s.params), candidates)
                    key = json.dumps(config, sort_keys=True)
                    if key not in measured:
                        measured[key] = evaluate(config)
                        trace.append(measured[key])
                        fresh += 1
                    result = measured[key]
                    metrics = None if result is None else {o.name: result[o.name] for o in study.objectives}
                    study.tell(s.trial_id, metrics, None if metrics else "kv cache does not fit")
    return {
        "setup_seconds": setup_seconds,
        "open_seconds": open_seconds,
        "ask_seconds": ask_seconds,
        "ask_cpu_seconds": ask_cpu_seconds,
        "trace": trace,
    }


def quality(trace: list[dict[str, float] | None], pareto: bool) -> float:
    """Single: best goodput/GPU found / pool optimum. Pareto: hypervolume / pool front's."""
    truth = [r for r in (evaluate(p) for p in pool(pareto)) if r is not None]
    found = [r for r in trace if r is not None]
    if not pareto:
        return max((r["goodput_per_gpu"] for r in found), default=0.0) / max(r["goodput_per_gpu"] for r in truth)
    reference = (0.0, 0.0)
    as_points = lambda rs: [(r["throughput_per_gpu"], r["throughput_per_user"]) for r in rs]  # noqa: E731
    return hypervolume_2d(as_points(found), reference) / hypervolume_2d(as_points(truth), reference)


# ----------------------------------------------------------------------------- driver


def run_in_subprocess(algorithm: str, scenario: str, seed: int, max_rounds: int | None) -> dict[str, Any]:
    """One study in a fresh process (as a Spica run is), reduced to the figures we keep."""
    command = [sys.executable, __file__, "--one", algorithm, scenario, str(seed), str(max_rounds or 0)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    run = json.loads(output.strip().splitlines()[-1])
    return {
        "ask_seconds": [round(t, 3) for t in run["ask_seconds"]],
        "ask_cpu_seconds": [round(t, 3) for t in run["ask_cpu_seconds"]],
        "setup_seconds": round(run["setup_seconds"], 2),
        "open_seconds": round(run["open_seconds"], 2),
        "unique_evaluations": len(run["trace"]),
        "quality": round(quality(run["trace"], SCENARIOS[scenario][2]), 4),
        "rounds_run": min(SCENARIOS[scenario][0], max_rounds or SCENARIOS[scenario][0]),
    }


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    per_ask = [statistics.mean(r["ask_seconds"]) for r in runs]
    return {
        "seeds": len(runs),
        "ask_seconds_mean_median": round(statistics.median(per_ask), 3),
        "ask_seconds_max": round(max(max(r["ask_seconds"]) for r in runs), 3),
        "optimizer_seconds_per_study_median": round(statistics.median(sum(r["ask_seconds"]) for r in runs), 2),
        "optimizer_cpu_seconds_per_study_median": round(
            statistics.median(sum(r["ask_cpu_seconds"]) for r in runs), 2
        ),
        "setup_seconds_median": round(statistics.median(r["setup_seconds"] for r in runs), 2),
        "unique_evaluations_median": statistics.median(r["unique_evaluations"] for r in runs),
        "quality_median": round(statistics.median(r["quality"] for r in runs), 4),
        "rounds_run": min(r["rounds_run"] for r in runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)  # ALGORITHM SCENARIO SEED [MAX_ROUNDS]
    parser.add_argument("--max-rounds", type=int, help="cut studies short (timing only; quality not comparable)")
    parser.add_argument("--quick", action="store_true", help="one seed, 8x2 scenarios only")
    parser.add_argument("--seeds", type=int, nargs="*", default=list(range(5)))
    parser.add_argument("--scenarios", nargs="*", default=list(SCENARIOS))
    parser.add_argument("--algorithms", nargs="*", default=["fast", "default", "random"])
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON file to merge results into")
    args = parser.parse_args()
    if args.one:
        algorithm, scenario, seed, *cut = args.one
        print(json.dumps(run_study(algorithm, scenario, int(seed), int(cut[0]) if cut and int(cut[0]) else None)))
        return
    scenarios = ["single_8x2", "pareto_8x2"] if args.quick else args.scenarios
    seeds = [0] if args.quick else args.seeds
    results: dict[str, Any] = json.loads(args.output.read_text()) if args.output.exists() else {}
    for scenario in scenarios:
        for algorithm in args.algorithms:
            for seed in seeds:
                run = run_in_subprocess(algorithm, scenario, seed, args.max_rounds)
                entry = results.setdefault(scenario, {}).setdefault(algorithm, {"runs": {}})
                entry["runs"][str(seed)] = run
                entry["summary"] = summarize(list(entry["runs"].values()))
                print(f"{scenario} {algorithm} seed {seed}: {sum(run['ask_seconds']):.1f} s asking, "
                      f"quality {run['quality']}", flush=True)
                args.output.parent.mkdir(parents=True, exist_ok=True)
                args.output.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
            print(json.dumps({scenario: {algorithm: results[scenario][algorithm]["summary"]}}), flush=True)


if __name__ == "__main__":
    main()
