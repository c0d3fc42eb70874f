"""Frozen plans: fingerprinted, version-pinned, refused when tampered with."""

from __future__ import annotations

import pytest
import yaml

from spica.config import SmartSearchConfig
from spica.plan import PlanError, compile_plan, load_plan


@pytest.fixture
def config():
    return SmartSearchConfig.from_mapping(
        {"search_space": {"model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm", "gpu_budget": 8},
         "workload": {"isl": 1024, "osl": 128, "concurrency": 32, "num_request_ratio": 10}, "sweep": {"random_seed": 7}}
    )


def test_round_trip_keeps_config_seed_and_versions(config, tmp_path):
    plan = compile_plan(config)
    path = plan.write(tmp_path / "plan.yaml")
    again = load_plan(path)
    assert again.config == plan.config
    # the policies its throughput goal cannot use are dropped at compile time, inside the fingerprint
    assert plan.config.search_space.planner_scaling_policy == ["disabled", "load_180_5", "load_180_10"]
    assert again.seed == 7
    assert again.fingerprint == plan.fingerprint
    assert set(again.versions) >= {"spica", "ai-dynamo", "aiconfigurator", "google-vizier"}
    assert again.versions["ai-dynamo"] == "1.6.1"


def test_same_config_same_fingerprint(config):
    assert compile_plan(config).fingerprint == compile_plan(SmartSearchConfig.from_mapping(config.to_data())).fingerprint


def test_a_plan_without_a_time_cap_runs_without_one_and_is_not_the_capped_plan(config, tmp_path):
    """sweep.max_eval_seconds: null (no cap) overrides the 600 s default: the plan file keeps the
    null (left out, the plan ran capped) and the fingerprint tells the two plans apart."""
    data = config.to_data()
    data["sweep"]["max_eval_seconds"] = None
    uncapped = SmartSearchConfig.from_mapping(data)
    plan = compile_plan(uncapped)
    assert load_plan(plan.write(tmp_path / "plan.yaml")).config.sweep.max_eval_seconds is None
    assert plan.fingerprint != compile_plan(config).fingerprint
    assert SmartSearchConfig.from_mapping(uncapped.to_data()) == uncapped


def test_edited_plan_is_refused(config, tmp_path):
    path = compile_plan(config).write(tmp_path / "plan.yaml")
    path.write_text(path.read_text().replace("gpu_budget: 8", "gpu_budget: 16"))
    with pytest.raises(PlanError, match="fingerprint does not match the content"):
        load_plan(path)


def test_version_drift_is_refused(config, tmp_path):
    path = compile_plan(config).write(tmp_path / "plan.yaml")
    data = yaml.safe_load(path.read_text())
    data["versions"]["ai-dynamo"] = "0.0.1"
    from spica.plan import _fingerprint  # re-sign as a careless tool would

    data.pop("fingerprint")
    data = {"fingerprint": _fingerprint(data), **data}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(PlanError, match=r"made with other versions: ai-dynamo 0.0.1 \(installed 1.6.1\)"):
        load_plan(path)


def test_changed_trace_is_refused(tmp_path, monkeypatch):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [0]}\n')
    config = SmartSearchConfig.from_mapping({"search_space": {"model_name": "m", "hardware_sku": "h"}, "workload": {"trace_path": str(trace)}})
    path = compile_plan(config).write(tmp_path / "plan.yaml")
    trace.write_text(trace.read_text() * 2)
    with pytest.raises(PlanError, match="changed since the plan was compiled"):
        load_plan(path)


def test_not_a_plan(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("a: 1\n")
    with pytest.raises(PlanError, match="not a Spica plan"):
        load_plan(path)


def test_a_plan_holding_policies_its_goal_cannot_use_is_refused(config, tmp_path):
    """Plans written before policies were filtered at compile time: recompile, never a silent change."""
    path = compile_plan(config).write(tmp_path / "plan.yaml")
    data = yaml.safe_load(path.read_text())
    data["config"]["search_space"]["planner_scaling_policy"] = ["disabled", "throughput_180_5"]
    from spica.plan import _fingerprint

    data.pop("fingerprint")
    path.write_text(yaml.safe_dump({"fingerprint": _fingerprint(data), **data}))
    with pytest.raises(PlanError, match="holds policies its goal cannot use; recompile it"):
        load_plan(path)


def test_a_plan_written_before_screening_is_refused_not_run_with_it(config, tmp_path):
    """Format 1 plans never screened; run today they would (sweep.screen_request_ratio: auto)."""
    path = compile_plan(config).write(tmp_path / "plan.yaml")
    data = yaml.safe_load(path.read_text())
    data["config"]["sweep"].pop("screen_request_ratio")
    data["plan_format"] = 1
    from spica.plan import _fingerprint

    data.pop("fingerprint")
    path.write_text(yaml.safe_dump({"fingerprint": _fingerprint(data), **data}))
    with pytest.raises(PlanError, match="plan_format 1 is not 2; recompile it"):
        load_plan(path)
