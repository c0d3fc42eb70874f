"""Each config's prefill capacity: what the study of an open-loop search sees of the load it takes.

An open loop offers its prompts at its own pace whatever the deployment (a trace's timestamps, a
synthetic request rate), so goodput falls off a cliff where a deployment prefills slower than they
come: requests queue, and past the TTFT bound none counts. Across worker shapes that cliff lies
where engines × prefill speed per engine crosses the load, a curve the study's shape features
(share of the GPUs used, GPUs per engine) leave it to learn from a few replays. On S2
(benchmarks/peer/s2.yaml restates it) a study whose only tp4 replay had run one engine
(overloaded: no good tokens) judged tp4 poor and spent its rounds on tp1, ending at 34 good
tok/s/GPU where three tp4 engines give 68. So the study of such a search also sees each config's
`prefill_capacity`: log2 of the prompt tokens per second its prefill engines (the agg pool, or the
prefill pool) take in at a pass of PASS_TOKENS new tokens, per AIS, which puts the cliff on one
axis (docs/search.md, "Why step 5 runs this way").

The offered rate would only shift the feature, which the study scales to [0, 1] anyway, so it is
left out. Closed loops pace themselves to the deployment, and an overloaded deployment still
serves its capacity where no SLA judges it: neither has the cliff, and their studies do not see it
(a throughput-per-GPU search at a synthetic request rate, benchmarks/bench_search.py
workload=synthetic_rate, ended at 568 tok/s/GPU on one seed of five with it, against 1,103
without). Only the timing AIS gives an uncalibrated engine is read: a calibration scales every
shape's prefill alike.
"""

from __future__ import annotations

import math
from typing import Any

from spica.config import SmartSearchConfig
from spica.core.unrolled import Unrolled
from spica.search.dimensions import branch_knobs
from spica.search.unroll import unroll
from spica.space.branches import Branch, ParallelConfig
from spica.space.timeable import ais_perf_config, perf_model

FEATURE = "prefill_capacity"
PASS_TOKENS = 8192
_PREFILL_ROLE = {"agg": "agg", "disagg": "prefill"}


def sees_capacity(config: SmartSearchConfig) -> bool:
    """Whether the search's studies see `prefill_capacity`: an open loop (a trace without
    replay_concurrency, or a synthetic request rate) judged by an SLA (a goodput objective, or a
    goal only candidates within the SLA meet)."""
    workload = config.workload
    goal = config.goal
    goals = [name.goal for name in goal.resolved_pareto_objectives] if goal.is_pareto else [goal.target.goal]
    judged_by_sla = goal.sla_constrained or any(each.needs_sla != "none" for each in goals)
    open_loop = workload.request_rate is not None or (workload.is_trace_based and workload.replay_concurrency is None)
    return open_loop and judged_by_sla


def prefill_capacities(config: SmartSearchConfig, branch: Branch) -> dict[tuple[int, str], float]:
    """log2 prompt tokens/s of each (config index, backend) of `branch`'s prefill engines; empty
    where the search does not see capacity. A config AIS cannot time (it is told unsupported when
    asked) gets the branch's lowest capacity. Engine knobs take their first values (a searched
    quant mode is a dimension of its own)."""
    if not sees_capacity(config):
        return {}

    def build() -> dict[tuple[int, str], float]:
        role = _PREFILL_ROLE[branch.mode]
        first = {knob.name: knob.values[0] for knob in branch_knobs(config, branch.mode, branch.quant_knobs())}
        rates: dict[tuple, float | None] = {}  # one engine's, by its shape and backend: replicas only multiply it
        found: dict[tuple[int, str], float | None] = {}
        for index, parallel in enumerate(branch.configs):
            pool = parallel.pool(role)
            for backend in parallel.backends:
                if (pool.shape, backend) not in rates:
                    rates[pool.shape, backend] = _engine_rate(config, branch, parallel, backend, first, role)
                rate = rates[pool.shape, backend]
                found[index, backend] = None if rate is None else math.log2(pool.replicas * rate)
        known = [value for value in found.values() if value is not None]
        lowest = min(known, default=0.0)
        return {key: lowest if value is None else value for key, value in found.items()}

    return branch.memoised("prefill_capacities", build)


def _engine_rate(
    config: SmartSearchConfig, branch: Branch, parallel: ParallelConfig, backend: str, knobs: dict[str, Any], role: str,
) -> float | None:
    """Prompt tokens/s of one `role` engine of `parallel` at a pass of PASS_TOKENS new tokens, timed
    as Replay times it (the candidate's AIS identity); None where AIS cannot time it."""
    scheduled = {"num_prefill_requests": 1, "sum_prefill_tokens": PASS_TOKENS, "sum_prefill_kv_tokens": 0}
    try:
        identity = ais_perf_config(Unrolled.of(unroll(config, branch, parallel, backend, knobs, {})), role)
    except LookupError:  # a quant mode this backend lacks: told unsupported when asked
        return None
    try:
        ms = perf_model(identity).estimate_forward_pass_time_ms([{"scheduled_requests": scheduled}] * int(identity["attention_dp"]))
    except Exception:  # noqa: BLE001 - PerfDataNotAvailableError (a RuntimeError), ValueError: not timeable
        return None
    return PASS_TOKENS / (ms / 1000.0) if ms is not None and math.isfinite(ms) and ms > 0 else None
