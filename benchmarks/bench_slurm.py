"""When does fan-out over SLURM pay? Evaluations per minute of the same candidates on the local
process pool and on SLURM job arrays (runner.slurm_pool), with 1 and 2 workers, the efficiency
of the second worker, and what SLURM adds per evaluation over the local pool.

Candidates: the first N of a grid over Qwen3-32B on h200_sxm (vllm, agg, up to 4 GPUs, closed
loop 32, 12,800 requests of 1024/128 tokens, about 1 s each), found by a warm-up search that also fills the
timing cache, so every pool replays on warm tables. The local pool is started (and its workers
warmed) before it is timed, as a search does once per run; a SLURM task starts a fresh python
for every evaluation. SLURM overhead per evaluation is split into: submission (the array's
sbatch), dispatch (from the moment a task could start, its submission or the end of the
task whose slot it takes, to its start; from sacct), task start-up (the task's run time minus the
evaluation's own seconds: python, imports, pickles) and result pickup (task end to the result
in hand). sacct times have one-second resolution.

Run (SLURM up, e.g. `bash containers/slurm.sh`): PYTHONPATH=. .venv/bin/python benchmarks/bench_slurm.py
Writes benchmarks/results/slurm.json.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
N = 8
CONFIG = {
    "search_space": {"model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm", "gpu_budget": 4,
                     "context_length": 4096, "deployment_mode": ["agg"], "backend": ["vllm"],
                     "agg_max_num_batched_tokens": [8192], "agg_max_num_seqs": [32, 64],
                     "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"]},
    "workload": {"isl": 1024, "osl": 128, "concurrency": 32, "num_request_ratio": 400},
    "goal": {"target": "throughput_per_gpu"},
    "sweep": {"algorithm": "grid", "parallel_evals": 1, "random_seed": 1},
}


def _sacct_times(job_ids: list[str]) -> list[tuple[datetime, datetime, datetime]]:
    """(submit, start, end) of each array task, once accounting has recorded every end."""
    for _ in range(60):
        out = subprocess.run(["sacct", "-n", "-P", "-X", "-j", ",".join(job_ids), "--format=JobID,Submit,Start,End"],
                             capture_output=True, text=True, check=True).stdout
        rows = [line.split("|")[1:] for line in out.splitlines() if line]
        if len(rows) == len(job_ids) and "Unknown" not in {value for row in rows for value in row}:
            return [tuple(datetime.fromisoformat(value) for value in row) for row in rows]  # type: ignore[misc]
        time.sleep(1)
    raise RuntimeError(f"sacct did not record the end of jobs {job_ids}")


def _dispatch(times: list[tuple[datetime, datetime, datetime]]) -> list[float]:
    """Per task: start minus the moment it could have started (its submission, or the latest
    end of another task before its start: the slot it took)."""
    ends = sorted(end for _, _, end in times)
    return [(start - max([submit, *(end for end in ends if end <= start)])).total_seconds() for submit, start, _ in times]


def _timed(pool: Any, tasks: list[Any]) -> dict[str, Any]:
    """Seconds to submit and to finish all tasks, when each result arrived (epoch), the results."""
    from spica.evaluation.evaluate import evaluate_task
    from spica.evaluation.evaluate import prepare_worker

    started = time.perf_counter()
    arrived: list[float] = [0.0] * len(tasks)
    futures = pool.submit(evaluate_task, tasks)
    submitted = time.perf_counter() - started
    for index, future in enumerate(futures):
        future.add_done_callback(lambda _, index=index: arrived.__setitem__(index, time.time()))
    results = [future.result() for future in futures]
    return {"wall": time.perf_counter() - started, "submit": submitted, "arrived": arrived, "results": results}


def main() -> None:
    from runner.slurm_pool import SlurmPool
    from spica.config import SmartSearchConfig
    from spica.search import run_smart_search
    from spica.evaluation.evaluate import evaluate_task
    from spica.evaluation.evaluate import prepare_worker
    from spica.search.pool import ProcessPool, run_all

    config = SmartSearchConfig.from_mapping(CONFIG)
    with tempfile.TemporaryDirectory(prefix="spica-bench-slurm-") as scratch:
        warm = run_smart_search(config, results_dir=Path(scratch) / "warm")
        measured = list(warm.ledger)[:N]
        tasks = [(config, candidate.config) for candidate in measured]
        eval_seconds = statistics.mean(candidate.seconds for candidate in measured)
        figures: dict[str, Any] = {"evaluations": len(tasks), "evaluation_seconds_in_process": round(eval_seconds, 3)}
        for workers in (1, 2):
            pool = ProcessPool(workers, preload=prepare_worker)
            run_all(pool, evaluate_task, tasks[:workers])  # workers up and warm, as after a search's first round
            wall = _timed(pool, tasks)["wall"]
            pool.close()
            figures[f"local_{workers}"] = {"wall_s": round(wall, 2), "evaluations_per_min": round(60 * len(tasks) / wall, 1)}
        for workers in (1, 2):
            # on the host's venv, as the local pool: the figures are SLURM's own cost, not the image's start
            with SlurmPool(Path(scratch) / f"slurm{workers}", max_parallel=workers, timeout_min=15, container_image=None) as pool:
                run = _timed(pool, tasks)
                times = _sacct_times(pool.job_ids())
            own = [result.seconds for result in run["results"]]
            figures[f"slurm_{workers}"] = {
                "wall_s": round(run["wall"], 2), "evaluations_per_min": round(60 * len(tasks) / run["wall"], 1),
                "submission_s": round(run["submit"], 2),
                "dispatch_s": round(statistics.mean(_dispatch(times)), 2),
                "task_startup_s": round(statistics.mean((end - start).total_seconds() - s for (_, start, end), s in zip(times, own)), 2),
                "pickup_s": round(statistics.mean(t - end.timestamp() for t, (_, _, end) in zip(run["arrived"], times)), 2),
            }
    for kind in ("local", "slurm"):
        one, two = figures[f"{kind}_1"], figures[f"{kind}_2"]
        two["efficiency_vs_1_worker"] = round(two["evaluations_per_min"] / (2 * one["evaluations_per_min"]), 2)
    figures["slurm_overhead_per_evaluation_s"] = round((figures["slurm_1"]["wall_s"] - figures["local_1"]["wall_s"]) / len(tasks), 2)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "slurm.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
