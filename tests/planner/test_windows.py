from __future__ import annotations

import pytest

from spica.planner.windows import Arrival, TrafficWindow, cut_windows, read_arrivals


def test_arrivals_are_rebased_to_the_first_request_and_sped_up(write_trace):
    path = write_trace([(100_000, 300, 30), (130_000, 100, 10), (160_000, 200, 20)])  # a mooncake trace never goes back
    assert read_arrivals(path, arrival_speedup_ratio=2.0) == (
        Arrival(0.0, 300, 30),
        Arrival(15.0, 100, 10),
        Arrival(30.0, 200, 20),
    )


def test_windows_count_requests_and_average_lengths_carrying_them_over_idle_windows():
    arrivals = [Arrival(0.0, 100, 10), Arrival(5.0, 300, 30), Arrival(25.0, 50, 5)]
    assert cut_windows(arrivals, 10) == (
        TrafficWindow(0.0, 2, 200.0, 20.0),
        TrafficWindow(10.0, 0, 200.0, 20.0),
        TrafficWindow(20.0, 1, 50.0, 5.0),
    )


def test_conversation_trace_has_twenty_three_minute_windows(mooncake_dir):
    windows = cut_windows(read_arrivals(mooncake_dir / "conversation_trace.jsonl"), 180)
    assert len(windows) == 20
    assert sum(window.num_requests for window in windows) == 12031
    assert windows[0].num_requests == 556


def test_bad_rows_and_ratios_are_one_line_errors(write_trace, tmp_path):
    path = write_trace([(0, 100, 10)])
    with pytest.raises(ValueError, match=r"^workload.arrival_speedup_ratio: 0 must be > 0$"):
        read_arrivals(path, 0)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"timestamp": 0, "input_length": 10}\n')
    with pytest.raises(ValueError, match=r"broken.jsonl line 1: output_length None must be a positive integer$"):
        read_arrivals(broken)
