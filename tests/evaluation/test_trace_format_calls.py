"""Each trace format of the workload registry, as the Replay call that scores a candidate on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from spica.evaluation.deployment import WorkloadSpec, build_replay_call

TRACES = Path(__file__).parents[1] / "workloads" / "data"


@pytest.mark.parametrize(("trace_format", "name", "model"), [
    ("mooncake", "dynamo.jsonl", None), ("agentic_mooncake", "agentic.jsonl", "Qwen/Qwen3-32B"), ("dynamo", "dynamo.jsonl", "Qwen/Qwen3-32B"),
])
def test_each_format_passes_replay_its_format_and_the_model_it_stands_for(agg_candidate, trace_format, name, model):
    spec = WorkloadSpec(kind="trace", trace_path=str(TRACES / name), trace_format=trace_format, arrival_speedup_ratio=2.0)
    call = build_replay_call(agg_candidate(model_name="Qwen/Qwen3-32B"), spec)
    assert (call.function, call.args) == ("run_trace_replay", (str(TRACES / name),))
    assert call.kwargs["trace_format"] == trace_format and call.kwargs["arrival_speedup_ratio"] == 2.0
    assert call.kwargs.get("execution_model") == model  # mooncake's call stays what upstream's was
