"""Dynamo's own request traces (Replay's `dynamo`): the `dynamo.request.trace.v1` events a Dynamo
frontend records. Each `request_end` event is a request: `request.request_received_ms`,
`request.output_tokens`, and under `request.replay` its `input_length`, `input_sequence_hashes`
and `trace_block_size`. Other events (tool calls, payloads) are read past. Requests with an
`agent_context` belong to agent sessions: Replay then runs the trace open loop only and asks for
the model it stands for (`execution_model`: the candidate's model).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from spica.workloads import trace
from spica.workloads.trace import TraceError, TraceRequest

SCHEMA = "dynamo.request.trace.v1"


def read(path: str | Path) -> Iterator[TraceRequest]:
    for number, where, row in trace.json_rows(path, "a dynamo trace"):
        if row.get("schema") != SCHEMA or row.get("event_type") != "request_end":
            continue
        request = _object(row, "request", where)
        replay = _object(request, "replay", where, "request.replay")
        trace.text(request, "request_id", where, "request.request_id")
        received = trace.milliseconds(request, "request_received_ms", where, "request.request_received_ms")
        answer = trace.positive_int(request, "output_tokens", where, "request.output_tokens")
        prompt = trace.positive_int(replay, "input_length", where, "request.replay.input_length")
        block = trace.positive_int(replay, "trace_block_size", where, "request.replay.trace_block_size")
        blocks = trace.hash_ids(replay, "input_sequence_hashes", where, prompt, block)
        context = row.get("agent_context")
        if context is not None and not isinstance(context, dict):
            raise TraceError(f"{where}: agent_context must be an object")
        session = context.get("session_id") if context else None
        yield TraceRequest(number, received, prompt, answer, blocks, str(session) if session is not None else None,
                           waits=context is not None)


def _object(row: dict[str, Any], field: str, where: str, name: str | None = None) -> dict[str, Any]:
    value = row.get(field)
    if not isinstance(value, dict):
        raise TraceError(f"{where}: {name or field} must be an object")
    return value


def replay_call(spec: Any, concurrency: int | None, model: str) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    return trace.replay_call(spec, concurrency, execution_model=model)
