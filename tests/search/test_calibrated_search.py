"""A search scored with a timing calibration: Replay still runs, its timing inputs move toward the
measurements, and every place a result is read says which calibration scored it."""

from __future__ import annotations

import json
import logging

import pytest
import yaml

from spica.config import ConfigError
from spica.evaluation.calibration import Calibration, Correction
from spica.plan import load_plan
from spica.results.table import format_results
from spica.search import run_smart_search
from spica.search.run import plan_calibration
from tests.search.test_search import small

pytestmark = pytest.mark.e2e


def pooled():
    """small()'s search on worker processes: evaluated inline, its capped replays would start a
    forkserver in the test process, which later tests' pools would then share."""
    return small(sweep={"parallel_evals": 2})


def calibration_file(tmp_path, name="cal.yaml", **fields):
    correction = dict(model="Qwen/Qwen3-32B-FP8", system="h200_sxm", backend="vllm", backend_version="0.24.0",
                      prefill=1.0, decode=2.0, prefill_exponent=0.0)
    return Calibration((Correction(**{**correction, **fields}),)).write(tmp_path / name)


def test_a_calibrated_search_scores_slower_decode_and_records_the_calibration_everywhere(tmp_path):
    path = calibration_file(tmp_path)
    plain = run_smart_search(pooled(), results_dir=tmp_path / "plain")
    calibrated = run_smart_search(pooled(), results_dir=tmp_path / "calibrated", calibration=path)
    by_shape = {c.label(): c for c in plain.ledger if c.feasible}
    pairs = [(by_shape[c.label()], c) for c in calibrated.ledger if c.feasible and c.label() in by_shape]
    assert pairs
    for before, after in pairs:  # a decode factor of 2 doubles every step: TPOT doubles, tok/s/GPU falls
        assert after.metrics["mean_tpot_ms"] == pytest.approx(2.0 * before.metrics["mean_tpot_ms"], rel=0.15)
        assert after.objectives["throughput_per_gpu"] < 0.7 * before.objectives["throughput_per_gpu"]
    folder = tmp_path / "calibrated"
    plan = load_plan(folder / "plan.yaml")
    assert plan.calibration["factors"] == {"h200_sxm/vllm": {"prefill": 1.0, "prefill_exponent": 0.0, "decode": 2.0, "decode_exponent": 0.0}}
    assert plan.calibration["source"] == "cal.yaml"
    assert json.loads((folder / "summary.json").read_text())["calibration"]["sha256"] == plan.calibration["sha256"]
    ledger = json.loads((folder / "ledger.json").read_text())
    assert all(entry["unrolled"]["timing_calibration"]["id"].startswith("cal.yaml (sha256 ") for entry in ledger)
    manifests = list(folder.glob("deploy/*/dynamo.yaml"))
    assert manifests
    for manifest in manifests:
        annotations = yaml.safe_load(manifest.read_text())["metadata"]["annotations"]
        assert annotations["spica/calibration"].startswith("cal.yaml (sha256 ")
    footer = format_results(plan.config, calibrated, {})
    assert "timing calibrated with cal.yaml (sha256 " in footer and "decode ×2" in footer
    assert "timing calibrated" not in format_results(plain.plan.config, plain, {})


def test_a_calibration_for_another_model_is_refused_before_any_replay(tmp_path):
    path = calibration_file(tmp_path, model="meta-llama/Meta-Llama-3.1-70B")
    with pytest.raises(ConfigError) as error:
        run_smart_search(pooled(), results_dir=tmp_path / "r", calibration=path)
    assert error.value.lines == [
        "evaluation.calibration: cal.yaml was fitted for meta-llama/Meta-Llama-3.1-70B, not Qwen/Qwen3-32B-FP8; "
        "calibrate on measurements of Qwen/Qwen3-32B-FP8"
    ]
    assert not (tmp_path / "r" / "ledger.json").exists()


def test_a_request_overhead_makes_every_ttft_later_by_itself_and_is_held_to_the_sla(tmp_path):
    """The same timing with and without a request overhead of 40 ms + 10 ms per 1k prompt tokens:
    Replay's timing is the same, so every TTFT and end-to-end latency is exactly 45.12 ms later
    (isl 512) and TPOT is not; under a TTFT bound that only some candidates meet once the overhead
    is added, exactly those are feasible."""
    path = calibration_file(tmp_path, decode=1.0, ttft_overhead_ms=40.0, ttft_overhead_ms_per_1k_tokens=10.0)
    timing_only = calibration_file(tmp_path, "timing.yaml", decode=1.0)
    plain = run_smart_search(pooled(), results_dir=tmp_path / "plain", calibration=timing_only)
    calibrated = run_smart_search(pooled(), results_dir=tmp_path / "calibrated", calibration=path)
    shift = 40.0 + 10.0 * 512 / 1000
    by_shape = {c.label(): c for c in plain.ledger if c.feasible}
    pairs = [(by_shape[c.label()], c) for c in calibrated.ledger if c.feasible and c.label() in by_shape]
    assert len(pairs) >= 3
    for before, after in pairs:
        for metric in ("mean_ttft_ms", "p90_ttft_ms", "max_ttft_ms", "mean_e2e_latency_ms", "p99_e2e_latency_ms"):
            assert after.metrics[metric] == pytest.approx(before.metrics[metric] + shift, abs=1e-6), metric
        assert after.metrics["mean_tpot_ms"] == before.metrics["mean_tpot_ms"]
        assert after.metrics["std_ttft_ms"] == before.metrics["std_ttft_ms"]
        assert after.provenance["ttft_overhead_ms"] == pytest.approx(shift)
    ttfts = sorted(before.metrics["mean_ttft_ms"] for before, _ in pairs)
    bound = ttfts[len(ttfts) // 2] + shift / 2  # met by every plain candidate at or below the median, calibrated by fewer
    bounded = small(sweep={"parallel_evals": 2}, goal={"sla": {"ttft_ms": bound}, "strict_sla": True})
    held = run_smart_search(bounded, results_dir=tmp_path / "held", calibration=path)
    for candidate in held.ledger:
        replayed = candidate.metrics["mean_ttft_ms"] - shift
        assert candidate.feasible == (replayed + shift <= bound), (replayed, bound)
        if not candidate.feasible:
            assert "sla: mean_ttft_ms" in candidate.reason
    assert any(c.feasible for c in held.ledger) and any(not c.feasible for c in held.ledger)
    footer = format_results(calibrated.plan.config, calibrated, {})
    assert "request overhead 40 ms + 10 ms per 1k prompt tokens" in footer


def test_a_closed_loop_is_told_how_the_calibration_replayed_its_clients(tmp_path, caplog):
    path = calibration_file(tmp_path, fitted_on={"points": 12, "client_start": "staggered"})
    with caplog.at_level(logging.WARNING):
        plan_calibration(path, small())
    assert "cal.yaml was fitted replaying the measured clients staggered; this closed loop starts them all at once" in caplog.text
    assert "set workload.client_start=staggered to score it as fitted" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        plan_calibration(path, small(workload={"client_start": "staggered"}))
    assert "fitted replaying" not in caplog.text
