"""Synthetic traffic whose requests differ in length, as benchmark clients send it.

Replay's synthetic generator sends identical requests (every prompt `isl`, every answer `osl`).
In a closed loop they then finish in lock-step and each wave of prompts is prefilled as one
burst, which real clients never see: `vllm bench serve` draws each length uniformly in
L·[1−r, 1+r] (`--random-range-ratio`), InferenceX in [0.8·L, L], AIPerf from a normal law
around the mean. `workload.length_spread` s draws each request's input and output length
uniformly in L·[1−s, 1+s] (the mean stays isl/osl), seeded by the sweep seed.

Replay has no such option, so a call carrying the ``length_spread`` stand-in is turned here into
a trace replay of the drawn requests (a Mooncake file, content-addressed under
``${SPICA_CACHE_DIR:-~/.cache/spica}/traffic``): the same engines, router, SLA and load (closed
loop at the same concurrency, or Poisson arrivals at the same rate), and no prefix shared
between requests beyond what ``shared_prefix_ratio`` asks for. With spread 0 the trace replay
gives exactly the synthetic call's summary (checked in tests/evaluation/test_traffic.py).

``workload.client_start: staggered`` (a closed loop only) breaks the lock-step another way: the
first request of client k of C answers round(osl·k/C) tokens, so the first answers end spread
over one request's decoding and every later request, identical again, arrives into a steady
state of staggered clients. docs/fidelity.md has what each start gives against measurements.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import tempfile
from pathlib import Path
from typing import Any, Mapping

from spica.core.paths import cache_root
from spica.workloads.rules import client_start_rule

TRAFFIC_FORMAT = 1
BLOCK_TOKENS = 512
"""Tokens per Mooncake hash id (Replay's default trace block size)."""
SYNTHETIC_ONLY = ("request_rate", "arrival_seed", "arrival_interval_ms", "turns_per_session", "inter_turn_delay_ms",
                  "shared_prefix_ratio", "num_prefix_groups", "length_spread", "client_start")
STAND_INS = ("length_spread", "client_start")
"""The synthetic call's keys that Replay lacks: a call holding one is replayed as its trace."""


def traffic_cache_dir() -> Path:
    return cache_root() / "traffic"


def drawn_lengths(isl: int, osl: int, count: int, spread: float, seed: int, staggered: int | None = None) -> list[tuple[int, int]]:
    """(input, output) tokens of each request: uniform in L·[1−spread, 1+spread], at least 1; with
    `staggered` clients, the first request of client k answers that share k/C of its length."""
    rng = random.Random(f"spica-traffic-{seed}")

    def draw(length: int) -> int:
        return max(1, round(length * rng.uniform(1.0 - spread, 1.0 + spread)))

    lengths = [(draw(isl), draw(osl)) for _ in range(count)]
    for client in range(min(staggered or 0, count)):
        prompt, answer = lengths[client]
        lengths[client] = (prompt, max(1, round(answer * (client + 1) / staggered)))
    return lengths


def arrival_times_ms(count: int, rate: float | None, seed: int) -> list[float]:
    """Poisson arrivals at `rate` requests/s (open loop), or all at 0 for a closed loop."""
    if rate is None:
        return [0.0] * count
    rng = random.Random(f"spica-arrivals-{seed}")
    clock, times = 0.0, []
    for _ in range(count):
        times.append(round(clock, 3))
        clock += rng.expovariate(rate) * 1000.0
    return times


def drawn_trace(isl: int, osl: int, count: int, spread: float, seed: int, rate: float | None = None,
                staggered: int | None = None) -> Path:
    """The Mooncake file of the drawn requests, written once (atomically) and reused."""
    shape = {"format": TRAFFIC_FORMAT, "isl": isl, "osl": osl, "count": count, "spread": spread, "seed": seed, "rate": rate}
    if staggered:  # absent otherwise: the files drawn before it keep their names
        shape["staggered"] = staggered
    material = json.dumps(shape, sort_keys=True)
    path = traffic_cache_dir() / f"{hashlib.sha256(material.encode()).hexdigest()[:32]}.jsonl"
    if path.is_file():
        return path
    lengths = drawn_lengths(isl, osl, count, spread, seed, staggered)
    stride = max(-(-prompt // BLOCK_TOKENS) for prompt, _ in lengths)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as handle:
        for index, ((prompt, answer), at) in enumerate(zip(lengths, arrival_times_ms(count, rate, seed))):
            blocks = list(range(index * stride, index * stride + -(-prompt // BLOCK_TOKENS)))
            handle.write(json.dumps({"timestamp": at, "input_length": prompt, "output_length": answer, "hash_ids": blocks}) + "\n")
    os.replace(handle.name, path)
    return path


def as_trace_call(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """A synthetic call with a stand-in (STAND_INS), as the equivalent trace replay."""
    isl, osl, count = (int(value) for value in args)
    rate = kwargs.get("request_rate")
    # a replay input may be edited by hand: the config's rule again, on the call's own terms
    client_start_rule(kwargs.get("client_start"), kwargs.get("replay_concurrency") is not None, int(kwargs.get("turns_per_session", 1)))
    staggered = kwargs.get("replay_concurrency") if kwargs.get("client_start") == "staggered" else None
    path = drawn_trace(isl, osl, count, float(kwargs.get("length_spread", 0.0)), int(kwargs.get("arrival_seed", 42)),
                       float(rate) if rate is not None else None, int(staggered) if staggered else None)
    converted = {key: value for key, value in kwargs.items() if key not in SYNTHETIC_ONLY}
    converted["trace_format"] = "mooncake"
    if kwargs.get("shared_prefix_ratio"):
        converted["trace_shared_prefix_ratio"] = kwargs["shared_prefix_ratio"]
        converted["trace_num_prefix_groups"] = kwargs.get("num_prefix_groups", 0)
    return "run_trace_replay", (str(path),), converted
