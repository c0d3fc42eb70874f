"""run_smart_search end to end on small, real searches (real Replay, Vizier, AI Configurator)."""

from __future__ import annotations

import json

import pytest
from results_checks import check_results_folder

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
            "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"],
        },
        "workload": {"isl": 512, "osl": 32, "concurrency": 8, "num_request_ratio": 3},
        "goal": {"target": "throughput_per_gpu"},
        "sweep": {"max_rounds": 3, "candidates_per_round": 2, "parallel_evals": 1, "random_seed": 3, "designer": "quasi_random"},
    }
    for block, fields in overrides.items():
        data[block].update(fields)
    return SmartSearchConfig.from_mapping(data)


class CountingPool(InlinePool):
    """The real in-process pool, counting the candidates it is asked to replay."""

    def __init__(self):
        self.replayed: list[str] = []

    def submit(self, fn, items):
        self.replayed += [json.dumps(item[1], sort_keys=True) for item in items]  # (config, unrolled[, draw])
        return super().submit(fn, items)


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
    assert [entry["key"] for entry in check_results_folder(tmp_path)] == keys


def test_overruns_are_told_as_infeasible_exceed_runtime_not_low_scores(tmp_path):
    # 4,000 requests take well over 5 ms to replay: every candidate exceeds its cap
    config = small(workload={"num_request_ratio": 500}, sweep={"max_eval_seconds": 0.005})
    results = run_smart_search(config, results_dir=tmp_path)
    assert list(results) == []
    assert {candidate.status for candidate in results.ledger} == {"infeasible"}
    assert all(candidate.reason.startswith("exceed runtime") and candidate.score is None for candidate in results.ledger)
    assert results.tallies["infeasible"] == len(results.ledger) > 0


def test_a_plan_written_by_a_search_runs_as_is(tmp_path):
    """Policies the goal cannot use are dropped before the plan is fingerprinted, so the plan.yaml
    in the results folder is the plan that ran, and `spica run-plan` accepts it unchanged."""
    from spica.plan import load_plan

    config = small(search_space={"planner_scaling_policy": ["disabled", "throughput_180_5"]})
    results = run_smart_search(config, results_dir=tmp_path)
    plan = load_plan(tmp_path / "plan.yaml")
    assert plan.fingerprint == results.plan.fingerprint
    assert plan.config.search_space.planner_scaling_policy == ["disabled"]
    pool = CountingPool()
    again = run_smart_search(plan, results_dir=tmp_path, pool=pool)
    assert pool.replayed == [] and [c.key for c in again.ledger] == [c.key for c in results.ledger]


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
    assert [c.score for c in front] == [c.objectives["throughput_per_gpu"] for c in front]  # its first objective
    assert {c.unrolled["concurrency"] for c in front.ledger} <= {2, 16}


def test_a_front_is_sorted_by_the_raw_last_objective_even_when_it_is_minimised(tmp_path):
    config = small(workload={"concurrency": [1, 4, 16]}, sweep={"max_rounds": 4},
                   goal={"target": "pareto", "pareto_objectives": ["throughput_per_gpu", "e2e_latency"]})
    front = run_smart_search(config, results_dir=tmp_path)
    latencies = [c.objectives["e2e_latency"] for c in front]
    assert len(front) >= 2 and latencies == sorted(latencies)


def test_planner_scale_down_is_credited_on_the_real_trace(tmp_path, shared_dir):
    """Issue: a goodput_per_gpu search on the 15-minute trace finds a planner candidate whose
    time-averaged GPUs are below its static count, and its per-GPU score uses them."""
    config = SmartSearchConfig.from_mapping({
        "search_space": {
            "model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm", "gpu_budget": 16, "context_length": 32768,
            "deployment_mode": ["agg"], "backend": ["vllm"], "parallel_configs": [{"tp": 2, "replicas": 8}],
            "agg_max_num_batched_tokens": [16384], "agg_max_num_seqs": [256],
            "planner_scaling_policy": ["disabled", "throughput_180_5"], "router_mode": ["round_robin"],
            "planner_fpm_sampling": ["default"], "planner_load_sensitivity": ["default"],
        },
        "workload": {"trace_path": str(shared_dir / "data" / "mooncake" / "conversation_trace_15min.jsonl")},
        "goal": {"target": "goodput_per_gpu", "sla": {"ttft_ms": 2000, "itl_ms": 50}},
        "sweep": {"algorithm": "grid", "parallel_evals": 1},
    })
    results = run_smart_search(config, results_dir=tmp_path)
    by_policy = {c.unrolled["planner_scaling_policy"]: c for c in results.ledger}
    static, planned = by_policy["disabled"], by_policy["throughput_180_5"]
    assert static.metrics["provisioned_gpus"] == pytest.approx(16.0)
    assert planned.metrics["provisioned_gpus"] < 15.0
    goodput = planned.metrics["goodput_output_throughput_tok_s"]
    assert planned.objectives["goodput_per_gpu"] == pytest.approx(goodput / planned.metrics["provisioned_gpus"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["predictor_sub_sweep"]["intervals"]["180"]["winner"] == "constant_last"  # 15 min: too short


def test_a_candidate_whose_worker_died_is_measured_again_on_resume(tmp_path):
    first = run_smart_search(small(), results_dir=tmp_path)
    journal = tmp_path / "evaluations.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    lost = records[0]
    lost.update(status="failed", reason="worker_lost: WorkerLost: the worker evaluating this item died twice", metrics={}, objectives={})
    journal.write_text("".join(json.dumps(record) + "\n" for record in records))
    pool = CountingPool()
    again = run_smart_search(small(), results_dir=tmp_path, pool=pool)
    assert [json.loads(item)["deployment_mode"] for item in pool.replayed] == ["agg"] and len(pool.replayed) == 1
    assert json.loads(pool.replayed[0]) == lost["unrolled"]
    assert [c.key for c in again.ledger] == [c.key for c in first.ledger]
    assert all(c.feasible for c in again.ledger)


def test_a_candidate_whose_timing_cache_went_missing_is_measured_again_on_resume(tmp_path):
    first = run_smart_search(small(), results_dir=tmp_path)
    journal = tmp_path / "evaluations.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    broken = records[1]
    broken.update(status="failed", reason="timing_cache: RuntimeError: Failed to open NPZ file", metrics={}, objectives={}, score=None)
    journal.write_text("".join(json.dumps(record) + "\n" for record in records))
    pool = CountingPool()
    again = run_smart_search(small(), results_dir=tmp_path, pool=pool)
    assert len(pool.replayed) == 1 and json.loads(pool.replayed[0]) == broken["unrolled"]
    assert [c.key for c in again.ledger] == [c.key for c in first.ledger]
    assert all(c.feasible for c in again.ledger) and again.tallies.get("failed", 0) == 0


def test_settings_that_cannot_change_a_score_keep_every_finished_result(tmp_path):
    # asks as wide as the round either way (a round wider than parallel_evals is asked in parts)
    first = run_smart_search(small(sweep={"parallel_evals": 2}), results_dir=tmp_path, pool=InlinePool())
    pool = CountingPool()
    again = run_smart_search(small(sweep={"parallel_evals": 4, "max_eval_seconds": 300}), results_dir=tmp_path, pool=pool)
    assert again.plan.fingerprint != first.plan.fingerprint  # another plan ...
    assert pool.replayed == []  # ... whose every candidate was already measured
    assert [c.key for c in again.ledger] == [c.key for c in first.ledger]


def test_results_of_another_workload_are_not_reused_and_it_is_said(tmp_path, caplog):
    run_smart_search(small(), results_dir=tmp_path)
    pool = CountingPool()
    with caplog.at_level("WARNING", logger="spica.results"):
        other = run_smart_search(small(workload={"num_request_ratio": 4}), results_dir=tmp_path, pool=pool)
    assert len(pool.replayed) == len(other.ledger) > 0
    assert "were measured for another workload, goal or versions and are not reused" in caplog.text


def test_the_best_kv_router_candidates_are_replayed_again_and_their_spread_shown(tmp_path):
    from spica.results.table import format_results

    config = small(
        search_space={"router_mode": ["kv_router"], "parallel_configs": [{"tp": 1}]},
        workload={"isl": 2000, "concurrency": 32, "shared_prefix_ratio": 0.5, "num_prefix_groups": 4},
    )
    pool = CountingPool()
    results = run_smart_search(config, results_dir=tmp_path, pool=pool)
    top = results[: min(3, len(results))]
    assert len(pool.replayed) == len(results.ledger) + 2 * len(top)  # two more replays for each of the top three
    for candidate in top:
        spread = candidate.provenance["spread"]
        low, high = spread["objectives"]["throughput_per_gpu"]
        assert spread["replays"] == 3 and low <= candidate.objectives["throughput_per_gpu"] <= high
    assert json.loads((tmp_path / "deploy" / f"01-{top[0].key}" / "candidate.json").read_text())["spread"] == top[0].provenance["spread"]
    table = format_results(config, results, {})
    assert " ± " in table.splitlines()[2] and "generator seeded from the clock" in table


def test_a_seeded_kv_router_search_repeats_its_ledger_and_spread_with_nothing_kept(tmp_path):
    """Each kv_router draw reads a clock of its own (spica/evaluation/clock.py): the same seed gives
    the same ledger, answer and spread in another run, with every replay drawn afresh; without
    the held clock, the metrics of these kv_router replays differed run to run."""
    config = small(
        search_space={"router_mode": ["kv_router", "round_robin"], "parallel_configs": [{"tp": 1, "replicas": 4}],
                      "router_temperature": [1.0]},  # four workers to choose from, by sampling
        workload={"isl": 2000, "concurrency": 32, "shared_prefix_ratio": 0.5, "num_prefix_groups": 4},
    )
    first = run_smart_search(config, results_dir=tmp_path / "a")
    second = run_smart_search(config, results_dir=tmp_path / "b")
    assert any(c.unrolled["router_mode"] == "kv_router" for c in first.ledger)
    assert [(c.key, c.metrics) for c in second.ledger] == [(c.key, c.metrics) for c in first.ledger]
    assert [c.key for c in second] == [c.key for c in first]  # the same answer
    spreads = [c.provenance.get("spread") for c in first if c.unrolled["router_mode"] == "kv_router"]
    assert spreads and [c.provenance.get("spread") for c in second] == [c.provenance.get("spread") for c in first]
    low, high = spreads[0]["objectives"]["throughput_per_gpu"]
    assert low < high  # draws 1 and 2 are other draws: the spread is not hidden


def test_metrics_hold_the_deployment_only_so_a_round_robin_ledger_repeats_exactly(tmp_path):
    first = run_smart_search(small(), results_dir=tmp_path / "a")
    second = run_smart_search(small(), results_dir=tmp_path / "b")
    assert [c.metrics for c in first.ledger] == [c.metrics for c in second.ledger]
    assert "wall_time_ms" not in first.ledger[0].metrics and "wall_time_ms" in first.ledger[0].provenance["simulator"]
    assert not any("spread" in candidate.provenance for candidate in first.ledger)


def test_min_gpus_finds_the_smallest_deployment_that_meets_the_sla_on_the_mooncake_trace(tmp_path, shared_dir):
    shapes = [{"tp": 1, "replicas": r} for r in (7, 8, 9, 10)] + [{"tp": 2, "replicas": r} for r in (4, 5)]
    config = SmartSearchConfig.from_mapping({
        "search_space": {
            "model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm", "gpu_budget": 12, "parallel_configs": shapes,
            "deployment_mode": ["agg"], "backend": ["vllm"], "router_mode": ["round_robin"],
            "planner_scaling_policy": ["disabled"], "agg_max_num_seqs": [256], "agg_max_num_batched_tokens": [16384],
        },
        "workload": {"trace_path": str(shared_dir / "data" / "mooncake" / "conversation_trace_15min.jsonl")},
        "goal": {"target": "min_gpus", "sla": {"ttft_ms": 2000, "itl_ms": 50}},
        "sweep": {"algorithm": "grid", "parallel_evals": 2, "max_eval_seconds": None},
    })
    results = run_smart_search(config, results_dir=tmp_path)
    assert len(results.ledger) == len(shapes)  # the whole pool was replayed: the answer is checked against all of it
    best = results[0]
    assert best.metrics["mean_ttft_ms"] <= 2000 and best.metrics["mean_itl_ms"] <= 50
    assert best.objectives["min_gpus"] == pytest.approx(best.used_gpus)
    smaller = [c for c in results.ledger if c.used_gpus < best.used_gpus]
    assert smaller and all(c.status == "infeasible" and c.reason.startswith("sla: mean_ttft_ms") for c in smaller)
    assert all(c.used_gpus >= best.used_gpus for c in results)  # nothing smaller is feasible
    from spica.results.table import format_results

    table = format_results(config, results, {})
    assert "good req/s" in table.splitlines()[2] and "SLA (mean): ttft_ms ≤ 2,000, itl_ms ≤ 50" in table


def test_min_gpus_default_search_finds_the_grids_answer_in_eight_replays(tmp_path, shared_dir):
    """The benchmark's min_gpus scenario: the exhaustive grid's 22 candidates answer 5×TP2; its
    rounds find it in eight replays, and a replica step tries 6×TP2 (4×TP2 missed the SLA in them)."""
    config = SmartSearchConfig.from_mapping({
        "search_space": {
            "model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm", "gpu_budget": 12, "deployment_mode": ["agg"],
            "backend": ["vllm"], "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"],
            "agg_max_num_seqs": [256], "agg_max_num_batched_tokens": [16384],
        },
        "workload": {"trace_path": str(shared_dir / "data" / "mooncake" / "conversation_trace_15min.jsonl")},
        "goal": {"target": "min_gpus", "sla": {"ttft_ms": 2000, "itl_ms": 50}},
        "sweep": {"max_rounds": 4, "parallel_evals": 2, "max_eval_seconds": None, "random_seed": 1},
    })
    results = run_smart_search(config, results_dir=tmp_path)
    assert len(results.ledger) == 9 and results[0].used_gpus == 10
    assert [(c.unrolled["replicas"], c.status) for c in results.ledger if c.unrolled["tp"] == 2] == [
        (4, "infeasible"), (5, "feasible"), (6, "feasible")]  # the last one the step
    missed = [c for c in results.ledger if c.status == "infeasible"]
    assert missed and all(c.reason.startswith("sla: mean_") for c in missed)  # the bound missed is kept


def test_min_gpus_with_request_rate_traffic_needs_a_goodput_floor():
    from spica.config import ConfigError

    with pytest.raises(ConfigError, match="goal.min_goodput_rps: required for target min_gpus with request_rate traffic"):
        small(workload={"concurrency": None, "request_rate": 2.0}, goal={"target": "min_gpus", "sla": {"ttft_ms": 500}})
