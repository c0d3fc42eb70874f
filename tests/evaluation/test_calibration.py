"""The calibration file: read and refused like any input, matched to a search, applied to the timing table."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import yaml

from spica.core.errors import UserError
from spica.evaluation.calibration import Calibration, Correction, candidate_fields, describe, for_search, load_calibration
from spica.evaluation.deployment import build_replay_call, WorkloadSpec
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
