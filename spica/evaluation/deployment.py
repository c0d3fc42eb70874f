"""Turn one unrolled candidate (docs/unrolled-candidate.md) into the exact Dynamo Replay call that scores it.

The result is a `ReplayCall`: which replay function, its positional arguments and keyword
arguments, all plain JSON. Saved next to a result, it is the replay input that reproduces the
score (`spica.evaluation.replay.run_replay(ReplayCall.from_dict(saved))`).

Mapping notes (ai-dynamo 1.6.1 mocker schema; unknown keys are rejected there):
- ``num_gpu_blocks`` is per data-parallel rank in the mocker, while the unrolled
  ``*_num_gpu_blocks`` counts the whole worker, so it is divided by ``attention_dp``.
- The engine's GPU count (and so ``gpu_hours``) is ``tensor_parallel_size × dp_size``.
- A backend's own mocker args (SGLang's chunking budgets) come from its registry entry
  (`spica.backends`), as do the mocker's and AIS's names for it.
- KV transfer (disagg) and host offload (G2) are real mocker features; both roles of a disagg
  pair get the transfer bandwidth. The offload batch size has no mocker field and is not modeled.
- Speculative decoding: AIS prices a step with `aic_nextn` drafts; the mocker samples how many
  are accepted, at the rates `nextn_accepted` implies (`accept_rates`) or at its own default.
- Timing is AIS for every role, on the role's own GPU (`{role}_hardware_sku` in a mixed-hardware
  disagg candidate). The call records it as direct AIS; `run_replay` swaps in the
  cached table in mode "table" (see `spica.evaluation.timing`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Mapping

from spica import backends
from spica.core.sla import SlaLike
from spica.core.unrolled import Unrolled
from spica.evaluation.calibration import FIELD as CALIBRATION_FIELD, OVERHEADS
from spica.evaluation.timing import TIMING_MODES, TimingMode, ais_timing_model
from spica.space.timeable import ais_perf_config
from spica.workloads import registry, rules

TRACE_STRAYS = ("request_rate", "turns_per_session", "inter_turn_delay_ms", "length_spread", "client_start")
"""A WorkloadSpec's synthetic-only fields (its isl, osl and request_count are not checked on a trace)."""

ReplayFunction = Literal["run_trace_replay", "run_synthetic_trace_replay"]


@dataclass(frozen=True)
class WorkloadSpec:
    """The traffic one candidate is replayed against.

    kind "trace": a trace file, open loop at its timestamps / `arrival_speedup_ratio`, or closed
    loop when a concurrency is given. kind "synthetic": `request_count` requests of `isl`/`osl`
    tokens at `request_rate` (Poisson, open loop) or `concurrency` (closed loop). A candidate's
    own ``concurrency`` (KV-load workloads) overrides `concurrency`.
    """

    kind: Literal["trace", "synthetic"]
    trace_path: str | None = None
    trace_format: str = "mooncake"
    arrival_speedup_ratio: float = 1.0
    request_rate: float | None = None
    concurrency: int | None = None
    isl: int | None = None
    osl: int | None = None
    request_count: int | None = None
    shared_prefix_ratio: float = 0.0
    num_prefix_groups: int = 0
    turns_per_session: int = 1
    inter_turn_delay_ms: float = 0.0
    arrival_seed: int = 42
    length_spread: float = 0.0
    client_start: str | None = None  # staggered: a closed loop whose clients start spread (spica.evaluation.traffic)

    def __post_init__(self) -> None:
        """The config's rules (spica/workloads/rules.py), named under `workload.`, plus Replay's own:
        a synthetic call has its request count and at most one of rate and concurrency."""
        if self.kind not in ("trace", "synthetic"):
            raise ValueError(f"workload.kind: {self.kind!r} is not one of trace, synthetic")
        if self.kind == "synthetic":
            for name in ("isl", "osl", "request_count"):
                value = getattr(self, name)
                if value is None or value < 1:
                    raise ValueError(f"workload.{name} must be a positive integer for a synthetic workload (got {value})")
            if self.request_rate is not None and self.concurrency is not None:
                raise ValueError("workload: set request_rate (open loop) or concurrency (closed loop), not both")
        try:
            if self.kind == "trace":
                rules.required("trace", [] if self.trace_path else ["trace_path"])
                rules.stray("trace", [name for name in TRACE_STRAYS if getattr(self, name) != _DEFAULTS[name]])
            rules.length_spread_rule(self.length_spread, self.turns_per_session)
        except ValueError as exc:
            raise ValueError(f"workload.{exc}") from None


_DEFAULTS = {entry.name: entry.default for entry in fields(WorkloadSpec)}


@dataclass(frozen=True)
class ReplayCall:
    """One Replay invocation as plain JSON: ``dynamo.replay.<function>(*args, **kwargs)``.

    `kwargs` follow Dynamo's signature except three JSON stand-ins that `run_replay` converts:
    ``router_config`` is the keyword dict of a ``KvRouterConfig``; each role's timing model is
    direct AIS, replaced by the cached table when `timing` is "table"; and a synthetic call's
    ``length_spread`` (lengths drawn) or ``client_start`` (clients started spread) turns it into
    a trace replay of those requests (`spica.evaluation.traffic`).
    """

    function: ReplayFunction
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    timing: TimingMode = "table"

    def __post_init__(self) -> None:
        if self.timing not in TIMING_MODES:
            raise ValueError(f"timing: {self.timing!r} is not one of {', '.join(TIMING_MODES)}")
        # A JSON round trip proves the call is describable and detaches it from caller-owned dicts.
        object.__setattr__(self, "args", tuple(json.loads(json.dumps(list(self.args)))))
        object.__setattr__(self, "kwargs", json.loads(json.dumps(dict(self.kwargs))))

    def to_dict(self) -> dict[str, Any]:
        return {"function": self.function, "args": list(self.args), "kwargs": dict(self.kwargs), "timing": self.timing}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ReplayCall":
        return cls(function=data["function"], args=tuple(data["args"]), kwargs=data["kwargs"], timing=data["timing"])

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()

    def __hash__(self) -> int:
        return hash(self.fingerprint())


def build_replay_call(
    unrolled: Unrolled | Mapping[str, Any],
    workload: WorkloadSpec,
    sla: SlaLike | None = None,
    timing: TimingMode = "table",
    planner_config: Mapping[str, Any] | None = None,
) -> ReplayCall:
    """The Replay call that scores `unrolled` on `workload` (pure: no Dynamo import, no I/O)."""
    view = Unrolled.of(unrolled)
    if view.mode == "agg":
        kwargs: dict[str, Any] = {
            "extra_engine_args": engine_args(view, "agg"),
            "num_workers": view.pool("agg").replicas,
        }
    else:
        kwargs = {
            "prefill_engine_args": engine_args(view, "prefill"),
            "decode_engine_args": engine_args(view, "decode"),
            "num_prefill_workers": view.pool("prefill").replicas,
            "num_decode_workers": view.pool("decode").replicas,
        }
    kwargs.update(_router_kwargs(view))
    kwargs.update(_sla_kwargs(sla))
    if planner_config is not None:
        kwargs["planner_config"] = dict(planner_config)
        # With table timing the engines carry no AIS identity; the Planner bootstraps its
        # throughput regression from this metadata instead.
        kwargs["performance_model_metadata"] = {
            pool.worker_type: {"provider": "ais", "config": ais_perf_config(view, pool.role)} for pool in view.pools
        }
    concurrency = view.concurrency if view.concurrency is not None else workload.concurrency
    try:
        function, args, traffic = registry.replay_call(workload, concurrency, view.model_name)
    except ValueError as exc:
        raise ValueError(f"workload.{exc}") from None
    kwargs.update(traffic)
    return ReplayCall(function=function, args=args, kwargs=kwargs, timing=timing)


def engine_args(unrolled: Unrolled | Mapping[str, Any], role: str) -> dict[str, Any]:
    """Mocker engine args for one role ("agg", "prefill" or "decode")."""
    view = Unrolled.of(unrolled)
    pool = view.pool(role)
    record = backends.backend(view.backend)
    engine: dict[str, Any] = {
        "backend": record.ais_name,
        "worker_type": pool.worker_type,
        "num_gpu_blocks": pool.num_gpu_blocks // pool.attention_dp,
        "block_size": pool.block_size,
        "max_num_seqs": pool.max_num_seqs,
        "max_num_batched_tokens": pool.max_num_batched_tokens,
        "enable_prefix_caching": pool.prefix_caching,
        "timing_model": ais_timing_model(ais_perf_config(view, role), timing_scale(view.flat, role)),
    }
    engine.update(record.replay_engine(pool.max_num_batched_tokens))
    if view.nextn > 0:
        engine["aic_nextn"] = view.nextn
        if view.nextn_accepted is not None:
            rates = accept_rates(view.nextn, view.nextn_accepted)
            engine["aic_nextn_accept_rates"] = ",".join(f"{rate:.6f}" for rate in rates)
    if pool.disaggregated and view.kv_transfer_bandwidth_gbps is not None:
        engine["kv_transfer_bandwidth"] = view.kv_transfer_bandwidth_gbps
        engine["kv_transfer_bytes_per_token"] = int(view.flat["kv_bytes_per_token"])
    if view.num_g2_blocks > 0 and pool.prefix_caching:
        engine["native_host_offload"] = _host_offload(view.flat)
        engine["kv_cache_bytes_per_token"] = int(view.flat["kv_bytes_per_token"])
    args: dict[str, Any] = {"tensor_parallel_size": pool.tp, "dp_size": pool.attention_dp, "engine": engine}
    if view.startup_time is not None:
        args["startup_time"] = view.startup_time
    return args


def timing_scale(unrolled: Mapping[str, Any], role: str) -> dict[str, float] | None:
    """The factors a timing calibration (`timing_calibration` in the candidate) puts on this role's
    prefill passes and decode steps; None when the candidate is uncalibrated. (Its request overhead
    is not engine time: spica.evaluation.evaluate adds it to what Replay reports.)"""
    calibration = unrolled.get(CALIBRATION_FIELD)
    if not calibration:
        return None
    return {name: value for name, value in calibration["roles"][role].items() if name not in OVERHEADS}


def accept_rates(nextn: int, accepted: float) -> list[float]:
    """The mocker's conditional MTP acceptance rates (entry i: P(draft i accepted | the earlier ones
    were)) for `accepted` draft tokens per step on average: one rate p for every draft, with
    p + p² + … + pⁿ = accepted (bisection; the sum grows with p)."""
    if not 0 <= accepted <= nextn:
        raise ValueError(f"nextn_accepted: {accepted} must be between 0 and aic_nextn {nextn}")
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if sum(middle**i for i in range(1, nextn + 1)) < accepted else (low, middle)
    return [(low + high) / 2] * nextn


def _host_offload(unrolled: Mapping[str, Any]) -> dict[str, Any]:
    """G2 (host) offload per DP rank; bandwidths left unset fall back to the mocker's defaults."""
    offload: dict[str, Any] = {"num_host_blocks": int(unrolled["num_g2_blocks"])}
    for source, target in (("bandwidth_g1_to_g2_gbps", "d2h_bandwidth_gbps"), ("bandwidth_g2_to_g1_gbps", "h2d_bandwidth_gbps")):
        if unrolled.get(source) is not None:
            offload[target] = float(unrolled[source])
    return offload


def _router_kwargs(view: Unrolled) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"router_mode": view.router.mode}
    if view.router.knobs:
        kwargs["router_config"] = dict(view.router.knobs)
    return kwargs


def _sla_kwargs(sla: SlaLike | None) -> dict[str, float]:
    if sla is None:
        return {}
    bounds = {"sla_ttft_ms": sla.ttft_ms, "sla_itl_ms": sla.itl_ms, "sla_e2e_ms": sla.e2e_ms}
    return {name: float(value) for name, value in bounds.items() if value is not None}
