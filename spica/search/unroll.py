"""A trial becomes one flat, self-contained candidate dict (SPEC §4).

Input: the knob values of one suggestion, the projected parallel config, the chosen backend
and the predictor winners. Output: every value the deployment needs, resolved (KV blocks,
memory fraction, backend version, concurrency), with irrelevant knobs absent — so two trials
that would replay identically unroll to the same dict and the dedupe can see it.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Mapping

from spica.config import SmartSearchConfig
from spica.planner.config import unroll_planner_fields
from spica.planner.policies import optimization_target
from spica.search.dimensions import KV_ROUTER_KNOBS, OFFLOAD_ROUTER_KNOBS, ROLES
from spica.space.branches import ParallelConfig

PINNED_FIELDS = ("model_name", "hardware_sku", "gpu_budget", "min_gpu_budget", "min_endpoint", "startup_time", "aic_nextn")
ROLE_PINNED = ("block_size", "gpu_memory_utilization", "enable_prefix_caching")
OFFLOAD_FIELDS = ("num_g2_blocks", "kv_bytes_per_token", "bandwidth_g1_to_g2_gbps", "bandwidth_g2_to_g1_gbps", "offload_batch_size")

PredictorWinners = Mapping[int, tuple[str, Mapping[str, Any]]]


def _resolved(items: list[tuple[str, dict[str, Any]]], name: str) -> dict[str, Any]:
    return next(fields for entry, fields in items if entry == name)


def kv_capacity_tokens(unrolled: Mapping[str, Any]) -> int:
    """KV tokens the whole deployment holds where requests live during decode."""
    if unrolled["deployment_mode"] == "agg":
        return unrolled["agg_kv_tokens"] * unrolled["replicas"]
    return unrolled["decode_kv_tokens"] * unrolled["decode_replicas"]


def derived_concurrency(config: SmartSearchConfig, unrolled: Mapping[str, Any], ratio: float) -> int:
    """SPEC §2.2: concurrency = max(1, floor(ratio × capacity / (isl + osl/2)))."""
    workload = config.workload
    tokens_per_request = workload.isl + workload.osl / 2
    return max(1, math.floor(ratio * kv_capacity_tokens(unrolled) / tokens_per_request))


def unroll(
    config: SmartSearchConfig,
    parallel: ParallelConfig,
    context_length: int,
    backend: str,
    knobs: Mapping[str, Any],
    predictors: PredictorWinners,
    kv_load_ratio: float | None = None,
) -> dict[str, Any]:
    space = config.search_space
    mode = parallel.mode
    out: dict[str, Any] = {"deployment_mode": mode, "backend": backend, "backend_version": parallel.backend_version(backend)}
    out.update({name: getattr(space, name) for name in PINNED_FIELDS})
    out["context_length"] = context_length
    out.update(parallel.unrolled(backend))
    for role in ROLES[mode]:
        out[f"{role}_max_num_batched_tokens"] = knobs[f"{role}_max_num_batched_tokens"]
        out[f"{role}_max_num_seqs"] = knobs[f"{role}_max_num_seqs"]
        for field in ROLE_PINNED:
            out[f"{role}_{field}"] = getattr(space, f"{role}_{field}")
    if space.offload_enabled:
        out.update({name: getattr(space, name) for name in OFFLOAD_FIELDS if getattr(space, name) is not None})
    if mode == "disagg" and space.kv_transfer_bandwidth_gbps is not None:
        out["kv_transfer_bandwidth_gbps"] = space.kv_transfer_bandwidth_gbps
        if space.kv_bytes_per_token is not None:
            out["kv_bytes_per_token"] = space.kv_bytes_per_token
    out["router_mode"] = knobs["router_mode"]
    if knobs["router_mode"] == "kv_router":
        router_knobs = KV_ROUTER_KNOBS + (OFFLOAD_ROUTER_KNOBS if space.offload_enabled else ())
        out.update({name: knobs[name] for name in router_knobs})
    if space.router_queue_threshold is not None:
        out["router_queue_threshold"] = space.router_queue_threshold
    out.update(_planner_fields(config, knobs, predictors))
    out.update(_workload_fields(config, out, knobs, kv_load_ratio))
    return out


def _planner_fields(config: SmartSearchConfig, knobs: Mapping[str, Any], predictors: PredictorWinners) -> dict[str, Any]:
    space = config.search_space
    policy_name = knobs["planner_scaling_policy"]
    policy = _resolved(space.scaling_policies(), policy_name)
    interval = policy.get("throughput_adjustment_interval_seconds")
    predictor_name, predictor_fields = predictors.get(interval, (None, {})) if policy["enable_throughput_scaling"] else (None, {})
    fpm = _resolved(space.fpm_samplings(), knobs["planner_fpm_sampling"]) if "planner_fpm_sampling" in knobs else {}
    sensitivity = (
        _resolved(space.load_sensitivities(), knobs["planner_load_sensitivity"]) if "planner_load_sensitivity" in knobs else {}
    )
    return unroll_planner_fields(
        policy_name, policy, fpm, sensitivity, predictor_name, dict(predictor_fields), optimization_target(config.goal.target)
    )


def _workload_fields(
    config: SmartSearchConfig, unrolled: Mapping[str, Any], knobs: Mapping[str, Any], kv_load_ratio: float | None
) -> dict[str, Any]:
    workload = config.workload
    if workload.kind == "kv_load_ratio":
        ratio = kv_load_ratio if kv_load_ratio is not None else workload.kv_load_ratio
        return {"kv_load_ratio": float(ratio), "concurrency": derived_concurrency(config, unrolled, float(ratio))}
    if workload.kind == "concurrency":
        return {"concurrency": int(knobs.get("concurrency", workload.concurrency_levels()[0]))}
    if workload.is_trace and workload.replay_concurrency is not None:
        return {"concurrency": workload.replay_concurrency}
    return {}


def candidate_key(unrolled: Mapping[str, Any]) -> str:
    """Content address of a candidate: equal dicts replay identically."""
    canonical = json.dumps(unrolled, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
