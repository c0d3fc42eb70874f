"""Per-interval traffic windows of a trace: what the Planner observes each interval.

The load-predictor sub-sweep (docs/search.md step 3) replays these windows through Dynamo's
predictors. They are cut the way Replay presents the trace to the Planner: arrival times are
rebased to the first request and divided by `arrival_speedup_ratio`, and an idle window carries
the last observed mean lengths forward (an average over no requests is undefined; Dynamo's
load predictor does the same so time-based predictors keep one point per interval).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from spica.workloads import registry as workloads
from spica.workloads.trace import Arrival


@dataclass(frozen=True)
class TrafficWindow:
    """One throughput interval: request count and mean input/output length."""

    start_s: float
    num_requests: int
    mean_isl: float
    mean_osl: float


def read_arrivals(trace_path: str | Path, arrival_speedup_ratio: float = 1.0, trace_format: str = "mooncake") -> tuple[Arrival, ...]:
    """Arrivals of a trace in seconds after its first request, sorted, read by its format's
    reader and window builder (spica/workloads/registry.py)."""
    return workloads.arrivals(trace_path, trace_format, arrival_speedup_ratio)


def cut_windows(arrivals: Sequence[Arrival], interval_s: float) -> tuple[TrafficWindow, ...]:
    """Consecutive `interval_s` windows from the first arrival to the last (the last may be partial)."""
    if not interval_s > 0:
        raise ValueError(f"throughput interval: {interval_s!r} must be > 0 seconds")
    if not arrivals:
        return ()
    count = int(arrivals[-1].time_s // interval_s) + 1
    requests = [0] * count
    input_tokens = [0] * count
    output_tokens = [0] * count
    for arrival in arrivals:
        index = int(arrival.time_s // interval_s)
        requests[index] += 1
        input_tokens[index] += arrival.input_length
        output_tokens[index] += arrival.output_length
    windows: list[TrafficWindow] = []
    mean_isl = mean_osl = 0.0
    for index in range(count):
        if requests[index]:
            mean_isl = input_tokens[index] / requests[index]
            mean_osl = output_tokens[index] / requests[index]
        windows.append(TrafficWindow(index * interval_s, requests[index], mean_isl, mean_osl))
    return tuple(windows)
