"""The calibration file: read and refused like any input, matched to a search, applied to the timing table."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
import yaml

from spica.core.errors import UserError
from spica.core.sla import SlaBounds
from spica.evaluation.calibration import (
    Calibration, Correction, candidate_fields, describe, for_search, load_calibration, request_overhead_ms, shifted_sla, shifted_summary,
)
from spica.evaluation.deployment import build_replay_call, WorkloadSpec
from spica.evaluation.evaluate import mean_prompt_tokens
from spica.evaluation.replay import run_replay
from spica.evaluation.timing import scaled


def correction(**fields) -> Correction:
    base = dict(model="Qwen/Qwen3-32B", system="h200_sxm", backend="vllm", backend_version="0.24.0", prefill=2.0, decode=1.5,
                prefill_exponent=-0.2, fitted_on={"points": 40}, held_out={"folds": 5})
    return Correction(**{**base, **fields})


def written(tmp_path, *corrections: Correction) -> Calibration:
    path = Calibration(corrections or (correction(),), {"spica": "test"}).write(tmp_path / "cal.yaml")
    return load_calibration(path)


def test_a_written_calibration_reads_back_with_its_digest(tmp_path):
    calibration = written(tmp_path)
    assert calibration.corrections == (correction(),)
    assert calibration.source == "cal.yaml" and len(calibration.sha256) == 64
    assert "data, not code" in (tmp_path / "cal.yaml").read_text()


@pytest.mark.parametrize("text, expected", [
    ("[1, 2]", "not a Spica calibration"),
    ("spica_calibration: 1\ncorrections: []\n", "'corrections' must be a non-empty list"),
    ("spica_calibration: 1\ncorrections: [{model: m, system: s, backend: b, backend_version: v, prefill: -1, decode: 1}]\n",
     "corrections[0].prefill: -1 must be a positive number"),
    ("spica_calibration: 1\ncorrections: [{model: m, system: s, backend: b, backend_version: v, prefill: 1, decode: 1, prefill_exponent: 3}]\n",
     "corrections[0].prefill_exponent: 3 must be a number between -0.5 and 0.5"),
    ("spica_calibration: 1\ncorrections: [{system: s, backend: b, backend_version: v, prefill: 1, decode: 1}]\n",
     "corrections[0].model: required"),
    ("spica_calibration: 1\ncorrections: [{model: m, system: s, backend: b, backend_version: v, prefill: 1, decode: 1, ttft_overhead_ms: -5}]\n",
     "corrections[0].ttft_overhead_ms: -5 must be a number of milliseconds from 0 to 10,000"),
    ("spica_calibration: 1\ncorrections: [{model: m, system: s, backend: b, backend_version: v, prefill: 1, decode: 1, ttft_overhead_ms_per_1k_tokens: .nan}]\n",
     "corrections[0].ttft_overhead_ms_per_1k_tokens: nan must be a number of milliseconds"),
])
def test_a_bad_calibration_file_is_one_line_naming_the_field(tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as error:
        load_calibration(path)
    assert len(error.value.lines) == 1 and error.value.lines[0].startswith("evaluation.calibration: ")
    assert expected in error.value.lines[0]


def test_another_model_or_an_uncovered_system_is_refused_and_a_close_checkpoint_warned(tmp_path, caplog):
    calibration = written(tmp_path)
    with pytest.raises(UserError) as error:
        for_search(calibration, "meta-llama/Meta-Llama-3.1-70B", [("h200_sxm", "vllm")], {})
    assert "was fitted for Qwen/Qwen3-32B, not meta-llama/Meta-Llama-3.1-70B" in error.value.lines[0]
    with pytest.raises(UserError) as error:
        for_search(calibration, "Qwen/Qwen3-32B", [("h200_sxm", "vllm"), ("h200_sxm", "sglang")], {})
    assert "has no correction for sglang on h200_sxm (it covers h200_sxm/vllm)" in error.value.lines[0]
    with caplog.at_level(logging.WARNING):
        found = for_search(calibration, "Qwen/Qwen3-32B-FP8", [("h200_sxm", "vllm")], {("h200_sxm", "vllm"): "0.19.0"})
    assert "fitted for Qwen/Qwen3-32B; using it for Qwen/Qwen3-32B-FP8" in caplog.text
    assert "fitted at vllm perf data 0.24.0; this search scores vllm on h200_sxm at 0.19.0" in caplog.text
    assert found["factors"] == {"h200_sxm/vllm": {"prefill": 2.0, "prefill_exponent": -0.2, "decode": 1.5, "decode_exponent": 0.0}}
    assert "h200_sxm/vllm prefill ×2" in describe(found) and "cal.yaml (sha256 " in describe(found)


def test_a_request_overhead_is_kept_with_the_factors_and_a_file_without_one_plans_as_before(tmp_path):
    with_overhead = written(tmp_path, correction(ttft_overhead_ms=30.0, ttft_overhead_ms_per_1k_tokens=12.5))
    assert with_overhead.corrections[0].ttft_overhead_ms == 30.0
    found = for_search(with_overhead, "Qwen/Qwen3-32B", [("h200_sxm", "vllm")], {})
    assert found["factors"]["h200_sxm/vllm"]["ttft_overhead_ms_per_1k_tokens"] == 12.5
    assert "request overhead 30 ms + 12.5 ms per 1k prompt tokens" in describe(found)
    plain = for_search(written(tmp_path, correction()), "Qwen/Qwen3-32B", [("h200_sxm", "vllm")], {})
    assert "ttft_overhead_ms" not in plain["factors"]["h200_sxm/vllm"] and "overhead" not in describe(plain)
    disagg = {"timing_calibration": {"roles": {"prefill": {"ttft_overhead_ms": 30.0, "ttft_overhead_ms_per_1k_tokens": 12.5},
                                                "decode": {"ttft_overhead_ms": 99.0}}}}
    assert request_overhead_ms(disagg, 2000) == pytest.approx(55.0)  # the role that answers first
    assert request_overhead_ms({}, 2000) == 0.0


def test_an_overhead_moves_the_latencies_a_client_sees_and_the_bounds_replay_counts_goodput_against():
    summary = {"mean_ttft_ms": 100.0, "p99_ttft_ms": 300.0, "std_ttft_ms": 20.0, "num_ttft_samples": 50, "mean_tpot_ms": 8.0,
               "median_e2e_latency_ms": 900.0, "mean_itl_ms": 8.0, "output_throughput_tok_s": 1000.0}
    moved = shifted_summary(summary, 25.0)
    assert moved == {**summary, "mean_ttft_ms": 125.0, "p99_ttft_ms": 325.0, "median_e2e_latency_ms": 925.0}
    bounds = shifted_sla(SlaBounds(ttft_ms=200.0, itl_ms=10.0, e2e_ms=20.0), 25.0)
    assert (bounds.ttft_ms, bounds.itl_ms, bounds.e2e_ms) == (175.0, 10.0, 0.001)  # an overhead alone past the bound: none can meet it
    assert shifted_sla(None, 25.0) is None


def test_the_table_is_scaled_pass_by_pass_and_stays_increasing():
    tokens = np.array([1.0, 256.0, 1024.0, 4096.0, 16384.0])
    kv, context = np.array([64.0, 4096.0, 65536.0]), np.array([64.0, 1024.0])
    decode = np.array([[10.0, 10.0], [12.0, 10.5], [30.0, 14.0]])  # rows: KV tokens; columns: context (batch = kv / context)
    tables = {"prefill_isl": tokens, "prefill_ttft_ms": tokens * 0.05 + 5.0, "decode_active_kv_tokens": kv,
              "decode_context_length": context, "decode_itl": decode}
    out = scaled(tables, {"prefill": 2.0, "prefill_exponent": -0.3, "decode": 0.5, "decode_exponent": 0.2})
    assert out["prefill_ttft_ms"][2] == pytest.approx(2.0 * tables["prefill_ttft_ms"][2])
    assert out["prefill_ttft_ms"][4] == pytest.approx(2.0 * 16 ** -0.3 * tables["prefill_ttft_ms"][4])
    assert np.all(np.diff(out["prefill_ttft_ms"]) >= 0)
    assert out["decode_itl"][1, 0] == pytest.approx(12.0 * 0.5)  # 64 requests: the reference batch
    assert out["decode_itl"][2, 1] == pytest.approx(14.0 * 0.5)  # 64 requests again
    assert out["decode_itl"][0, 0] == pytest.approx(10.0 * 0.5 * (1 / 64) ** 0.2)  # one request
    assert np.all(np.diff(out["decode_itl"], axis=0) >= 0)


@pytest.mark.e2e
def test_a_calibrated_candidate_is_timed_by_the_factors_and_says_which(agg_candidate, tmp_path):
    candidate = agg_candidate(tp=2, replicas=1)
    plan_calibration = for_search(written(tmp_path, correction(prefill=3.0, decode=2.0, prefill_exponent=0.0)), "Qwen/Qwen3-32B",
                                  [("h200_sxm", "vllm")], {})
    calibrated = {**candidate, **candidate_fields(plan_calibration, candidate)}
    assert calibrated["timing_calibration"]["id"].startswith("cal.yaml (sha256 ")
    workload = WorkloadSpec(kind="synthetic", isl=2000, osl=200, request_count=16, concurrency=1)
    plain, slower = run_replay(build_replay_call(candidate, workload)), run_replay(build_replay_call(calibrated, workload))
    assert slower.summary["mean_tpot_ms"] == pytest.approx(2.0 * plain.summary["mean_tpot_ms"], rel=0.02)
    assert slower.summary["mean_ttft_ms"] == pytest.approx(3.0 * plain.summary["mean_ttft_ms"], rel=0.1)
    ais = build_replay_call(calibrated, workload, timing="ais")
    assert run_replay(ais).reason == "timing_model"  # direct AIS cannot be scaled: refused, never silently uncalibrated


def test_a_traces_per_token_overhead_is_priced_at_its_mean_prompt(tmp_path):
    trace = tmp_path / "t.jsonl"
    rows = [{"timestamp": 10 * i, "input_length": length, "output_length": 8, "hash_ids": list(range(length // 512 + 1))}
            for i, length in enumerate((1000, 3000, 2000))]
    trace.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert mean_prompt_tokens(WorkloadSpec(kind="trace", trace_path=str(trace))) == 2000.0
    assert mean_prompt_tokens(WorkloadSpec(kind="synthetic", isl=700, osl=10, request_count=4, concurrency=1)) == 700.0
