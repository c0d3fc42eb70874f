"""The load-predictor sub-sweep with Dynamo's own predictor classes (docs/search.md step 3)."""

from __future__ import annotations

import json
import math

import pytest

from spica.config.presets import LOAD_PREDICTORS
from spica.planner.config import PlannerConfigError
from spica.planner.predictors import candidate_loss, predictor_sub_sweep, window_loss
from spica.planner.windows import TrafficWindow, cut_windows, read_arrivals

FAST = ["constant_last", "kalman_default_raw", "kalman_default_log1p", "kalman_reactive_raw", "kalman_reactive_log1p"]


def presets(names):
    return [(name, dict(LOAD_PREDICTORS[name])) for name in names]


def test_window_loss_is_the_spec_formula():
    window = TrafficWindow(0.0, 10, 1000.0, 100.0)
    expected = (
        0.4 * abs(math.log1p(8 * 1200.0) - math.log1p(10 * 1000.0))
        + 0.4 * abs(math.log1p(8 * 90.0) - math.log1p(10 * 100.0))
        + 0.1 * abs(math.log1p(1200.0) - math.log1p(1000.0))
        + 0.1 * abs(math.log1p(90.0) - math.log1p(100.0))
    )
    assert window_loss(8, 1200.0, 90.0, window) == pytest.approx(expected)
    assert window_loss(10, 1000.0, 100.0, window) == 0.0


def test_constant_last_forecasts_the_previous_window_after_warm_up():
    windows = [TrafficWindow(0, 10, 100.0, 10.0), TrafficWindow(1, 20, 200.0, 20.0), TrafficWindow(2, 5, 100.0, 40.0)]
    expected = (window_loss(10, 100.0, 10.0, windows[1]) + window_loss(20, 200.0, 20.0, windows[2])) / 2
    assert candidate_loss(windows, LOAD_PREDICTORS["constant_last"], 180, warmup=1) == pytest.approx(expected)
    assert candidate_loss(windows, LOAD_PREDICTORS["constant_last"], 180, warmup=3) == math.inf


def test_conversation_trace_pins_a_winner_per_interval_with_every_loss(mooncake_dir):
    result = predictor_sub_sweep(str(mooncake_dir / "conversation_trace.jsonl"), [600, 180, 600], presets(FAST))
    assert result.reason == "swept"
    assert sorted(result.intervals) == [180, 600]
    at_180 = result.intervals[180]
    assert (at_180.windows, at_180.warmup_windows) == (20, 5)
    assert list(at_180.losses) == FAST and all(math.isfinite(loss) for loss in at_180.losses.values())
    assert at_180.reason == "best_loss"
    assert at_180.winner == min(at_180.losses, key=at_180.losses.get) == "kalman_default_log1p"
    assert at_180.winner_fields == dict(LOAD_PREDICTORS["kalman_default_log1p"])
    assert result.intervals[600].winner == "constant_last"
    assert json.loads(json.dumps(result.to_dict()))["intervals"]["180"]["winner"] == "kalman_default_log1p"


def test_a_trace_too_short_for_an_interval_falls_back_to_constant_last(mooncake_dir):
    result = predictor_sub_sweep(str(mooncake_dir / "conversation_trace_15min.jsonl"), [60, 600], presets(FAST))
    assert result.intervals[60].reason == "best_loss"
    short = result.intervals[600]
    assert (short.winner, short.reason, short.windows) == ("constant_last", "all_losses_infinite", 2)
    assert set(short.losses.values()) == {math.inf}
    assert short.to_dict()["losses"]["kalman_default_raw"] is None


def test_synthetic_workload_pins_constant_last_for_every_interval():
    result = predictor_sub_sweep(None, [180, 600], presets(FAST))
    assert result.reason == "static_workload_constant"
    assert {s: (c.winner, c.reason, dict(c.winner_fields)) for s, c in result.intervals.items()} == {
        180: ("constant_last", "static_workload_constant", {"load_predictor": "constant", "load_predictor_log1p": False}),
        600: ("constant_last", "static_workload_constant", {"load_predictor": "constant", "load_predictor_log1p": False}),
    }


def test_no_throughput_scaling_policy_skips_the_sweep(mooncake_dir):
    result = predictor_sub_sweep(str(mooncake_dir / "conversation_trace.jsonl"), [], presets(FAST), has_throughput_scaling=False)
    assert result.to_dict() == {"reason": "no_throughput_scaling_candidate", "intervals": {}}


def test_dict_candidates_take_dynamo_defaults_and_bad_values_name_the_candidate(write_trace):
    trace = write_trace([(index * 1000.0, 100 + index, 10) for index in range(60)])
    result = predictor_sub_sweep(str(trace), [5], [("custom_0", {"load_predictor": "kalman", "kalman_min_points": 3})])
    assert result.intervals[5].winner_fields == {
        "load_predictor": "kalman",
        "load_predictor_log1p": False,
        "kalman_q_level": 1.0,
        "kalman_q_trend": 0.1,
        "kalman_r": 10.0,
        "kalman_min_points": 3,
    }
    assert result.intervals[5].warmup_windows == 3
    with pytest.raises(PlannerConfigError, match=r"^load_predictor_candidates\[custom_1\]: prophet_window_size: Input should be greater than 0$"):
        predictor_sub_sweep(str(trace), [5], [("custom_1", {"load_predictor": "prophet", "prophet_window_size": 0})])


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.drop")
def test_all_eleven_presets_on_the_conversation_trace(mooncake_dir):
    """ARIMA and Prophet refit every window: about a minute of CPU (benchmarks/bench_predictors.py)."""
    result = predictor_sub_sweep(str(mooncake_dir / "conversation_trace.jsonl"), [180, 600], presets(LOAD_PREDICTORS))
    for interval in (180, 600):
        choice = result.intervals[interval]
        assert list(choice.losses) == list(LOAD_PREDICTORS)
        assert all(math.isfinite(loss) for loss in choice.losses.values())
        assert choice.reason == "best_loss"
        assert choice.losses[choice.winner] == min(choice.losses.values())
