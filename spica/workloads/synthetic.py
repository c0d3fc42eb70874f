"""Synthetic traffic (Replay's `run_synthetic_trace_replay`): `request_count` requests of `isl` /
`osl` tokens, closed loop at a concurrency (given, or derived per candidate from its KV capacity)
or open loop at a Poisson `request_rate`, with the multi-turn and shared-prefix extras. A length
spread or a staggered client start rides as a stand-in key that spica.evaluation.traffic turns
into a trace replay, since Replay has neither."""

from __future__ import annotations

from typing import Any

from spica.workloads.rules import client_start_rule


def replay_call(spec: Any, concurrency: int | None, model: str) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    if concurrency is not None:
        kwargs: dict[str, Any] = {"replay_concurrency": int(concurrency)}
    elif spec.request_rate is not None:
        kwargs = {"request_rate": float(spec.request_rate), "arrival_seed": int(spec.arrival_seed)}
    else:
        raise ValueError("concurrency: a synthetic workload needs request_rate or concurrency (none given, none derived)")
    if spec.shared_prefix_ratio > 0:
        kwargs["shared_prefix_ratio"] = float(spec.shared_prefix_ratio)
        kwargs["num_prefix_groups"] = int(spec.num_prefix_groups)
    if spec.turns_per_session > 1:
        kwargs["turns_per_session"] = int(spec.turns_per_session)
        kwargs["inter_turn_delay_ms"] = float(spec.inter_turn_delay_ms)
    if spec.length_spread > 0:
        kwargs["length_spread"] = float(spec.length_spread)
        kwargs.setdefault("arrival_seed", int(spec.arrival_seed))
    if spec.client_start is not None:
        client_start_rule(spec.client_start, closed_loop=concurrency is not None, turns=spec.turns_per_session)
        kwargs["client_start"] = spec.client_start
    return "run_synthetic_trace_replay", (int(spec.isl), int(spec.osl), int(spec.request_count)), kwargs
