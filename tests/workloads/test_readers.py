"""Each format's reader: one streaming pass, the first bad line named in one line."""

from __future__ import annotations

import json

import pytest

from spica.workloads import registry
from spica.workloads.summary import check_trace
from spica.workloads.trace import TraceError

HEADER = {"schema": "dynamo.agentic_mooncake", "version": 2, "block_size": 64, "source": {"format": "test"}}


def agentic(index: int, **fields) -> dict:
    row = {"request_id": f"r{index}", "play_id": "p", "session_id": "s", "model": "m", "input_length": 100,
           "output_length": 8, "hash_ids": [index, index + 50], "not_before_ms": 0, "dependencies": []}
    return {**row, **fields}


def dynamo(index: int, **replay) -> dict:
    return {"schema": "dynamo.request.trace.v1", "event_type": "request_end", "request": {
        "request_id": f"r{index}", "output_tokens": 8, "request_received_ms": 10 * index,
        "replay": {"trace_block_size": 64, "input_length": 100, "input_sequence_hashes": [1, 2], **replay}}}


def write(tmp_path, rows) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return str(path)


@pytest.mark.parametrize(("trace_format", "rows", "expected"), [
    ("agentic_mooncake", [agentic(1)], " line 1: the header must say schema 'dynamo.agentic_mooncake' and version 2 (got None, None)"),
    ("agentic_mooncake", [{**HEADER, "version": 1}, agentic(1)], " line 1: the header must say schema 'dynamo.agentic_mooncake' and version 2 (got 'dynamo.agentic_mooncake', 1)"),
    ("agentic_mooncake", [HEADER, agentic(1), agentic(2, hash_ids=[1])], " line 3: 1 hash_ids cover 64 tokens, fewer than input_length 100 (64 tokens per block)"),
    ("agentic_mooncake", [HEADER, agentic(1, hash_ids=[1, 2, 3])], " line 2: 3 hash_ids cover 192 tokens, not exactly input_length 100 (64 tokens per block)"),
    ("agentic_mooncake", [HEADER, agentic(1), agentic(1)], " line 3: request_id 'r1' is used twice"),
    ("agentic_mooncake", [HEADER, agentic(1, model="")], " line 2: model '' must be a non-empty string"),
    ("agentic_mooncake", [HEADER, agentic(1, dependencies=[{"request_id": "r1", "trigger": "completion", "relation": "sequence"}])],
     " line 2: dependencies[0].delay_ms None must be a number of ms ≥ 0"),
    ("agentic_mooncake", [HEADER, agentic(1), agentic(2, dependencies=[{"request_id": "r9", "trigger": "completion", "relation": "sequence", "delay_ms": 1}])],
     " line 3: dependencies name request_id 'r9', which is not in the trace"),
    ("dynamo", [dynamo(1), dynamo(2, input_sequence_hashes="ab")], " line 2: input_sequence_hashes must be a list of integers"),
    ("dynamo", [dynamo(1, input_length=0)], " line 1: request.replay.input_length 0 must be a positive integer"),
    ("dynamo", [dynamo(1), {**dynamo(2), "request": {"request_id": "r2"}}], " line 2: request.replay must be an object"),
    ("dynamo", [dynamo(1), "{oops"], " line 2: not a JSON object (a dynamo trace has one per line)"),
    ("dynamo", [{"event_type": "request_payload"}], ": holds no request read as a dynamo trace (--format / workload.trace_format)"),
])
def test_each_format_names_the_first_bad_line(tmp_path, trace_format, rows, expected):
    path = write(tmp_path, rows)
    with pytest.raises(TraceError) as error:
        check_trace(path, trace_format)
    assert str(error.value) == f"{path}{expected}"


def test_a_dependency_may_name_a_later_request(tmp_path):
    later = {"request_id": "r2", "trigger": "dispatch", "relation": "spawn", "delay_ms": 0}
    assert check_trace(write(tmp_path, [HEADER, agentic(1, dependencies=[later]), agentic(2)]), "agentic_mooncake").requests == 2


def test_mooncake_names_the_first_bad_line_and_reads_lazily(tmp_path):
    good = {"timestamp": 0, "input_length": 600, "output_length": 10, "hash_ids": [1, 2]}
    path = write(tmp_path, [good] * 16 + [{**good, "hash_ids": "x"}])
    with pytest.raises(TraceError, match=r"t.jsonl line 17: hash_ids must be a list of integers$"):
        check_trace(path)
    requests = registry.read(path)  # one streaming pass: nothing is read before it is asked for
    assert next(requests).input_length == 600
