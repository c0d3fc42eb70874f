"""`spica trace inspect FILE`: the figures in a terminal or as JSON; a bad file is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spica.cli.commands import main

TRACES = Path(__file__).parents[1] / "workloads" / "data"


def test_inspect_prints_the_figures(capsys):
    main(["trace", "inspect", str(TRACES / "agentic.jsonl"), "--format", "agentic_mooncake"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        "requests       8",
        "duration       0.400 s (earliest starts: requests wait on others)",
        "mean rate      20.00 requests/s",
        "input tokens   min 384  p50 384  p90 896  max 896  mean 576.0",
        "output tokens  min 32  p50 32  p90 64  max 64  mean 44.0",
        "prefix reuse   27.8% of 72 hash blocks seen before",
        "sessions       6 (agentic: Replay runs it open loop only)",
    ]


def test_inspect_as_json(capsys):
    main(["trace", "inspect", str(TRACES / "dynamo.jsonl"), "--format", "dynamo", "--json"])
    figures = json.loads(capsys.readouterr().out)
    assert (figures["requests"], figures["duration_ms"], figures["isl"]["p90"], figures["sessions"]) == (8, 1050.0, 640, 0)
    assert figures["prefix_reuse"] == pytest.approx(21 / 71)


@pytest.mark.parametrize("argv", [["dynamo.jsonl"], ["agentic.jsonl", "--format", "dynamo"], ["missing.jsonl"]])
def test_a_file_that_cannot_be_used_is_one_line_and_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as end:
        main(["trace", "inspect", str(TRACES / argv[0]), *argv[1:]])
    assert end.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "spica: invalid input:" and len(err) == 2 and err[1].startswith(f"  {TRACES / argv[0]}")
