"""run_smart_search end to end on small, real searches (real Replay, Vizier, AI Configurator)."""

from __future__ import annotations

import json

import pytest

from spica.config import SmartSearchConfig
from spica.search import run_smart_search
from spica.search.pool import InlinePool

pytestmark = pytest.mark.e2e


def small(**overrides) -> SmartSearchConfig:
    data = {
        "search_space": {
            "model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm", "gpu_budget": 4,
            "context_length": 4096, "deployment_mode": ["agg"], "backend": ["vllm"],
            "agg_max_num_batched_tokens": [8192], "agg_max_num_seqs": [64],
        },
        "workload": {"isl": 512, "osl": 32, "concurrency": 8, "num_request_ratio": 3},
        "goal": {"target": "throughput_per_gpu"},
        "sweep": {"max_rounds": 3, "candidates_per_round": 2, "parallel_evals": 1, "seed": 3, "designer": "quasi_random"},
    }
    for block, fields in overrides.items():
        data[block].update(fields)
    return SmartSearchConfig.from_mapping(data)


class CountingPool(InlinePool):
    """The real in-process pool, counting the candidates it is asked to replay."""

    def __init__(self):
        self.replayed: list[str] = []

    def map(self, fn, items):
        self.replayed += [json.dumps(unrolled, sort_keys=True) for _, unrolled in items]
        return super().map(fn, items)


def test_dedupe_never_replays_a_measured_candidate(tmp_path):
    config = small(search_space={"parallel_configs": [{"tp": 2}]})  # one candidate in the whole space
    pool = CountingPool()
    results = run_smart_search(config, results_dir=tmp_path, pool=pool)
    assert len(pool.replayed) == 1 == len(set(pool.replayed))
    assert len(results.ledger) == 1
    assert results.tallies["cache_hits"] >= 5  # every later suggestion reused the measured result
    assert results[0].unrolled["tp"] == 2 and results[0].feasible


def test_search_ranks_feasible_candidates_best_first(tmp_path):
    results = run_smart_search(small(), results_dir=tmp_path)
    scores = [candidate.score for candidate in results]
    assert scores == sorted(scores, reverse=True) and len(scores) >= 3
    assert all(candidate.used_gpus <= 4 for candidate in results.ledger)
    keys = [candidate.key for candidate in results.ledger]
    assert len(keys) == len(set(keys))
    for name in ("ledger.json", "ledger.csv", "plot.png", "best.csv", "summary.json", "plan.yaml"):
        assert (tmp_path / name).stat().st_size > 0
    assert (tmp_path / "deploy").is_dir()


def test_failures_are_told_as_infeasible_not_low_scores(tmp_path):
    config = small(sweep={"candidate_timeout_s": 0.001})  # every replay exceeds its cap
    results = run_smart_search(config, results_dir=tmp_path)
    assert list(results) == []
    assert {candidate.status for candidate in results.ledger} == {"failed"}
    assert all(candidate.reason.startswith("time_cap") and candidate.score is None for candidate in results.ledger)
    assert results.tallies["failed"] == len(results.ledger) > 0


def test_same_plan_and_seed_give_the_same_ledger(tmp_path):
    first = run_smart_search(small(), results_dir=tmp_path / "a")
    second = run_smart_search(small(), results_dir=tmp_path / "b")
    assert [c.key for c in first.ledger] == [c.key for c in second.ledger]
    assert [c.objectives for c in first.ledger] == [c.objectives for c in second.ledger]


def test_interrupted_run_resumes_without_replaying(tmp_path):
    first = run_smart_search(small(), results_dir=tmp_path)
    pool = CountingPool()
    again = run_smart_search(small(), results_dir=tmp_path, pool=pool)
    assert pool.replayed == []  # every evaluation came from evaluations.jsonl
    assert [c.key for c in again.ledger] == [c.key for c in first.ledger]


def test_pareto_goal_returns_the_front_with_a_swept_concurrency(tmp_path):
    config = small(workload={"concurrency": [2, 16]}, goal={"target": "pareto"}, sweep={"max_rounds": 4})
    front = run_smart_search(config, results_dir=tmp_path)
    assert front, "a front has at least one point"
    users = [c.objectives["throughput_per_user"] for c in front]
    assert users == sorted(users)  # sorted along the last objective
    assert {c.unrolled["concurrency"] for c in front.ledger} <= {2, 16}
