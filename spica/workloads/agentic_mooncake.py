"""Agentic Mooncake (Replay's `agentic_mooncake`, version 2): a header line, then one request a
line whose start may wait on others' dispatch or completion.

Header: `schema` "dynamo.agentic_mooncake", `version` 2, `block_size` (tokens per hash id) and a
`source` object. Request: `request_id` (unique), `play_id`, `session_id`, `model`,
`input_length`, `output_length`, `hash_ids` (exactly enough blocks for the prompt),
`not_before_ms`, and `dependencies` (each: `request_id` of a request in the file, `trigger`,
`relation`, `delay_ms`). Replay runs it open loop only and asks for the model it stands for
(`execution_model`: the candidate's model).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from spica.workloads import trace
from spica.workloads.trace import TraceError, TraceRequest

SCHEMA = "dynamo.agentic_mooncake"
VERSION = 2


def read(path: str | Path) -> Iterator[TraceRequest]:
    rows = trace.json_rows(path, "an agentic mooncake trace")
    block = 0
    seen: set[str] = set()
    awaited: dict[str, str] = {}  # a dependency not yet seen → where it was named
    for number, where, row in rows:
        if not block:
            block = _header(row, where)
            continue
        name = trace.text(row, "request_id", where)
        if name in seen:
            raise TraceError(f"{where}: request_id {name!r} is used twice")
        for field in ("play_id", "session_id", "model"):
            trace.text(row, field, where)
        prompt = trace.positive_int(row, "input_length", where)
        answer = trace.positive_int(row, "output_length", where)
        blocks = trace.hash_ids(row, "hash_ids", where, prompt, block, exact=True)
        start = trace.milliseconds(row, "not_before_ms", where)
        depends = _dependencies(row.get("dependencies", []), where)
        seen.add(name)
        awaited.pop(name, None)
        for other in depends:
            if other not in seen:
                awaited.setdefault(other, where)
        yield TraceRequest(number, start, prompt, answer, blocks, row["session_id"], waits=bool(depends))
    if awaited:
        other, where = next(iter(awaited.items()))
        raise TraceError(f"{where}: dependencies name request_id {other!r}, which is not in the trace")


def _header(row: dict[str, Any], where: str) -> int:
    if row.get("schema") != SCHEMA or row.get("version") != VERSION:
        raise TraceError(f"{where}: the header must say schema {SCHEMA!r} and version {VERSION} "
                         f"(got {row.get('schema')!r}, {row.get('version')!r})")
    if not isinstance(row.get("source"), dict):
        raise TraceError(f"{where}: source must be an object (where the trace came from)")
    return trace.positive_int(row, "block_size", where)


def _dependencies(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise TraceError(f"{where}: dependencies must be a list of objects")
    names = []
    for index, item in enumerate(value):
        field = f"dependencies[{index}]"
        names.append(trace.text(item, "request_id", where, f"{field}.request_id"))
        trace.text(item, "trigger", where, f"{field}.trigger")
        trace.text(item, "relation", where, f"{field}.relation")
        trace.milliseconds(item, "delay_ms", where, f"{field}.delay_ms")
    return names


def replay_call(spec: Any, concurrency: int | None, model: str) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    return trace.replay_call(spec, concurrency, execution_model=model)
