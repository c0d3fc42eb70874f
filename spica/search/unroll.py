"""A trial becomes one flat, self-contained candidate dict with upstream's keys (docs/unrolled-candidate.md).

Input: the knob values of one suggestion, the projected parallel config, the chosen backend
and the predictor winners. Output: every value the deployment needs, resolved (KV capacity at
the candidate's own engine settings, backend version, concurrency), irrelevant knobs absent —
so two trials that would replay identically unroll to the same dict and the dedupe can see it.
A knob that is set but cannot bind stays as set, since the deployment runs with it: max_num_seqs
above the requests in flight (`in_flight`) is merged in the study's grid instead (spica/search/run.py).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping, Sequence

from spica.config import SmartSearchConfig
from spica.config.search_space import ADMISSION_THRESHOLDS
from spica.core.quant import QUANT_FIELDS
from spica.core.unrolled import ROLES, shape_prefix
from spica.planner.config import unroll_planner_fields
from spica.search.dimensions import KV_ROUTER_KNOBS, OFFLOAD_ROUTER_KNOBS
from spica.space.branches import Branch, ParallelConfig, worker_capacity
from spica.space.capacity import UNKNOWN_CAPACITY_BLOCKS, MemorySettings

PINNED_FIELDS = (
    "model_name", "startup_time", "aic_nextn", "gpu_budget", "min_gpu_budget", "min_endpoint",
)
ROLE_PINNED = ("block_size", "gpu_memory_utilization", "enable_prefix_caching")
OFFLOAD_FIELDS = ("kv_bytes_per_token", "bandwidth_g1_to_g2_gbps", "bandwidth_g2_to_g1_gbps", "offload_batch_size")

PredictorWinners = Mapping[int, tuple[str, Mapping[str, Any]]]


def _resolved(items: list[tuple[str, dict[str, Any]]], name: str) -> dict[str, Any]:
    return next(fields for entry, fields in items if entry == name)


LOAD_ROLE = {"agg": "agg", "disagg": "decode"}
"""The role whose pool requests live in during decode: its KV capacity sets a KV-relative load."""


def kv_load_capacity_tokens(unrolled: Mapping[str, Any]) -> int:
    """KV tokens of the pool where requests live during decode: per worker × replicas."""
    role = LOAD_ROLE[unrolled["deployment_mode"]]
    return unrolled[f"{role}_kv_capacity_tokens"] * unrolled[f"{shape_prefix(role)}replicas"]


def kv_load_fields(config: SmartSearchConfig, unrolled: Mapping[str, Any], ratio: float) -> dict[str, Any]:
    """docs/config.md: requests that fit = floor(capacity / (isl + osl // 2)); concurrency =
    max(1, int(ratio × fit)). A pool that fits none is reported (fit 0) and scored infeasible."""
    workload = config.workload
    tokens = kv_load_capacity_tokens(unrolled)
    fit = tokens // (workload.isl + workload.osl // 2)
    return {
        "kv_load_ratio": float(ratio),
        "concurrency": max(1, int(ratio * fit)),
        "kv_load_concurrency_capacity": fit,
        "kv_load_capacity_tokens": tokens,
    }


def unroll(
    config: SmartSearchConfig,
    branch: Branch,
    parallel: ParallelConfig,
    backend: str,
    knobs: Mapping[str, Any],
    predictors: PredictorWinners,
    kv_load_ratio: float | None = None,
) -> dict[str, Any]:
    space = config.search_space
    mode = parallel.mode
    out: dict[str, Any] = {"deployment_mode": mode, "backend": backend, "backend_version": parallel.backend_version(backend)}
    out.update({name: getattr(space, name) for name in PINNED_FIELDS})
    out["hardware_sku"] = branch.hardware_sku
    if branch.searched_systems:  # absent otherwise, as before: the manifest pins a system chosen among several
        out["searched_hardware_skus"] = list(space.hardware_skus)
    if space.nextn_accepted is not None:  # absent otherwise: earlier candidates keep their keys
        out["nextn_accepted"] = space.nextn_accepted
    if mode == "disagg" and (space.prefill_hardware_sku or space.decode_hardware_sku):  # likewise
        out.update({f"{role}_hardware_sku": sku for role, sku in branch.role_skus.items()})
    if space.gpu_budget_per_sku:
        out["gpu_budget_per_sku"] = dict(space.gpu_budget_per_sku)
    out["context_length"] = branch.context_length
    out.update(parallel.unrolled(backend))
    out.update(_quant_fields(branch, backend, knobs))
    for role in ROLES[mode]:
        out[f"{role}_max_num_batched_tokens"] = knobs[f"{role}_max_num_batched_tokens"]
        out[f"{role}_max_num_seqs"] = knobs[f"{role}_max_num_seqs"]
        for field in ROLE_PINNED:
            out[f"{role}_{field}"] = getattr(space, f"{role}_{field}")
        out.update(_own_capacity(config, branch, parallel, backend, role, knobs[f"{role}_max_num_batched_tokens"], out))
    out["num_g2_blocks"] = space.num_g2_blocks or 0
    if space.offload_enabled:
        out.update({name: getattr(space, name) for name in OFFLOAD_FIELDS if getattr(space, name) is not None})
    if mode == "disagg" and space.kv_transfer_bandwidth_gbps is not None:
        out["kv_transfer_bandwidth_gbps"] = space.kv_transfer_bandwidth_gbps
        if space.kv_bytes_per_token is not None:
            out["kv_bytes_per_token"] = space.kv_bytes_per_token
    out.update(_router_fields(config, knobs))
    out.update(_planner_fields(config, knobs, predictors))
    out.update(_workload_fields(config, out, knobs, kv_load_ratio))
    return out


def in_flight(
    config: SmartSearchConfig, branch: Branch, parallel: ParallelConfig, backend: str, knobs: Mapping[str, Any],
    kv_load_ratios: Sequence[float | None],
) -> tuple[int | None, ...]:
    """How many requests the candidate's workload keeps in flight at most, at each KV-load ratio
    (None: an open loop, or a KV-relative load on a pool without a memory model): a closed
    loop's concurrency, which on a KV-relative load follows from the capacity of the pool
    requests decode in, as `unroll` resolves it (read once for every ratio). An engine whose
    max_num_seqs is at least this never holds a request back, so max_num_seqs values above it
    replay alike where no Planner scales (one that does reads max_num_seqs as capacity)."""
    if config.workload.kind != "kv_load_ratio":
        return tuple(_workload_fields(config, {}, knobs, ratio).get("concurrency") for ratio in kv_load_ratios)
    role = LOAD_ROLE[parallel.mode]
    out = parallel.unrolled(backend) | _quant_fields(branch, backend, knobs)
    out.update(_own_capacity(config, branch, parallel, backend, role, knobs[f"{role}_max_num_batched_tokens"], out))
    if f"{role}_kv_capacity_tokens" not in out:
        return (None,) * len(kv_load_ratios)
    return tuple(_workload_fields(config, out, knobs, ratio)["concurrency"] for ratio in kv_load_ratios)


def _quant_fields(branch: Branch, backend: str, knobs: Mapping[str, Any]) -> dict[str, str]:
    """The candidate's quant modes (the fields that are set); LookupError (told as unsupported)
    for a mode another backend of the branch has perf data for but this one lacks."""
    chosen = {name: knobs[name] for name in branch.quant_knobs()}
    for name, mode in chosen.items():
        if mode not in branch.quant_choices[backend][name]:
            raise LookupError(f"{name}: {mode} is not in {backend} perf data on {', '.join(dict.fromkeys(branch.role_skus.values()))}")
    return chosen


def _own_capacity(
    config: SmartSearchConfig, branch: Branch, parallel: ParallelConfig, backend: str, role: str, max_num_batched_tokens: int,
    unrolled: Mapping[str, Any],
) -> dict[str, int]:
    """The role's KV pool on its own system at the candidate's own batching, memory fraction and quant modes.

    Enumeration sized every shape at the largest batch the search may pick (so the filter
    never overstates capacity) and at the quant choice that holds most; a smaller batch leaves
    more memory for KV, which the candidate's own figure — what Replay and the KV-relative load
    use — reflects. A shape kept for another quant choice that cannot hold context_length at
    this one raises LookupError (told as unsupported).
    """
    if parallel.role_capacity(backend, role) is None:  # no memory model: capacity unknown, Replay's default pool
        return {f"{role}_num_gpu_blocks": UNKNOWN_CAPACITY_BLOCKS * parallel.pool(role).shape.attention_dp}
    space = config.search_space
    block_size = getattr(space, f"{role}_block_size")
    quant = tuple((field.name, unrolled[field.name]) for field in QUANT_FIELDS if field.sizes_memory and field.name in unrolled)
    settings = MemorySettings(getattr(space, f"{role}_gpu_memory_utilization"), int(max_num_batched_tokens), quant)
    shape = parallel.pool(role).shape
    version = parallel.backend_version(backend)
    pool = worker_capacity(space.model_name, branch.role_skus[role], backend, version, shape, settings, block_size)
    if pool.kv_tokens // shape.attention_dp < branch.context_length:
        raise LookupError(
            f"kv_below_context: {role} {shape.label} holds {pool.kv_tokens // shape.attention_dp} KV tokens per attention rank "
            f"at {', '.join(f'{name} {mode}' for name, mode in quant)} < context_length {branch.context_length}"
        )
    return {f"{role}_kv_capacity_tokens": pool.kv_tokens, f"{role}_num_gpu_blocks": pool.num_gpu_blocks}


def _router_fields(config: SmartSearchConfig, knobs: Mapping[str, Any]) -> dict[str, Any]:
    """router_mode always; under kv_router its weights and the admission fields that are set."""
    space = config.search_space
    out: dict[str, Any] = {"router_mode": knobs["router_mode"]}
    if knobs["router_mode"] != "kv_router":
        return out
    router_knobs = KV_ROUTER_KNOBS + (OFFLOAD_ROUTER_KNOBS if space.offload_enabled else ())
    out.update({name: knobs[name] for name in router_knobs})
    if space.router_queue_threshold is not None:
        out["router_queue_threshold"] = space.router_queue_threshold
    out.update({name: getattr(space, name) for name in ADMISSION_THRESHOLDS if getattr(space, name) is not None})
    out["no_admission_control"] = space.no_admission_control
    return out


def _planner_fields(config: SmartSearchConfig, knobs: Mapping[str, Any], predictors: PredictorWinners) -> dict[str, Any]:
    space = config.search_space
    policy_name = knobs["planner_scaling_policy"]
    policies = space.scaling_policies()
    policy = _resolved(policies, policy_name)
    entry = space.planner_scaling_policy[[name for name, _ in policies].index(policy_name)]
    interval = policy.get("throughput_adjustment_interval_seconds")
    predictor_name, predictor_fields = predictors.get(interval, (None, {})) if policy["enable_throughput_scaling"] else (None, {})
    fpm = _resolved(space.fpm_samplings(), knobs["planner_fpm_sampling"]) if "planner_fpm_sampling" in knobs else {}
    sensitivity = (
        _resolved(space.load_sensitivities(), knobs["planner_load_sensitivity"]) if "planner_load_sensitivity" in knobs else {}
    )
    return unroll_planner_fields(
        entry, policy, fpm, sensitivity, predictor_name, dict(predictor_fields), config.goal.target.planner_optimization_target
    )


def _workload_fields(
    config: SmartSearchConfig, unrolled: Mapping[str, Any], knobs: Mapping[str, Any], kv_load_ratio: float | None
) -> dict[str, Any]:
    workload = config.workload
    if workload.kind == "kv_load_ratio":
        ratio = kv_load_ratio if kv_load_ratio is not None else workload.kv_load_ratio
        return kv_load_fields(config, unrolled, float(ratio))
    if workload.kind == "concurrency":
        return {"concurrency": int(knobs.get("concurrency", workload.concurrency_levels()[0]))}
    if workload.is_trace_based and workload.replay_concurrency is not None:
        return {"concurrency": workload.replay_concurrency}
    return {}


def candidate_key(unrolled: Mapping[str, Any]) -> str:
    """Content address of a candidate: equal dicts replay identically."""
    canonical = json.dumps(unrolled, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
