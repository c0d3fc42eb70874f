"""Mooncake JSONL (Replay's default format): one request a line, `timestamp` (ms, never going
back), `input_length`, `output_length`, `hash_ids` covering the prompt in 512-token blocks
(Replay's default `trace_block_size`); an optional `session_id` groups turns."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from spica.workloads import trace
from spica.workloads.trace import TraceError, TraceRequest, hash_ids, json_rows, milliseconds, positive_int

HASH_BLOCK_TOKENS = 512


def read(path: str | Path) -> Iterator[TraceRequest]:
    previous: float | None = None
    for number, where, row in json_rows(path, "a mooncake trace"):
        milliseconds(row, "timestamp", where)
        timestamp = row["timestamp"]
        if previous is not None and timestamp < previous:
            raise TraceError(f"{where}: timestamp {timestamp} goes back from {previous}; rows must be in time order")
        prompt = positive_int(row, "input_length", where)
        answer = positive_int(row, "output_length", where)
        blocks = hash_ids(row, "hash_ids", where, prompt, HASH_BLOCK_TOKENS)
        previous = timestamp
        session = row.get("session_id")
        yield TraceRequest(number, float(timestamp), prompt, answer, blocks,
                           str(session) if session is not None else None)


def replay_call(spec: Any, concurrency: int | None, model: str | None) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """Replay's default format: no keyword of its own (the call stays what upstream's was)."""
    return trace.replay_call(spec, concurrency)
