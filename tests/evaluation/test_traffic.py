"""Synthetic traffic Replay cannot draw (workload.length_spread, workload.client_start), replayed as its trace."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace

import pytest

from spica.config import ConfigError, SmartSearchConfig
from spica.evaluation.deployment import ReplayCall, WorkloadSpec, build_replay_call
from spica.evaluation.replay import run_replay
from spica.evaluation.traffic import as_trace_call, drawn_lengths, drawn_trace

pytestmark = pytest.mark.e2e


def synthetic(spread: float, concurrency: int | None = 16, rate: float | None = None) -> WorkloadSpec:
    return WorkloadSpec(kind="synthetic", isl=2000, osl=200, request_count=160, concurrency=concurrency,
                        request_rate=rate, length_spread=spread)


def test_lengths_are_uniform_around_the_means_and_seeded():
    lengths = drawn_lengths(2000, 200, 2000, 0.2, seed=5)
    prompts, answers = [p for p, _ in lengths], [a for _, a in lengths]
    assert 1600 <= min(prompts) and max(prompts) <= 2400 and 160 <= min(answers) and max(answers) <= 240
    assert abs(statistics.fmean(prompts) / 2000 - 1) < 0.01 and abs(statistics.fmean(answers) / 200 - 1) < 0.01
    assert drawn_lengths(2000, 200, 50, 0.2, seed=5) == lengths[:50]
    assert drawn_lengths(2000, 200, 50, 0.2, seed=6) != lengths[:50]


def test_a_spread_of_zero_replays_exactly_as_replays_own_synthetic_traffic(agg_candidate):
    call = build_replay_call(agg_candidate(tp=2, replicas=1), synthetic(0.0))
    assert call.function == "run_synthetic_trace_replay" and "length_spread" not in call.kwargs
    function, args, kwargs = as_trace_call(call.args, {**call.kwargs, "length_spread": 0.0})
    own, as_trace = run_replay(call), run_replay(ReplayCall(function, args, kwargs, call.timing))
    assert own.status == as_trace.status == "ok"
    for metric in ("mean_ttft_ms", "mean_tpot_ms", "output_throughput_tok_s", "completed_requests"):
        assert as_trace.summary[metric] == pytest.approx(own.summary[metric], rel=1e-9), metric


def test_drawn_lengths_break_the_lock_step_of_identical_requests(agg_candidate):
    """Identical requests in a closed loop finish together, so each wave of prompts is prefilled
    as one burst; drawn lengths spread the arrivals and TTFT falls (measured: 3x at c8)."""
    candidate = agg_candidate(tp=2, replicas=1)
    identical = run_replay(build_replay_call(candidate, synthetic(0.0)))
    spread = build_replay_call(candidate, synthetic(0.1))
    assert spread.kwargs["length_spread"] == 0.1
    varied = run_replay(spread)
    assert varied.status == "ok" and varied.summary["completed_requests"] == 160
    assert varied.summary["mean_ttft_ms"] < 0.8 * identical.summary["mean_ttft_ms"]


def test_an_open_loop_keeps_its_rate(agg_candidate, tmp_path):
    call = build_replay_call(agg_candidate(tp=2, replicas=1), synthetic(0.1, concurrency=None, rate=4.0))
    outcome = run_replay(call)
    assert outcome.status == "ok"
    assert outcome.summary["request_throughput_rps"] == pytest.approx(4.0, rel=0.25)
    path = drawn_trace(2000, 200, 160, 0.1, 42, 4.0)
    times = [json.loads(line)["timestamp"] for line in path.read_text().splitlines()]
    assert times == sorted(times) and 160 / (times[-1] / 1000) == pytest.approx(4.0, rel=0.25)


def test_the_spread_is_a_synthetic_single_turn_field():
    base = {"search_space": {"model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm"}, "goal": {"target": "throughput_per_gpu"}}
    config = SmartSearchConfig.from_mapping({**base, "workload": {"isl": 100, "osl": 10, "concurrency": 4, "num_request_ratio": 2,
                                                                   "length_spread": 0.2}})
    assert config.workload.length_spread == 0.2
    for workload, expected in [
        ({"isl": 100, "osl": 10, "concurrency": 4, "num_request_ratio": 2, "length_spread": 1.5}, "workload.length_spread"),
        ({"isl": 100, "osl": 10, "concurrency": 4, "num_request_ratio": 2, "length_spread": 0.2, "turns_per_session": 3},
         "length_spread applies to single-turn traffic"),
    ]:
        with pytest.raises(ConfigError) as error:
            SmartSearchConfig.from_mapping({**base, "workload": workload})
        assert expected in error.value.lines[0]


def test_a_staggered_start_ramps_the_first_answers_then_sends_identical_requests():
    lengths = drawn_lengths(2000, 200, 40, 0.0, seed=1, staggered=8)
    assert [answer for _, answer in lengths[:8]] == [25, 50, 75, 100, 125, 150, 175, 200]
    assert set(lengths[8:]) == {(2000, 200)} and {prompt for prompt, _ in lengths} == {2000}


def test_staggered_clients_leave_the_lock_step_and_are_one_line_elsewhere(agg_candidate):
    """Every client at once, identical requests stay in lock-step (each wave prefilled as one
    burst); started spread, the later identical requests arrive one by one, and TTFT falls."""
    candidate = agg_candidate(tp=2, replicas=1)
    together = run_replay(build_replay_call(candidate, synthetic(0.0)))
    call = build_replay_call(candidate, replace(synthetic(0.0), client_start="staggered"))
    assert call.kwargs["client_start"] == "staggered" and call.kwargs["replay_concurrency"] == 16
    staggered = run_replay(call)
    assert staggered.status == "ok" and staggered.summary["completed_requests"] == 160
    assert staggered.summary["mean_ttft_ms"] < 0.6 * together.summary["mean_ttft_ms"]
    with pytest.raises(ValueError, match="client_start applies to a single-turn closed loop"):  # the config's one rule and message
        build_replay_call(candidate, replace(synthetic(0.0, concurrency=None, rate=4.0), client_start="staggered"))
    base = {"search_space": {"model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm"}, "goal": {"target": "throughput_per_gpu"}}
    for workload, expected in [
        ({"isl": 100, "osl": 10, "request_rate": 2.0, "num_request_ratio": 2, "client_start": "staggered"}, "client_start applies to a single-turn closed loop"),
        ({"isl": 100, "osl": 10, "concurrency": 4, "num_request_ratio": 2, "client_start": "spread"}, "workload.client_start"),
    ]:
        with pytest.raises(ConfigError) as error:
            SmartSearchConfig.from_mapping({**base, "workload": workload})
        assert expected in error.value.lines[0]


def test_the_default_start_is_left_out_of_the_plan_and_a_staggered_one_scores_apart():
    from spica.plan import compile_plan

    base = {"search_space": {"model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm"}, "goal": {"target": "throughput_per_gpu"},
            "workload": {"isl": 100, "osl": 10, "concurrency": 4, "num_request_ratio": 2}}
    plan = compile_plan(SmartSearchConfig.from_mapping(base))
    assert "client_start" not in plan.to_yaml()
    staggered = compile_plan(SmartSearchConfig.from_mapping({**base, "workload": {**base["workload"], "client_start": "staggered"}}))
    assert staggered.scores_fingerprint != plan.scores_fingerprint and staggered.fingerprint != plan.fingerprint
