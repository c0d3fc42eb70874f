"""Screening (`sweep.screen_request_ratio`): a costly closed-loop candidate is first replayed at
fewer requests per client, and only the ones near the front are replayed in full.

A closed loop's replay time grows with the requests it simulates: on upstream's GLM-5 study a
candidate at 10 requests per client (upstream's `num_request_ratio`) simulates up to 150,000
requests and replays for 13-45 s alone on a core. At 2 per client the same candidates replayed
5-6x faster, with tok/s/user within 1 % on 7 of 8 (7.5 % on one) and tok/s/GPU 3-15 % low (the
burst of the first wave weighs more in a shorter replay); docs/search.md, "Screening", has the figures. So the study
learns from screening replays, and a search replays in full only the screened candidates that
may be on its answer (spica/search/rounds.py's confirmation step); every ledger row says which
it is: a screened one has status "screened" and its `screen_request_ratio` in its config.

Only where it changes nothing but the replay's length: a synthetic closed loop (concurrency or
kv_load_ratio), at least MIN_SCREENED_REQUESTS requests in full, round_robin routing (a short
kv_router replay is another draw of its router, whose spread would add to what the short replay
loses; not measured), no scaling Planner (it
reacts to the replay's length), no SLA and no objective read from latencies (`judges_latency`).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from spica.config import SmartSearchConfig
from spica.core.candidate import Candidate
from spica.core.goals import GOALS
from spica.evaluation import clock
from spica.evaluation.score import signed_score

FIELD = "screen_request_ratio"
"""In a screened candidate's unrolled config: its requests per client (so its key differs from
the full candidate's, which is the same dict without it)."""

AUTO_RATIO = 2.0
"""`screen_request_ratio: auto`'s requests per client: 5-6x cheaper than upstream's 10, close enough to rank."""

MIN_SCREENED_REQUESTS = 20_000
"""A full replay of fewer requests takes seconds: screening it would cost more than it saves.
On the GLM-5 study, replays above this were half of them and 97 % of the replay time."""

CONFIRM_MARGIN = 0.2
"""A screened candidate is replayed in full if it would be on the answer with every objective
this much better: the largest gap seen between a screening replay and its full one was 19 %."""


def screen_fields(config: SmartSearchConfig, unrolled: Mapping[str, Any]) -> dict[str, Any]:
    """{FIELD: ratio} for a candidate to be screened first; {} for one replayed in full at once."""
    ratio = configured_ratio(config)
    workload = config.workload
    if ratio is None or not workload.is_synthetic or workload.request_rate is not None or "concurrency" not in unrolled:
        return {}
    full = workload.resolved_request_count(unrolled["concurrency"])
    if full is None or full < MIN_SCREENED_REQUESTS or ratio >= float(workload.num_request_ratio):
        return {}
    scaled = unrolled.get("enable_throughput_scaling") or unrolled.get("enable_load_scaling")
    if clock.varies(unrolled) or scaled or judges_latency(config):
        return {}
    return {FIELD: float(ratio)}


def judges_latency(config: SmartSearchConfig) -> bool:
    """An SLA, or an objective read from latencies (TTFT, end to end, goodput): a screening
    replay's first wave weighs more in its latencies than in its rates, so nothing is screened."""
    goal = config.goal
    return goal.sla is not None or any(GOALS[name].planner_target == "latency" or GOALS[name].needs_sla != "none" for name in goal.objectives)


def configured_ratio(config: SmartSearchConfig) -> float | None:
    """The requests per client of the search's screening replays; None: it screens nothing."""
    setting = config.sweep.screen_request_ratio
    return AUTO_RATIO if setting == "auto" else None if setting == "off" else float(setting)


def full_candidate(unrolled: Mapping[str, Any]) -> dict[str, Any]:
    """The candidate a screened one stands for: replayed at the workload's own request count."""
    return {name: value for name, value in unrolled.items() if name != FIELD}


def request_ratio(config: SmartSearchConfig, unrolled: Mapping[str, Any]) -> float:
    """The requests per client the candidate's replay simulates."""
    return float(unrolled.get(FIELD) or config.workload.num_request_ratio)


def to_confirm(objectives: Sequence[str], ledger: Sequence[Candidate]) -> list[Candidate]:
    """The screened candidates to replay in full, in order: those a lift of every objective by at
    most CONFIRM_MARGIN puts beyond every other result, screened or full (a screening replay
    under-rates tok/s/GPU); the smallest lift first, then in ledger order."""
    points = [(candidate, [signed_score(name, candidate.objectives) for name in objectives])
              for candidate in ledger if candidate.scored and all(name in candidate.objectives for name in objectives)]
    lifts = [(lift_needed(point, [other for _, other in points]), order, candidate)
             for order, (candidate, point) in enumerate(points) if candidate.status == "screened"]
    return [candidate for lift, _, candidate in sorted(lifts, key=lambda entry: entry[:2]) if lift <= 1 + CONFIRM_MARGIN]


def lift_needed(point: Sequence[float], others: Sequence[Sequence[float]]) -> float:
    """The smallest factor l ≥ 1 by which every objective of `point` (higher is better: a positive
    one times l, a negative one over l) must improve so that none of `others` dominates it."""
    needed = 1.0
    for other in others:
        escape = math.inf  # the least lift that makes one objective beat `other`'s
        for mine, theirs in zip(point, other, strict=True):
            if mine > theirs:
                escape = 1.0
                break
            if mine > 0:
                escape = min(escape, theirs / mine)
            elif mine < 0 and theirs < 0:
                escape = min(escape, mine / theirs)
        needed = max(needed, escape)
    return needed
