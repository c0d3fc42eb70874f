"""The figures `spica trace inspect` prints, checked by value on small traces."""

from __future__ import annotations

import json

import pytest

from spica.workloads.summary import Spread, check_trace


def test_mooncake_figures(tmp_path):
    rows = [(0, 1000, 10, [1, 2]), (500, 1500, 30, [1, 2, 3]), (1500, 200, 20, [1]), (2000, 600, 40, [4, 5])]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"timestamp": t, "input_length": i, "output_length": o, "hash_ids": h}) + "\n" for t, i, o, h in rows))
    summary = check_trace(path)
    assert (summary.requests, summary.duration_ms, summary.mean_rate_rps) == (4, 2000.0, 2.0)
    assert summary.isl == Spread(200, 600, 1500, 1500, 825.0)
    assert summary.osl == Spread(10, 20, 40, 40, 25.0)
    assert (summary.hash_blocks, summary.reused_blocks, summary.prefix_reuse) == (8, 3, 3 / 8)  # 1, 2 again, then 1
    assert (summary.sessions, summary.agentic) == (0, False)
    assert (summary.longest_request_tokens, summary.longest_request_line) == (1530, 2)


def test_agentic_and_dynamo_figures(traces):
    agentic = check_trace(traces / "agentic.jsonl", "agentic_mooncake")
    assert (agentic.requests, agentic.sessions, agentic.agentic, agentic.duration_ms) == (8, 6, True, 400.0)
    assert agentic.isl == Spread(384, 384, 896, 896, 576.0)
    assert (agentic.hash_blocks, agentic.reused_blocks) == (72, 20)  # each join turn re-reads its plan's 10 blocks
    service = check_trace(traces / "dynamo.jsonl", "dynamo")
    assert (service.requests, service.sessions, service.agentic, service.duration_ms) == (8, 0, False, 1050.0)
    assert service.mean_rate_rps == pytest.approx(8 / 1.05)
    assert (service.hash_blocks, service.reused_blocks) == (71, 21)  # the 3-block system prompt, 7 times again
    sessions = check_trace(traces / "dynamo_agentic.jsonl", "dynamo")
    assert (sessions.requests, sessions.sessions, sessions.agentic) == (4, 2, True)
