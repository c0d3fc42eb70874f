"""Workload shapes by name: one record per traffic shape and trace format.

A record holds every fact Spica uses about its shape: the schema fields it reads (beside the
extras every shape takes), its trace reader (one streaming pass yielding `TraceRequest`s, the first
bad line named), how the evaluation passes it to Dynamo's Replay, and how the Planner's load
windows are built from it. `workload.trace_format`, the config's field rules, the Replay call, the
load-predictor windows, the timing's prompt positions and `spica trace inspect` all read
`SHAPES`, so adding a trace format is a record here plus its own module (and a conf/workload
file). Entries are named by import path (spica/core/lazy.py) and never import this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping

from spica.core.lazy import load
from spica.workloads.trace import Arrival, TraceRequest

SYNTHETIC_FIELDS = ("isl", "osl", "num_request_ratio", "turns_per_session", "inter_turn_delay_ms", "length_spread", "client_start")
TRACE_FIELDS = ("trace_path", "trace_format", "arrival_speedup_ratio", "replay_concurrency")
WINDOWS_FROM_ARRIVALS = "spica.workloads.trace:arrivals"


@dataclass(frozen=True)
class WorkloadShape:
    """One traffic shape. A trace format's `name` is its `workload.trace_format` and Replay's
    `trace_format`; a synthetic shape's is the field that sets its load."""

    name: str
    kind: Literal["trace", "synthetic"]
    fields: tuple[str, ...]
    """The workload fields it reads, its load field among them."""
    replay: str
    """Import path of (WorkloadSpec, the candidate's closed-loop concurrency or None, its model)
    → (dynamo.replay function, args, kwargs)."""
    reader: str | None = None
    """Import path of (path) → the trace's TraceRequests, one streaming pass; None: not a trace."""
    windows: str | None = None
    """Import path of (TraceRequests, arrival_speedup_ratio) → the Planner's Arrivals; None: a
    static load (the load predictors keep constant_last)."""
    closed_loop: bool = True
    """Whether Replay can run it closed loop (`replay_concurrency`)."""


def _trace(name: str, module: str, closed_loop: bool = True) -> WorkloadShape:
    return WorkloadShape(name, "trace", TRACE_FIELDS, f"{module}:replay_call", f"{module}:read", WINDOWS_FROM_ARRIVALS, closed_loop)


def _synthetic(load_field: str) -> WorkloadShape:
    return WorkloadShape(load_field, "synthetic", (load_field, *SYNTHETIC_FIELDS), "spica.workloads.synthetic:replay_call")


SHAPES: Mapping[str, WorkloadShape] = {
    entry.name: entry
    for entry in (
        _synthetic("concurrency"),  # closed loop
        _synthetic("request_rate"),  # open loop, Poisson arrivals
        _synthetic("kv_load_ratio"),  # closed loop at a share of each candidate's KV capacity
        _trace("mooncake", "spica.workloads.mooncake"),
        _trace("agentic_mooncake", "spica.workloads.agentic_mooncake", closed_loop=False),
        _trace("dynamo", "spica.workloads.dynamo_trace"),
    )
}
TRACE_FORMATS: tuple[str, ...] = tuple(name for name, entry in SHAPES.items() if entry.kind == "trace")


def trace_shape(trace_format: str) -> WorkloadShape:
    entry = SHAPES.get(trace_format)
    if entry is None or entry.kind != "trace":
        raise ValueError(f"trace_format: {trace_format!r} is not one of {', '.join(TRACE_FORMATS)}")
    return entry


def read(path: str | Path, trace_format: str = "mooncake") -> Iterator[TraceRequest]:
    """The trace's requests in file order; a TraceError names the first bad line."""
    return load(trace_shape(trace_format).reader)(path)


def arrivals(path: str | Path, trace_format: str = "mooncake", arrival_speedup_ratio: float = 1.0) -> tuple[Arrival, ...]:
    """What the Planner observes of a trace, for the load-predictor windows."""
    return load(trace_shape(trace_format).windows)(read(path, trace_format), arrival_speedup_ratio)


def replay_call(spec: Any, concurrency: int | None, model: str | None) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """The Replay call of a WorkloadSpec (spica.evaluation.deployment), by its shape's entry."""
    if spec.kind == "trace":
        entry = trace_shape(spec.trace_format)
    else:
        entry = SHAPES["request_rate" if concurrency is None and spec.request_rate is not None else "concurrency"]
    return load(entry.replay)(spec, concurrency, model)
