"""Checks an operator would run on a manifest, with Dynamo's own artefacts (see conftest.py), and
the candidates of the test matrix. Imported by name from tests/deploy (no `conftest` import: the
suite has several)."""

from __future__ import annotations

import argparse
import copy
import itertools
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

from spica.config.presets import LOAD_PREDICTORS, PLANNER_FPM_SAMPLING, PLANNER_LOAD_SENSITIVITY, PLANNER_SCALING_POLICIES
from spica.core.candidate import Candidate
from spica.planner.config import unroll_planner_fields

SCHEMA = Path(__file__).resolve().parents[2] / ".." / "shared" / "dynamo" / "dgd_v1beta1.schema.json"
SLA = SimpleNamespace(ttft_ms=500.0, itl_ms=30.0, e2e_ms=None)


def strict(schema: Any) -> Any:
    """The schema with `additionalProperties: false` wherever Kubernetes would prune unknown fields,
    and `x-kubernetes-int-or-string` as integer-or-string."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: strict(value) for key, value in schema.items()}
    if out.get("x-kubernetes-int-or-string") and "type" not in out and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if out.get("type") == "object" and "properties" in out and not out.get("x-kubernetes-preserve-unknown-fields"):
        out.setdefault("additionalProperties", False)
    return out


def parse_frontend(args: list[str]) -> Any:
    """Dynamo's frontend config from a Frontend container's args (after `-m dynamo.frontend`)."""
    from dynamo.frontend.frontend_args import FrontendArgGroup, FrontendConfig

    parser = argparse.ArgumentParser(allow_abbrev=False, exit_on_error=False)
    FrontendArgGroup().add_arguments(parser)
    assert args[:2] == ["-m", "dynamo.frontend"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the router knob flags move to --router-policy-config in v1.7
        config = FrontendConfig.from_cli_args(parser.parse_args(args[2:]))
    config.validate()
    return config


def parse_worker(parser: argparse.ArgumentParser, backend: str, args: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Dynamo-side flags parsed; the engine-native rest (vLLM / SGLang) returned. TRT-LLM's
    worker parser owns every flag, so nothing may be left over."""
    if backend == "trtllm":
        return parser.parse_args(args), []
    known, rest = parser.parse_known_args(args)
    if backend == "vllm":
        from dynamo.common.configuration.groups.router_args import parse_worker_router_config

        _, rest = parse_worker_router_config(rest)
    return known, rest


def components(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {component["type"]: component for component in manifest["spec"]["components"]}


def main_container(component: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in component["podTemplate"]["spec"]["containers"] if c["name"] == "main")


def broken(manifest: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    copied = copy.deepcopy(manifest)
    edit(copied)
    return copied


PLANNERS = {"off": ("disabled", "throughput"), "load": ("load_180_5", "throughput"), "throughput": ("throughput_180_5", "sla"),
            "hybrid": ("hybrid_180_5", "sla")}  # fmt: skip
VERSIONS = {"vllm": "0.24.0", "sglang": "0.5.14", "trtllm": "1.3.0rc20"}
ENGINE = {"max_num_seqs": 256, "max_num_batched_tokens": 8192, "block_size": 64, "gpu_memory_utilization": 0.9, "num_gpu_blocks": 12_000}


def pool(prefix: str, tp: int, dp: int = 1, ep: int = 1, replicas: int = 1) -> dict[str, Any]:
    strategy = "dep" if dp > 1 else ("tep" if ep > 1 else "tp")
    return {f"{prefix}{key}": value for key, value in
            (("tp", tp), ("pp", 1), ("attention_dp", dp), ("moe_tp", 1), ("moe_ep", ep), ("strategy", strategy), ("replicas", replicas))}  # fmt: skip


def engine(role: str, prefix_caching: bool) -> dict[str, Any]:
    return {**{f"{role}_{key}": value for key, value in ENGINE.items()}, f"{role}_enable_prefix_caching": prefix_caching}


def unrolled(mode: str, backend: str, planner: str, offload: bool, multinode: bool) -> dict[str, Any]:
    """A MoE model so that multinode covers both a TP-wide and a DEP-wide (data-parallel) worker."""
    policy, target = PLANNERS[planner]
    predictor = "kalman_default_log1p"
    u: dict[str, Any] = {
        "deployment_mode": mode, "backend": backend, "backend_version": VERSIONS[backend],
        "model_name": "Qwen/Qwen3-30B-A3B", "hardware_sku": "h200_sxm", "gpu_budget": 64,
        "min_gpu_budget": None, "min_endpoint": None, "context_length": 16384, "startup_time": None, "aic_nextn": None,
        "router_mode": "kv_router", "overlap_score_credit": 0.5, "prefill_load_scale": 1.0, "router_temperature": 0.2,
        **unroll_planner_fields(policy, PLANNER_SCALING_POLICIES[policy], PLANNER_FPM_SAMPLING["default"],
                                PLANNER_LOAD_SENSITIVITY["default"], predictor, LOAD_PREDICTORS[predictor], target),
    }  # fmt: skip
    if offload:
        u.update({"num_g2_blocks": 8192, "kv_bytes_per_token": 98_304, "bandwidth_g1_to_g2_gbps": 30.0,
                  "bandwidth_g2_to_g1_gbps": 30.0, "host_cache_hit_weight": 0.75, "disk_cache_hit_weight": 0.25})  # fmt: skip
    if mode == "agg":
        u.update(pool("", 16, ep=16) if multinode else pool("", 2, replicas=2), **engine("agg", True))
    else:
        prefill = pool("prefill_", 16, ep=16) if multinode else pool("prefill_", 2, replicas=2)
        decode = pool("decode_", 1, dp=16, ep=16) if multinode else pool("decode_", 1, dp=4, ep=4)
        u.update(prefill, **decode, **engine("prefill", True), **engine("decode", False))
    roles = ("",) if mode == "agg" else ("prefill_", "decode_")
    u["used_gpus"] = sum(u[f"{r}tp"] * u[f"{r}attention_dp"] * u[f"{r}replicas"] for r in roles)
    return u


def candidate(u: dict[str, Any]) -> Candidate:
    return Candidate(key="0123456789abcdef", branch=u["deployment_mode"], round=1, status="feasible", unrolled=u,
                     objectives={"goodput_per_gpu": 100.0}, score=100.0)  # fmt: skip


MATRIX = list(itertools.product(("agg", "disagg"), ("vllm", "sglang", "trtllm"), PLANNERS, (False, True), (False, True)))
