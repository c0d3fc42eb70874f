"""Which deployments a one-target search steps from, and to which replica counts."""

from __future__ import annotations

import csv

from spica.config import SmartSearchConfig
from spica.core.candidate import Candidate
from spica.search import run_smart_search
from spica.search.pool import InlinePool
from spica.search.replica_steps import STEP_MARGIN, neighbours, origins
from spica.space.branches import BackendFit, ParallelConfig, RolePool
from spica.space.shapes import WorkerShape
from tests.search.test_search import CountingPool


def config(*pools: tuple[str, int, int], backends=("vllm",)) -> ParallelConfig:
    """A config of (role, tp, replicas) pools on 16 GPUs."""
    mode = "agg" if pools[0][0] == "agg" else "disagg"
    fits = tuple(BackendFit(backend, "0", (None,) * len(pools)) for backend in backends)
    return ParallelConfig(mode, tuple(RolePool(role, WorkerShape(tp=tp), replicas) for role, tp, replicas in pools), fits, 16)


def test_neighbours_are_one_replica_away_in_one_role_with_the_same_workers_and_backend():
    pool = [config(("agg", 4, count)) for count in (1, 2, 3, 4)] + [config(("agg", 8, 2)), config(("agg", 4, 2), backends=("sglang",))]
    assert neighbours(pool, config(("agg", 4, 3)), "vllm") == [pool[1], pool[3]]
    assert neighbours(pool, config(("agg", 4, 1)), "vllm") == [pool[1]]
    assert neighbours(pool, config(("agg", 8, 2)), "vllm") == []  # 1× and 3×TP8 are not in the pool
    split = [config(("prefill", 2, p), ("decode", 4, d)) for p in (1, 2, 3) for d in (1, 2, 3)]
    assert neighbours(split, config(("prefill", 2, 2), ("decode", 4, 2)), "vllm") == [split[1], split[3], split[5], split[7]]


def candidate(key: str, shape: str, score: float | None, status: str = "feasible") -> Candidate:
    return Candidate(key, "agg", 0, status, {"shape": shape}, score=score)


def test_the_best_of_each_leading_shape_within_the_margin_is_stepped_from_best_first():
    ledger = [
        candidate("a", "2xtp8", 58.5), candidate("b", "4xtp4", 57.4), candidate("c", "4xtp4", 55.0),
        candidate("d", "2xtp8", 57.8), candidate("e", "16xtp1", 33.9), candidate("f", "6xtp2", 58.0, "screened"),
        candidate("g", "8xtp2", 99.0, "failed"),
    ]
    chosen = origins(ledger, lambda c: c.unrolled["shape"].split("x")[1])
    assert [c.key for c in chosen] == ["a", "b"]  # e is far below; f is a screening replay, g has no result
    assert origins(ledger, lambda c: None) == []
    level = [candidate("x", "a", 100.0), candidate("y", "b", 100.0 * (1 - STEP_MARGIN)), candidate("z", "c", 94.0)]
    assert [c.key for c in origins(level, lambda c: c.unrolled["shape"])] == ["x", "y"]


def test_a_search_of_one_trial_steps_its_replicas_to_the_best_count_on_the_real_trace(shared_dir, tmp_path):
    """Goodput per GPU under an SLA on the Mooncake trace, agg TP4 with 1-4 replicas: the study's one
    trial is 2×TP4, whose SLA holds for few requests; stepping finds 3×TP4, the grid's best."""
    config = SmartSearchConfig.from_mapping({
        "search_space": {
            "model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm", "gpu_budget": 16, "context_length": 131072,
            "deployment_mode": ["agg"], "backend": ["vllm"], "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"],
            "agg_max_num_seqs": [256], "agg_max_num_batched_tokens": [16384],
            "parallel_configs": [{"tp": 4, "replicas": count} for count in (1, 2, 3, 4)],
        },
        "workload": {"trace_path": str(shared_dir / "data" / "mooncake" / "conversation_trace_15min.jsonl"), "trace_format": "mooncake"},
        "goal": {"target": "goodput_per_gpu", "sla": {"ttft_ms": 2000, "itl_ms": 50}},
        "sweep": {"max_rounds": 1, "candidates_per_round": 1, "parallel_evals": 1, "random_seed": 1},
    })
    results = run_smart_search(config, results_dir=tmp_path, pool=InlinePool())
    goodput = {c.unrolled["replicas"]: c.objectives["goodput_per_gpu"] for c in results.ledger}
    assert [c.unrolled["replicas"] for c in results.ledger] == [2, 1, 3, 4]  # the trial, then its steps, then 3×'s
    assert max(goodput, key=goodput.get) == 3 and results[0].unrolled["replicas"] == 3
    assert goodput[3] > 5 * goodput[2]
    # each step says which row it stepped from: the ledger's provenance and ledger.csv
    origins = {c.unrolled["replicas"]: c.provenance.get("replica_step_of") for c in results.ledger}
    keys = {c.unrolled["replicas"]: c.key for c in results.ledger}
    assert origins == {2: None, 1: keys[2], 3: keys[2], 4: keys[3]}
    with (tmp_path / "ledger.csv").open(newline="") as handle:
        assert [row["replica_step_of"] for row in csv.DictReader(handle)] == ["", keys[2], keys[2], keys[3]]
    # run again into the folder: every row, the steps too, comes back from the journal and counts as a cache hit
    pool = CountingPool()
    again = run_smart_search(config, results_dir=tmp_path, pool=pool)
    assert [c.key for c in again.ledger] == [c.key for c in results.ledger] and not pool.replayed
    assert again.tallies["cache_hits"] == 4
