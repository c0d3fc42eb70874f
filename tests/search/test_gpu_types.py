"""Which GPUs, at what cost (issue 46): the system as a searched knob with prices, on the shared
15-minute Mooncake trace. Each search replays a small pinned menu on every system (the grid), so
its answer is checked against everything it could have chosen."""

from __future__ import annotations

import json

import pytest
import yaml

from spica import run_smart_search
from spica.config import SmartSearchConfig
from spica.results.table import format_results
from tests.results_checks import check_results_folder

SYSTEMS = ["h100_sxm", "h200_sxm", "b200_sxm"]
PRICES = {"h100_sxm": 2.5, "h200_sxm": 3.5, "b200_sxm": 5.5}  # conf/prices' examples
MENU = [{"tp": 1, "replicas": r} for r in (2, 3, 4, 8, 12)] + [{"tp": 2, "replicas": r} for r in (1, 2, 4, 5, 6)]


def search(shared_dir, goal: dict, menu: list[dict]) -> SmartSearchConfig:
    return SmartSearchConfig.from_mapping({
        "search_space": {
            "model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": SYSTEMS, "gpu_budget": 12, "parallel_configs": menu,
            "deployment_mode": ["agg"], "backend": ["vllm"], "router_mode": ["round_robin"],
            "planner_scaling_policy": ["disabled"], "agg_max_num_seqs": [256], "agg_max_num_batched_tokens": [16384],
        },
        "workload": {"trace_path": str(shared_dir / "data" / "mooncake" / "conversation_trace_15min.jsonl")},
        "goal": goal,
        "sweep": {"algorithm": "grid", "parallel_evals": 2, "max_eval_seconds": None},
    })


@pytest.fixture(scope="module")
def min_cost(shared_dir, tmp_path_factory):
    config = search(shared_dir, {"target": "min_cost", "sla": {"ttft_ms": 2000, "itl_ms": 50}, "gpu_hour_price": PRICES}, MENU)
    folder = tmp_path_factory.mktemp("min_cost")
    return config, run_smart_search(config, results_dir=folder), folder


def test_min_cost_finds_the_cheapest_deployment_within_the_sla_across_gpu_types(min_cost):
    config, results, folder = min_cost
    assert len(results.ledger) == len(MENU) * len(SYSTEMS)  # every system's whole menu was replayed
    best = results[0]
    assert best.unrolled["hardware_sku"] == "b200_sxm" and best.used_gpus == 4
    assert best.objectives["min_cost"] == pytest.approx(4 * 5.5)  # 4 GPUs held all along at 5.5 per GPU-hour
    assert best.metrics["mean_ttft_ms"] <= 2000 and best.metrics["mean_itl_ms"] <= 50
    for system in SYSTEMS:  # each system's cheapest deployment within the SLA costs more; everything cheaper missed it
        mine = [c for c in results.ledger if c.unrolled["hardware_sku"] == system]
        cheapest = min((c for c in mine if c.feasible), key=lambda c: c.metrics["cost_per_hour"])
        assert cheapest.metrics["cost_per_hour"] >= best.objectives["min_cost"] - 1e-6
        cheaper = [c for c in mine if c.metrics["cost_per_hour"] < best.objectives["min_cost"] - 1e-6]
        assert all(c.status == "infeasible" and c.reason.startswith("sla: ") for c in cheaper)
    by_system = {s: min(c.metrics["cost_per_hour"] for c in results.ledger if c.feasible and c.unrolled["hardware_sku"] == s) for s in SYSTEMS}
    assert by_system == pytest.approx({"h100_sxm": 12 * 2.5, "h200_sxm": 10 * 3.5, "b200_sxm": 4 * 5.5})


def test_the_results_say_each_deployments_system_and_cost(min_cost):
    config, results, folder = min_cost
    check_results_folder(folder)
    table = format_results(config, results, {})
    assert "cost (price/Mtok)" in table.splitlines()[2] and "agg vllm 4xtp1 @b200_sxm" in table.splitlines()[4]
    assert "prices per GPU-hour (goal.gpu_hour_price, the unit 'price' of every cost): h100_sxm 2.5, h200_sxm 3.5, b200_sxm 5.5" in table
    (deploy,) = [path for path in (folder / "deploy").iterdir() if path.name.startswith("01-")]
    manifest = yaml.safe_load((deploy / "dynamo.yaml").read_text())
    annotations = manifest["metadata"]["annotations"]
    assert annotations["spica/hardware"] == "agg b200_sxm"
    assert annotations["spica/cost"].endswith("22 per hour at 5.5 per GPU-hour")
    worker = next(c for c in manifest["spec"]["components"].values() if c.get("type") == "worker") \
        if isinstance(manifest["spec"]["components"], dict) else next(c for c in manifest["spec"]["components"] if c.get("type") == "worker")
    assert worker["podTemplate"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-B200"}
    candidate = json.loads((deploy / "candidate.json").read_text())
    assert candidate["config"]["searched_hardware_skus"] == SYSTEMS


def test_a_cost_pareto_front_spans_gpu_types(shared_dir, tmp_path):
    menu = [{"tp": 1, "replicas": r} for r in (4, 8)] + [{"tp": 2, "replicas": r} for r in (2, 4)]
    config = search(shared_dir, {"target": "pareto", "pareto_objectives": ["cost_per_mtok", "throughput_per_user"], "gpu_hour_price": PRICES}, menu)
    results = run_smart_search(config, results_dir=tmp_path)
    assert len(results.ledger) == len(menu) * len(SYSTEMS)
    systems = {candidate.unrolled["hardware_sku"] for candidate in results}
    assert len(systems) > 1, [c.label() for c in results]
    cheapest = min(results, key=lambda c: c.objectives["cost_per_mtok"])
    assert cheapest.objectives["cost_per_mtok"] == min(c.objectives["cost_per_mtok"] for c in results.ledger if c.feasible)


def test_energy_per_mtok_is_each_gpus_board_power_over_its_provisioned_hours(shared_dir, tmp_path):
    """AI Configurator's system specs: h100_sxm and h200_sxm 700 W, b200_sxm 1,000 W per GPU."""
    config = search(shared_dir, {"target": "energy_per_mtok"}, [{"tp": 1, "replicas": 4}])
    results = run_smart_search(config, results_dir=tmp_path)
    watts = {"h100_sxm": 700.0, "h200_sxm": 700.0, "b200_sxm": 1000.0}
    for candidate in results.ledger:
        metrics = candidate.metrics
        mtok_per_hour = metrics["output_throughput_tok_s"] * 3600 / 1e6
        expected = watts[candidate.unrolled["hardware_sku"]] / 1000 * metrics["provisioned_gpus"] / mtok_per_hour
        assert candidate.objectives["energy_per_mtok"] == pytest.approx(expected)
    assert [c.unrolled["hardware_sku"] for c in results] == sorted(SYSTEMS, key=lambda s: next(
        c.objectives["energy_per_mtok"] for c in results.ledger if c.unrolled["hardware_sku"] == s))


def test_an_energy_goal_on_a_system_whose_spec_states_no_power_is_refused(shared_dir, monkeypatch):
    from spica.config import ConfigError
    from spica.search.branches import branches_for
    from spica.space import capacity

    monkeypatch.setattr(capacity, "gpu_power_w", lambda system: None if system == "h200_sxm" else 700.0)
    with pytest.raises(ConfigError) as refused:
        branches_for(search(shared_dir, {"target": "energy_per_mtok"}, [{"tp": 1, "replicas": 4}]))
    assert refused.value.lines == ["goal: energy_per_mtok needs each GPU's power; AI Configurator's system spec for h200_sxm states none"]


def test_per_role_lists_give_a_branch_per_pair_and_per_system_budgets_cap_their_own(shared_dir):
    from spica.search.branches import branches_for

    def space(**fields):
        return SmartSearchConfig.from_mapping({
            "search_space": {"model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm", "gpu_budget": 4, "backend": ["vllm"],
                             "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"], **fields},
            "workload": {"isl": 1000, "osl": 100, "concurrency": 4, "num_request_ratio": 2},
        })

    pairs = branches_for(space(deployment_mode=["disagg"], prefill_hardware_sku=["h100_sxm", "h200_sxm"]))
    assert [(b.name, dict(b.role_skus)) for b in pairs] == [
        ("disagg@h100_sxm+h200_sxm", {"prefill": "h100_sxm", "decode": "h200_sxm"}),
        ("disagg@h200_sxm", {"prefill": "h200_sxm", "decode": "h200_sxm"}),
    ]
    capped = branches_for(space(deployment_mode=["agg"], hardware_sku=["h100_sxm", "h200_sxm"], gpu_budget_per_sku={"h100_sxm": 2}))
    assert {b.name: max(c.used_gpus for c in b.configs) for b in capped} == {"agg@h100_sxm": 2, "agg@h200_sxm": 4}


def test_a_listed_system_without_perf_data_for_the_backends_is_dropped_with_a_warning(caplog):
    """b60 has vLLM perf data only in AI Configurator 0.12: an SGLang search goes on without it."""
    import logging

    from spica.search.branches import branches_for

    caplog.set_level(logging.WARNING, logger="spica.space")
    config = SmartSearchConfig.from_mapping({
        "search_space": {"model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": ["b60", "h200_sxm"], "gpu_budget": 2, "backend": ["sglang"],
                         "deployment_mode": ["agg"], "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"]},
        "workload": {"isl": 1000, "osl": 100, "concurrency": 4, "num_request_ratio": 2},
    })
    assert [branch.name for branch in branches_for(config)] == ["agg@h200_sxm"]
    assert "b60 dropped from the search: search_space.hardware_sku: 'b60' has no AI Configurator 0.12.0 perf data for sglang" in caplog.text
