"""The workload rules, defined once (spica/workloads/rules.py), as the config and the evaluation say them."""

from __future__ import annotations

import pytest

from spica.config import ConfigError, SmartSearchConfig
from spica.evaluation.deployment import WorkloadSpec

SPACE = {"model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm"}


def refusal(workload: dict) -> str:
    with pytest.raises(ConfigError) as error:
        SmartSearchConfig.from_mapping({"search_space": SPACE, "workload": workload})
    return error.value.lines[0]


def test_a_trace_of_agent_sessions_is_refused_closed_loop(traces):
    agentic = {"trace_path": str(traces / "agentic.jsonl"), "trace_format": "agentic_mooncake", "replay_concurrency": 4}
    assert refusal(agentic).startswith("workload.replay_concurrency: a agentic_mooncake trace of agent sessions replays only open loop")
    sessions = {"trace_path": str(traces / "dynamo_agentic.jsonl"), "trace_format": "dynamo", "replay_concurrency": 4}
    assert refusal(sessions).startswith("workload.replay_concurrency: a dynamo trace of agent sessions")
    plain = SmartSearchConfig.from_mapping({"search_space": SPACE, "workload": {
        "trace_path": str(traces / "dynamo.jsonl"), "trace_format": "dynamo", "replay_concurrency": 4}})
    assert plain.workload.effective_in_flight_cap() == 4


def test_a_trace_is_read_in_its_format_and_a_wrong_one_says_so(traces):
    assert refusal({"trace_path": str(traces / "dynamo.jsonl")}).startswith(
        f"workload.trace_path: {traces / 'dynamo.jsonl'} line 1: timestamp None must be a number of ms ≥ 0")
    assert refusal({"trace_path": str(traces / "dynamo.jsonl"), "trace_format": "weka"}) == (
        "workload.trace_format: 'weka' is not one of mooncake, agentic_mooncake, dynamo")
    assert refusal({"isl": 10, "osl": 10, "concurrency": 2, "num_request_ratio": 1, "trace_format": "dynamo"}) == (
        "workload: trace_format applies only to a trace workload (set trace_path)")


def test_the_evaluation_says_the_configs_rules_under_workload():
    with pytest.raises(ValueError, match=r"^workload.length_spread applies to single-turn traffic"):
        WorkloadSpec(kind="synthetic", isl=10, osl=10, request_count=5, concurrency=2, length_spread=0.2, turns_per_session=2)
    with pytest.raises(ValueError, match=r"^workload.turns_per_session is a synthetic-workload field and cannot be used with trace_path$"):
        WorkloadSpec(kind="trace", trace_path="t.jsonl", turns_per_session=2)
    from spica.evaluation.traffic import as_trace_call

    with pytest.raises(ValueError, match=r"^client_start applies to a single-turn closed loop"):  # a hand-edited replay input
        as_trace_call((10, 10, 5), {"request_rate": 1.0, "client_start": "staggered"})
    with pytest.raises(ValueError, match=r"^client_start: 'spread' is not one of staggered$"):
        as_trace_call((10, 10, 5), {"replay_concurrency": 2, "client_start": "spread"})
