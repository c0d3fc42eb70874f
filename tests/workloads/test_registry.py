"""The workload registry: one record per traffic shape and trace format, entries by import path."""

from __future__ import annotations

import ast
from pathlib import Path

from spica.core.lazy import load
from spica.workloads import registry
from spica.workloads.registry import SHAPES, TRACE_FORMATS


def test_the_records_cover_every_shape_and_replays_trace_formats():
    assert set(SHAPES) == {"concurrency", "request_rate", "kv_load_ratio", "mooncake", "agentic_mooncake", "dynamo"}
    assert TRACE_FORMATS == ("mooncake", "agentic_mooncake", "dynamo")
    assert [name for name, entry in SHAPES.items() if not entry.closed_loop] == ["agentic_mooncake"]
    for entry in SHAPES.values():
        assert callable(load(entry.replay))
        assert (entry.name if entry.kind == "synthetic" else "trace_path") in entry.fields  # its load field
        if entry.kind == "trace":
            assert callable(load(entry.reader)) and callable(load(entry.windows)) and "trace_path" in entry.fields
        else:
            assert entry.reader is None and entry.windows is None  # a static load: constant_last


def test_entries_never_import_the_registry():
    folder = Path(registry.__file__).parent
    for entry in SHAPES.values():
        for path in {entry.replay, entry.reader, entry.windows} - {None}:
            source = folder / (path.split(":")[0].rsplit(".", 1)[1] + ".py")
            imported = {node.module for node in ast.walk(ast.parse(source.read_text())) if isinstance(node, ast.ImportFrom)}
            assert "spica.workloads.registry" not in imported, source


def test_the_planner_windows_come_from_each_formats_reader(traces):
    from spica.planner.windows import cut_windows, read_arrivals

    arrivals = read_arrivals(traces / "dynamo.jsonl", 1.0, "dynamo")
    assert [round(a.time_s, 3) for a in arrivals] == [0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 1.05]
    assert [w.num_requests for w in cut_windows(arrivals, 0.5)] == [4, 3, 1]
    agentic = read_arrivals(traces / "agentic.jsonl", 2.0, "agentic_mooncake")  # earliest starts, sped up
    assert [a.time_s for a in agentic] == [0.0] * 4 + [0.2] * 4
