"""The workload's rules, defined once: the config's `Workload`, the evaluation's `WorkloadSpec`
and a hand-edited replay input (spica.evaluation.traffic) all check through these functions, so a
rule and its one-line message cannot drift apart. Messages name the field first; each caller
puts the field path in front (the config loader, `workload.` in the evaluation)."""

from __future__ import annotations

from typing import Sequence

LOAD_FIELDS = ("trace_path", "request_rate", "concurrency", "kv_load_ratio")
"""Exactly one of these sets the load; each names a shape of spica/workloads/registry.py (a trace
path, a shape per trace format)."""
EXTRAS = ("shared_prefix_ratio", "num_prefix_groups")
"""Fields every shape takes."""
CLIENT_STARTS = ("staggered",)


def one_load(loads: Sequence[str]) -> None:
    if len(loads) != 1:
        raise ValueError(f"set exactly one of {', '.join(LOAD_FIELDS)} (got: {', '.join(loads) if loads else 'none'})")


def required(kind: str, missing: Sequence[str]) -> None:
    if missing:
        raise ValueError(f"{missing[0]} is required for a {kind} workload")


def stray(kind: str, fields: Sequence[str]) -> None:
    """Fields of the other kind of workload, set explicitly."""
    if not fields:
        return
    if kind == "trace":
        raise ValueError(f"{fields[0]} is a synthetic-workload field and cannot be used with trace_path")
    raise ValueError(f"{fields[0]} applies only to a trace workload (set trace_path)")


def length_spread_rule(spread: float, turns: int) -> None:
    if spread > 0 and turns > 1:
        raise ValueError("length_spread applies to single-turn traffic; with turns_per_session > 1 leave it 0")


def client_start_rule(client_start: str | None, closed_loop: bool, turns: int) -> None:
    if client_start is None:
        return
    if client_start not in CLIENT_STARTS:
        raise ValueError(f"client_start: {client_start!r} is not one of {', '.join(CLIENT_STARTS)}")
    if not closed_loop or turns > 1:
        raise ValueError("client_start applies to a single-turn closed loop (concurrency or kv_load_ratio); leave it null here")


def closed_loop_rule(trace_format: str, allowed: bool, agentic: bool) -> None:
    """Replay replays a trace of agent sessions (requests waiting on others) open loop only."""
    if not allowed or agentic:
        raise ValueError(f"replay_concurrency: a {trace_format} trace of agent sessions replays only open loop, "
                         "at its own timing (arrival_speedup_ratio); leave replay_concurrency null")
