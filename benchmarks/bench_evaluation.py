"""Seconds per evaluation (build the Replay call, replay, score) of a 1k-request candidate.

Candidate: Qwen3-32B on h200_sxm, vllm, agg TP2 × 2 workers, synthetic closed loop 64,
1000 requests of 2000/200 tokens. Figures: cold (empty timing cache, first AIS use in the
process), a new shape in a warm process, warm cache (target ≤ 0.15 s), direct AIS timing, and a
capped replay in the long-lived replay worker (first call starts it) vs in-process. On a shared
machine wall time includes waiting for a core, so in-process figures also report CPU seconds.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_evaluation.py
Writes benchmarks/results/evaluation.json.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

RESULTS = Path(__file__).resolve().parent / "results"
REPEATS = 10


def timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def cpu_timed(action: Callable[[], Any]) -> float:
    started = time.process_time()
    action()
    return time.process_time() - started


def main() -> None:
    started = time.perf_counter()
    import dynamo.replay  # noqa: F401  (the import a worker process pays once)

    from bench_timing_fidelity import qwen3_32b_candidate
    from spica.evaluation.deployment import WorkloadSpec, build_replay_call
    from spica.evaluation.replay import run_replay
    from spica.evaluation.score import objective_values

    import_seconds = time.perf_counter() - started
    workload = WorkloadSpec(kind="synthetic", isl=2000, osl=200, request_count=1000, concurrency=64)

    def evaluate(tp: int = 2, timing: str = "table", timeout_s: float | None = None) -> dict[str, float]:
        call = build_replay_call(qwen3_32b_candidate("vllm", {"agg": (tp, 2)}, None), workload, timing=timing)  # type: ignore[arg-type]
        outcome = run_replay(call, timeout_s=timeout_s)
        if outcome.status != "ok":
            raise RuntimeError(outcome.message)
        return objective_values(outcome.summary)

    with tempfile.TemporaryDirectory() as cache:
        os.environ["SPICA_CACHE_DIR"] = cache
        cold = timed(evaluate)
        new_shape = timed(lambda: evaluate(tp=4))
        warm = [timed(evaluate) for _ in range(REPEATS)]
        warm_cpu = [cpu_timed(evaluate) for _ in range(REPEATS)]
        ais = [timed(lambda: evaluate(timing="ais")) for _ in range(3)]
        capped_first = timed(lambda: evaluate(timeout_s=120.0))
        capped = [timed(lambda: evaluate(timeout_s=120.0)) for _ in range(REPEATS)]
    result = {
        "candidate": "Qwen3-32B h200_sxm vllm agg tp2x2, synthetic closed loop 64, 1000 requests 2000/200 tokens",
        "import_seconds": round(import_seconds, 3),
        "cold_seconds": round(cold, 3),
        "new_shape_warm_process_seconds": round(new_shape, 3),
        "warm_median_seconds": round(statistics.median(warm), 3),
        "warm_min_seconds": round(min(warm), 3),
        "warm_cpu_median_seconds": round(statistics.median(warm_cpu), 3),
        "ais_direct_median_seconds": round(statistics.median(ais), 3),
        "capped_first_call_seconds": round(capped_first, 3),
        "capped_median_seconds": round(statistics.median(capped), 3),
        "capped_overhead_seconds": round(statistics.median(capped) - statistics.median(warm), 3),
        "warm_target_seconds": 0.15,
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "evaluation.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
