"""What every trace format shares: the request a reader yields, its one-line errors, and how a
trace becomes a Replay call and the Planner's arrivals. A format's own module (mooncake.py, ...)
only reads its rows into `TraceRequest`s."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from spica.core.errors import UserError

MAX_REPLAY_REQUESTS = 1_000_000
"""Replay holds every request in memory (about 1 GB per 100,000 here): a replay, synthetic or
from a trace, is refused beyond this many requests."""


class TraceError(UserError):
    """A trace file Replay cannot use; the message names the line and the field."""


@dataclass(frozen=True)
class TraceRequest:
    """One request of a trace, whatever its format. `time_ms` is its arrival, or for a request
    that waits on others (agentic traces) the earliest it may start; `session` groups turns."""

    line: int
    time_ms: float
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]
    session: str | None = None
    waits: bool = False  # it depends on other requests: its real start is known only in the replay


@dataclass(frozen=True)
class Arrival:
    time_s: float
    input_length: int
    output_length: int


def json_rows(path: str | Path, what: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(line number, where, row) for each non-blank line, `where` naming the file and line; a line that is not a
    JSON object, or a file that cannot be read as text, ends the pass with a TraceError."""
    try:
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                where = f"{path} line {number}"
                try:
                    row = json.loads(line)
                except ValueError:
                    raise TraceError(f"{where}: not a JSON object ({what} has one per line)") from None
                if not isinstance(row, dict):
                    raise TraceError(f"{where}: {line.strip()[:40]!r} is not a JSON object")
                yield number, where, row
    except UnicodeDecodeError:
        raise TraceError(f"{path}: not UTF-8 text ({what} is JSON lines)") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def positive_int(row: dict[str, Any], field: str, where: str, name: str | None = None) -> int:
    value = row.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise TraceError(f"{where}: {name or field} {value!r} must be a positive integer")
    return value


def milliseconds(row: dict[str, Any], field: str, where: str, name: str | None = None) -> float:
    value = row.get(field)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise TraceError(f"{where}: {name or field} {value!r} must be a number of ms ≥ 0")
    return float(value)


def hash_ids(row: dict[str, Any], field: str, where: str, input_length: int, block: int, exact: bool = False) -> tuple[int, ...]:
    """The prompt's block hashes: integers covering `input_length` in `block`-token blocks
    (exactly that many blocks where the format says so)."""
    value = row.get(field)
    if not isinstance(value, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in value):
        raise TraceError(f"{where}: {field} must be a list of integers")
    needed = -(-input_length // block)
    if len(value) < needed or (exact and len(value) != needed):
        raise TraceError(
            f"{where}: {len(value)} {field} cover {len(value) * block} tokens, "
            f"{'not exactly' if exact and len(value) > needed else 'fewer than'} input_length {input_length} ({block} tokens per block)"
        )
    return tuple(value)


def text(row: dict[str, Any], field: str, where: str, name: str | None = None) -> str:
    value = row.get(field)
    if not isinstance(value, str) or not value:
        raise TraceError(f"{where}: {name or field} {value!r} must be a non-empty string")
    return value


def arrivals(requests: Iterable[TraceRequest], arrival_speedup_ratio: float = 1.0) -> tuple[Arrival, ...]:
    """The Planner's view of a trace: arrivals in seconds after the first, divided by the speedup
    the way Replay presents them, sorted. A request that waits on others counts at its earliest start."""
    if not arrival_speedup_ratio > 0:
        raise ValueError(f"workload.arrival_speedup_ratio: {arrival_speedup_ratio!r} must be > 0")
    rows = sorted((request.time_ms, request.input_length, request.output_length) for request in requests)
    if not rows:
        return ()
    origin, scale = rows[0][0], 1000.0 * arrival_speedup_ratio
    return tuple(Arrival((time_ms - origin) / scale, isl, osl) for time_ms, isl, osl in rows)


def replay_call(spec: Any, concurrency: int | None, **extra: Any) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """`dynamo.replay.run_trace_replay` on the file: open loop at its timestamps / the speedup, or
    closed loop at `concurrency`; `extra` is a format's own keywords."""
    kwargs: dict[str, Any] = {"trace_format": spec.trace_format}
    if concurrency is not None:
        kwargs["replay_concurrency"] = int(concurrency)
    else:
        kwargs["arrival_speedup_ratio"] = float(spec.arrival_speedup_ratio)
    if spec.shared_prefix_ratio > 0:
        kwargs["trace_shared_prefix_ratio"] = float(spec.shared_prefix_ratio)
        kwargs["trace_num_prefix_groups"] = int(spec.num_prefix_groups)
    kwargs.update(extra)
    return "run_trace_replay", (str(spec.trace_path),), kwargs
