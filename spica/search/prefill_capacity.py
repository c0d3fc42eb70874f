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
workload=synthetic_rate, ended at 568 tok/s/GPU on one seed of five with it, against 1,103 without). Only the timing AIS gives an uncalibrated engine is read: a calibration scales every
shape's prefill alike.
"""

from __future__ import annotations

import json
import math
from typing import Any

from spica.config import SmartSearchConfig
from spica.core.unrolled import Unrolled
from spica.search.dimensions import branch_knobs
from spica.search.unroll import unroll
from spica.space.branches import Branch
from spica.space.timeable import ais_perf_config

FEATURE = "prefill_capacity"
PASS_TOKENS = 8192
_PREFILL_ROLE = {"agg": "agg", "disagg": "prefill"}
_rates: dict[str, float | None] = {}  # prompt tokens/s of one engine, by its AIS identity, for the process's life
_models: dict[tuple[str, str, str], Any] = {}  # one live AIS model per data set: later ones on it build in ms


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
        found: dict[tuple[int, str], float | None] = {}
        for index, parallel in enumerate(branch.configs):
            for backend in parallel.backends:
                try:
                    unrolled = unroll(config, branch, parallel, backend, first, {})
                except LookupError:  # a quant mode this backend lacks: told unsupported when asked
                    found[index, backend] = None
                    continue
                rate = _engine_rate(ais_perf_config(Unrolled.of(unrolled), role))
                found[index, backend] = None if rate is None else math.log2(parallel.pool(role).replicas * rate)
        known = [value for value in found.values() if value is not None]
        lowest = min(known, default=0.0)
        return {key: lowest if value is None else value for key, value in found.items()}

    return branch.memoised(("prefill_capacities", config.workload.trace_path), build)


def _engine_rate(perf_config: dict[str, Any]) -> float | None:
    """Prompt tokens/s of one engine at a pass of PASS_TOKENS new tokens; None where AIS cannot time it."""
    identity = json.dumps(perf_config, sort_keys=True, default=str)
    if identity not in _rates:
        from aisimulate_core.sdk import RustForwardPassPerfModel

        scheduled = {"num_prefill_requests": 1, "sum_prefill_tokens": PASS_TOKENS, "sum_prefill_kv_tokens": 0}
        try:
            model = RustForwardPassPerfModel.best_available(dict(perf_config))
            _models.setdefault((perf_config["system"], perf_config["backend"], perf_config["backend_version"]), model)
            ms = model.estimate_forward_pass_time_ms([{"scheduled_requests": scheduled}] * int(perf_config["attention_dp"]))
        except Exception:  # noqa: BLE001 - PerfDataNotAvailableError (a RuntimeError), ValueError: not timeable
            ms = None
        _rates[identity] = PASS_TOKENS / (ms / 1000.0) if ms is not None and math.isfinite(ms) and ms > 0 else None
    return _rates[identity]
