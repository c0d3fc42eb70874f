"""Enumeration time of the parallel-config space for MoE models at budget 64, cold and cached.

Wall and CPU seconds are both reported: on a shared 2-core machine wall time mostly measures
the neighbours. Each measurement runs in a fresh process (so AIC's own in-process caches do not help):
  cold   — empty SPICA_CACHE_DIR: every KV capacity comes from AI Configurator's memory model;
  cached — same cache dir again: capacities read from disk, no memory-model call;
  warm   — a second enumeration inside the cached process (in-process memo).
Also: pool sizes, memory-model calls, and projection cost (first call builds the table).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_space.py [MODEL ...]
Writes benchmarks/results/bench_space.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET = 64
BACKENDS = ("vllm", "sglang", "trtllm")
DEFAULT_MODELS = ("deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-30B-A3B")
RESULTS = Path(__file__).resolve().parent / "results" / "bench_space.json"


def measure(model: str) -> dict:
    """Runs inside the child process."""
    import logging

    logging.basicConfig(level=logging.ERROR)
    started = time.perf_counter()
    from spica.space import SpaceRequest, enumerate_branches, feature_params, features, project
    from spica.space.capacity import aic_version

    imported = time.perf_counter()
    request = SpaceRequest(model, "h200_sxm", backends=BACKENDS, gpu_budget=BUDGET)
    cpu = time.process_time()
    branches = enumerate_branches(request)
    enumerated, enumerated_cpu = time.perf_counter(), time.process_time()
    enumerate_branches(request)
    again, again_cpu = time.perf_counter(), time.process_time()
    projection = {}
    for branch in branches:
        backend = branch.backends[0]
        first = time.perf_counter()
        project(branch, backend, {})
        built = time.perf_counter()
        sample = branch.configs_for(backend)[len(branch.configs_for(backend)) // 2]
        project(branch, backend, features(sample))
        projection[branch.mode] = {
            "backend": backend,
            "dims": len(feature_params(branch)),
            "first_call_s": round(built - first, 3),
            "call_s": round(time.perf_counter() - built, 4),
        }
    cache_dir = Path(os.environ["SPICA_CACHE_DIR"]) / "space"
    calls = sum(
        len(json.loads(f.read_text())["entries"])
        for f in cache_dir.glob("*.json")
        if json.loads(f.read_text())["key"]["kind"] == "rank_kv_tokens"
    )
    return {
        "aiconfigurator": aic_version(),
        "import_s": round(imported - started, 3),
        "enumerate_s": round(enumerated - imported, 3),
        "enumerate_cpu_s": round(enumerated_cpu - cpu, 3),
        "enumerate_again_in_process_s": round(again - enumerated, 3),
        "enumerate_again_in_process_cpu_s": round(again_cpu - enumerated_cpu, 3),
        "configs": {b.mode: len(b.configs) for b in branches},
        "kv_estimates_in_cache": calls,
        "projection": projection,
    }


def child(model: str, cache_dir: str) -> dict:
    env = {**os.environ, "SPICA_CACHE_DIR": cache_dir}
    run = subprocess.run(
        [sys.executable, __file__, "--child", model], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(run.stdout.splitlines()[-1])


def main(models: list[str]) -> None:
    figures: dict = {"budget": BUDGET, "backends": list(BACKENDS), "system": "h200_sxm", "cpus": os.cpu_count()}
    try:
        figures["load_avg_at_start"] = os.getloadavg()[0]
    except OSError:
        pass
    for model in models:
        with tempfile.TemporaryDirectory() as cache_dir:
            cold = child(model, cache_dir)
            cached = child(model, cache_dir)
        figures[model] = {"cold": cold, "cached": cached}
        print(
            f"{model}: cold {cold['enumerate_s']} s wall / {cold['enumerate_cpu_s']} s cpu "
            f"({cold['kv_estimates_in_cache']} memory-model calls), cached {cached['enumerate_s']} / "
            f"{cached['enumerate_cpu_s']} s, in-process again {cached['enumerate_again_in_process_s']} / "
            f"{cached['enumerate_again_in_process_cpu_s']} s; "
            f"configs {cold['configs']}; projection {cached['projection']}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(measure(sys.argv[2])))
    else:
        main(sys.argv[1:] or list(DEFAULT_MODELS))
