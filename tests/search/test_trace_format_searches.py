"""A small real search on each trace format Dynamo's Replay reads beside mooncake (tests/workloads/data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spica.config import SmartSearchConfig
from spica.search import run_smart_search

pytestmark = pytest.mark.e2e
TRACES = Path(__file__).parents[1] / "workloads" / "data"


def search(tmp_path, name: str, trace_format: str):
    config = SmartSearchConfig.from_mapping({
        "search_space": {"model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm", "gpu_budget": 2, "context_length": 4096,
                         "deployment_mode": ["agg"], "backend": ["vllm"], "agg_max_num_batched_tokens": [8192],
                         "agg_max_num_seqs": [64], "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"]},
        "workload": {"trace_path": str(TRACES / name), "trace_format": trace_format},
        "goal": {"target": "throughput_per_gpu"},
        "sweep": {"max_rounds": 2, "candidates_per_round": 2, "parallel_evals": 1, "random_seed": 3, "algorithm": "grid"},
    })
    return run_smart_search(config, results_dir=tmp_path)


@pytest.mark.parametrize(("name", "trace_format", "requests", "trajectories"), [
    ("agentic.jsonl", "agentic_mooncake", 8, 2), ("dynamo_agentic.jsonl", "dynamo", 4, 1), ("dynamo.jsonl", "dynamo", 8, None),
])
def test_every_request_of_the_trace_is_replayed_and_one_gpu_wins_per_gpu(tmp_path, name, trace_format, requests, trajectories):
    results = search(tmp_path, name, trace_format)
    assert len(results.ledger) == 3 and all(candidate.feasible for candidate in results.ledger)  # 1x tp1, 2x tp1, 1x tp2
    for candidate in results.ledger:
        assert candidate.metrics["completed_requests"] == requests
        assert candidate.metrics.get("total_trajectories") == trajectories  # agent sessions replayed as such
    best = results[0]
    assert (best.unrolled["tp"], best.unrolled["replicas"], best.used_gpus) == (1, 1, 1)
    assert best.score == pytest.approx(best.metrics["output_throughput_tok_s"])
