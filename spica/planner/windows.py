"""Per-interval traffic windows of a mooncake trace: what the Planner observes each interval.

The load-predictor sub-sweep (docs/search.md step 3) replays these windows through Dynamo's
predictors. They are cut the way Replay presents the trace to the Planner: arrival times are
rebased to the first request and divided by `arrival_speedup_ratio`, and an idle window carries
the last observed mean lengths forward (an average over no requests is undefined; Dynamo's
load predictor does the same so time-based predictors keep one point per interval).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence


@dataclass(frozen=True)
class Arrival:
    time_s: float
    input_length: int
    output_length: int


@dataclass(frozen=True)
class TrafficWindow:
    """One throughput interval: request count and mean input/output length."""

    start_s: float
    num_requests: int
    mean_isl: float
    mean_osl: float


def _field(row: dict, key: str, where: str) -> float:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: {key} must be a non-negative number, got {value!r}")
    return value


def read_arrivals(trace_path: str | Path, arrival_speedup_ratio: float = 1.0) -> tuple[Arrival, ...]:
    """Arrivals of a mooncake JSONL trace in seconds after its first request, sorted."""
    if not arrival_speedup_ratio > 0:
        raise ValueError(f"workload.arrival_speedup_ratio: {arrival_speedup_ratio!r} must be > 0")
    rows: list[tuple[float, int, int]] = []
    with open(trace_path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{trace_path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not a JSON line ({exc.msg})") from None
            rows.append(
                (_field(row, "timestamp", where), int(_field(row, "input_length", where)), int(_field(row, "output_length", where)))
            )
    if not rows:
        return ()
    origin_ms = min(timestamp for timestamp, _, _ in rows)
    scale = 1000.0 * arrival_speedup_ratio
    return tuple(
        Arrival((timestamp - origin_ms) / scale, isl, osl) for timestamp, isl, osl in sorted(rows, key=lambda row: row[0])
    )


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
