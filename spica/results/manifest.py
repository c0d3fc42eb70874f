"""A candidate as a Dynamo `DynamoGraphDeployment` manifest: what to apply to run what was scored.

Schema: the `nvidia.com/v1alpha1` `spec.services` layout of the ai-dynamo 1.6.1 example
`dynamo/planner/tests/manual/scaling/disagg_planner_throughput.yaml` (Frontend, a Planner
started as `python3 -m dynamo.planner --config <json>`, workers with `componentType: worker`,
`subComponentType: prefill|decode`, `resources.limits.gpu` per pod, `envFromSecret`), the same
layout `aiconfigurator/generator/builders/dgd_model.py` models. Worker names follow
`dynamo/planner/config/backend_components.py` ("worker", "prefill", "decode"); a lone agg
worker is found by the Planner as the generic worker (`monitoring/dgd_services.py`).

Flags, checked against what is installed:
- frontend: `dynamo/common/configuration/groups/{router_args,kv_router_args}.py` (`--router-mode`,
  `--router-kv-overlap-score-credit`, ...; the knob flags warn "removed in v1.7" but work in 1.6.1);
- workers: `dynamo/trtllm/backend_args.py`, `dynamo/vllm/backend_args.py` (`--disaggregation-mode`;
  `--is-prefill-worker` is gone), `dynamo/vllm/args.py` (NIXL / KVBM `--kv-transfer-config`),
  `dynamo/trtllm/workers/llm_worker.py` (`--override-engine-args` replaces the whole
  `kv_cache_config`, so the memory fraction is repeated there);
- vLLM / SGLang engine flags (those engines are not installed): the names in
  `aiconfigurator/generator/config/backend_config_mapping.yaml` and
  `dynamo/profiler/utils/config_modifiers/{vllm,sglang}.py`. SGLang's `--tp` is the whole
  engine (attention DP ranks included) and its request / chunk budgets are global, split
  over DP ranks (`_normalize_prefill_dp_limits` there), so they are multiplied back here.
- Planner: every field is a `dynamo.planner.config.planner_config.PlannerConfig` field; workers
  opt into forward-pass metrics with `DYN_FORWARDPASS_METRIC_PORT` (all three backends).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any, Iterable, Mapping

import yaml
from aiconfigurator.sdk.perf_database import load_system_spec

from spica.results.ledger import Candidate

API_VERSION = "nvidia.com/v1alpha1"
KIND = "DynamoGraphDeployment"
DYNAMO_VERSION = version("ai-dynamo")
IMAGE_REPOSITORY = "nvcr.io/nvidia/ai-dynamo"
RUNTIME_IMAGES = {"vllm": "vllm-runtime", "sglang": "sglang-runtime", "trtllm": "tensorrtllm-runtime"}
MODES = ("agg", "disagg")
ROLES = {"agg": ("agg",), "disagg": ("prefill", "decode")}
SERVICE_NAMES = {"agg": "worker", "prefill": "prefill", "decode": "decode"}
HF_TOKEN_SECRET = "hf-token-secret"
FPM_PORT = "20380"  # dynamo.vllm.envs.DEFAULT_FORWARDPASS_METRIC_PORT
DEFAULT_GPUS_PER_NODE = 8
SGLANG_BOOTSTRAP_PORT = 12345
NIXL = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
KVBM = {"kv_connector": "DynamoConnector", "kv_connector_module_path": "kvbm.vllm_integration.connector", "kv_role": "kv_both"}
ROUTER_MODES = {"kv_router": "kv", "round_robin": "round-robin"}
ROUTER_FLAGS = (
    ("overlap_score_credit", "--router-kv-overlap-score-credit"),
    ("prefill_load_scale", "--router-prefill-load-scale"),
    ("router_temperature", "--router-temperature"),
    ("host_cache_hit_weight", "--router-host-cache-hit-weight"),
    ("disk_cache_hit_weight", "--router-disk-cache-hit-weight"),
    ("router_queue_threshold", "--router-queue-threshold"),
)
PLANNER_FIELDS = (
    "max_num_fpm_samples", "fpm_sample_bucket_size",
    "throughput_adjustment_interval_seconds", "load_predictor", "load_predictor_log1p", "prophet_window_size",
    "kalman_q_level", "kalman_q_trend", "kalman_r", "kalman_min_points",
    "load_adjustment_interval_seconds", "load_scaling_down_sensitivity", "load_min_observations",
)
K8S_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


@dataclass(frozen=True)
class Pool:
    """One worker pool ("agg", "prefill" or "decode") read from the flat candidate dict."""

    role: str
    tp: int
    pp: int
    attention_dp: int
    moe_tp: int
    moe_ep: int
    replicas: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    gpu_memory_utilization: float
    prefix_caching: bool
    num_gpu_blocks: int

    @classmethod
    def of(cls, unrolled: Mapping[str, Any], role: str) -> "Pool":
        shape = "" if role == "agg" else f"{role}_"
        return cls(
            role=role,
            **{key: int(unrolled[f"{shape}{key}"]) for key in ("tp", "pp", "attention_dp", "moe_tp", "moe_ep", "replicas")},
            max_num_seqs=int(unrolled[f"{role}_max_num_seqs"]),
            max_num_batched_tokens=int(unrolled[f"{role}_max_num_batched_tokens"]),
            block_size=int(unrolled[f"{role}_block_size"]),
            gpu_memory_utilization=float(unrolled[f"{role}_gpu_memory_utilization"]),
            prefix_caching=bool(unrolled[f"{role}_enable_prefix_caching"]),
            num_gpu_blocks=int(unrolled[f"{role}_num_gpu_blocks"]),
        )

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.attention_dp

    @property
    def disaggregated(self) -> bool:
        return self.role != "agg"

    @property
    def moe(self) -> bool:
        return self.moe_tp * self.moe_ep > 1


@dataclass(frozen=True)
class Worker:
    """What every backend needs to know beyond the pool: model, router, offload, speculation."""

    model: str
    context_length: int
    nextn: int
    kv_events: bool  # the KV router needs this pool's cache events
    host_blocks: int  # G2 (host) offload blocks per DP rank, 0 = off

    @classmethod
    def of(cls, unrolled: Mapping[str, Any], pool: Pool) -> "Worker":
        return cls(
            model=unrolled["model_name"],
            context_length=int(unrolled["context_length"]),
            nextn=int(unrolled.get("aic_nextn", 0)),
            kv_events=unrolled["router_mode"] == "kv_router" and pool.prefix_caching,
            host_blocks=int(unrolled.get("num_g2_blocks", 0)) if pool.prefix_caching else 0,
        )


def _flags(pairs: Iterable[tuple[str, Any]]) -> list[str]:
    """CLI words from (flag, value) pairs: True is a bare flag, None / False drop the flag."""
    words: list[str] = []
    for flag, value in pairs:
        if value is None or value is False:
            continue
        words += [flag] if value is True else [flag, value if isinstance(value, str) else json.dumps(value)]
    return words


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"))


def _vllm_kv_transfer(pool: Pool, worker: Worker) -> dict[str, Any] | None:
    """NIXL moves KV from prefill to decode, KVBM offloads it to host; both at once ride in a
    PdConnector, composed as `dynamo/vllm/args.py` does."""
    if pool.disaggregated and worker.host_blocks:
        return {
            "kv_connector": "PdConnector",
            "kv_role": "kv_both",
            "kv_connector_extra_config": {"connectors": [KVBM, NIXL]},
            "kv_connector_module_path": KVBM["kv_connector_module_path"],
        }
    if pool.disaggregated:
        return NIXL
    return KVBM if worker.host_blocks else None


def vllm_args(pool: Pool, worker: Worker) -> list[str]:
    transfer = _vllm_kv_transfer(pool, worker)
    events = {"publisher": "zmq", "topic": "kv-events", "endpoint": "tcp://*:20080", "enable_kv_cache_events": True}
    return _flags([
        ("--model", worker.model), ("--served-model-name", worker.model),
        ("--tensor-parallel-size", pool.tp), ("--pipeline-parallel-size", pool.pp),
        ("--data-parallel-size", pool.attention_dp), ("--enable-expert-parallel", pool.moe_ep > 1),
        ("--max-model-len", worker.context_length),
        ("--max-num-seqs", pool.max_num_seqs), ("--max-num-batched-tokens", pool.max_num_batched_tokens),
        ("--block-size", pool.block_size), ("--gpu-memory-utilization", pool.gpu_memory_utilization),
        ("--enable-prefix-caching" if pool.prefix_caching else "--no-enable-prefix-caching", True),
        ("--speculative-config", _json({"method": "mtp", "num_speculative_tokens": worker.nextn}) if worker.nextn else None),
        ("--kv-events-config", _json(events) if worker.kv_events else None),
        ("--disaggregation-mode", pool.role if pool.disaggregated else None),
        ("--kv-transfer-config", _json(transfer) if transfer else None),
    ])


def sglang_args(pool: Pool, worker: Worker) -> list[str]:
    dp = pool.attention_dp
    events = {"publisher": "zmq", "topic": "kv-events", "endpoint": "tcp://*:5557"}
    host_ratio = round(worker.host_blocks * dp / pool.num_gpu_blocks, 3) if worker.host_blocks else None
    return _flags([
        ("--model-path", worker.model), ("--served-model-name", worker.model),
        ("--tp", pool.tp * dp), ("--pipeline-parallel-size", pool.pp),
        ("--dp", dp if dp > 1 else None), ("--enable-dp-attention", dp > 1), ("--ep", pool.moe_ep if pool.moe_ep > 1 else None),
        ("--context-length", worker.context_length),
        ("--max-running-requests", pool.max_num_seqs * dp),
        ("--chunked-prefill-size", pool.max_num_batched_tokens * dp), ("--max-prefill-tokens", pool.max_num_batched_tokens),
        ("--page-size", pool.block_size), ("--mem-fraction-static", pool.gpu_memory_utilization),
        ("--disable-radix-cache", not pool.prefix_caching),
        ("--enable-hierarchical-cache", bool(host_ratio)), ("--hicache-ratio", host_ratio),
        ("--speculative-algorithm", "NEXTN" if worker.nextn else None),
        ("--speculative-num-steps", worker.nextn or None),
        ("--speculative-eagle-topk", 1 if worker.nextn else None),
        ("--speculative-num-draft-tokens", worker.nextn + 1 if worker.nextn else None),
        ("--kv-events-config", _json(events) if worker.kv_events else None),
        ("--disaggregation-mode", pool.role if pool.disaggregated else None),
        ("--disaggregation-transfer-backend", "nixl" if pool.disaggregated else None),
        ("--disaggregation-bootstrap-port", SGLANG_BOOTSTRAP_PORT if pool.disaggregated else None),
        ("--host", "0.0.0.0" if pool.disaggregated else None),
    ])


def trtllm_args(pool: Pool, worker: Worker) -> list[str]:
    engine: dict[str, Any] = {
        "enable_chunked_prefill": True,  # prompts longer than max_num_tokens must still be served
        "kv_cache_config": {
            "free_gpu_memory_fraction": pool.gpu_memory_utilization,
            "tokens_per_block": pool.block_size,
            "enable_block_reuse": pool.prefix_caching,
        },
    }
    if pool.disaggregated:
        engine["cache_transceiver_config"] = {"backend": "DEFAULT"}
    if worker.nextn:
        engine["speculative_config"] = {"decoding_type": "MTP", "num_nextn_predict_layers": worker.nextn}
    return _flags([
        ("--model", worker.model), ("--served-model-name", worker.model),
        ("--tensor-parallel-size", pool.tp * pool.attention_dp), ("--pipeline-parallel-size", pool.pp),
        ("--expert-parallel-size", pool.moe_ep if pool.moe else None), ("--enable-attention-dp", pool.attention_dp > 1),
        ("--max-seq-len", worker.context_length),
        ("--max-batch-size", pool.max_num_seqs), ("--max-num-tokens", pool.max_num_batched_tokens),
        ("--kv-block-size", pool.block_size), ("--free-gpu-memory-fraction", pool.gpu_memory_utilization),
        ("--override-engine-args", _json(engine)),
        ("--publish-kv-events", worker.kv_events),
        ("--connector", "kvbm" if worker.host_blocks else None),
        ("--disaggregation-mode", pool.role if pool.disaggregated else None),
    ])


ENGINE_ARGS = {"vllm": vllm_args, "sglang": sglang_args, "trtllm": trtllm_args}


def frontend_args(unrolled: Mapping[str, Any]) -> list[str]:
    """`dynamo.frontend` flags: the router mode and, under the KV router, its knobs."""
    router_mode = unrolled["router_mode"]
    if router_mode not in ROUTER_MODES:
        raise ValueError(f"router_mode: {router_mode!r} is not one of {', '.join(ROUTER_MODES)}")
    return _flags([("--router-mode", ROUTER_MODES[router_mode]), *((flag, unrolled.get(key)) for key, flag in ROUTER_FLAGS)])


def planner_config(candidate: Candidate) -> dict[str, Any] | None:
    """The Planner's `--config` for this candidate, or None when no scaling is enabled.

    SLA targets come from the Replay call that scored it (`sla_ttft_ms` / `sla_itl_ms`).
    """
    u = candidate.unrolled
    if not (u.get("enable_throughput_scaling") or u.get("enable_load_scaling")):
        return None
    config: dict[str, Any] = {
        "environment": "kubernetes",
        "backend": u["backend"],
        "mode": u["deployment_mode"],
        "model_name": u["model_name"],
        "optimization_target": u["planner_optimization_target"],
        "enable_throughput_scaling": bool(u.get("enable_throughput_scaling")),
        "enable_load_scaling": bool(u.get("enable_load_scaling")),
        "min_endpoint": int(u["min_endpoint"]),
        "max_gpu_budget": int(u["gpu_budget"]),
        "min_gpu_budget": int(u["min_gpu_budget"]),
    }
    config.update({key: u[key] for key in PLANNER_FIELDS if key in u})
    replay_kwargs = candidate.replay_input.get("kwargs", {})
    for source, target in (("sla_ttft_ms", "ttft_ms"), ("sla_itl_ms", "itl_ms")):
        if source in replay_kwargs:
            config[target] = float(replay_kwargs[source])
    if int(u.get("aic_nextn", 0)) > 0:
        config["speculative_nextn"] = int(u["aic_nextn"])
    return config


def _placement(gpus: int, gpus_per_node: int) -> tuple[int, dict[str, int] | None]:
    """GPUs per pod and the multinode block: a worker wider than a node spans equal pods."""
    if gpus <= gpus_per_node:
        return gpus, None
    nodes = math.ceil(gpus / gpus_per_node)
    if gpus % nodes:
        raise ValueError(f"a worker of {gpus} GPUs cannot be split evenly over {nodes} nodes of {gpus_per_node} GPUs")
    return gpus // nodes, {"nodeCount": nodes}


def _container(image: str, module: str, args: list[str]) -> dict[str, Any]:
    return {"mainContainer": {"image": image, "command": ["python3", "-m", module], "args": args}}


def _worker_service(unrolled: Mapping[str, Any], role: str, image: str, planner_on: bool) -> dict[str, Any]:
    backend = unrolled["backend"]
    pool = Pool.of(unrolled, role)
    worker = Worker.of(unrolled, pool)
    gpus_per_node = int(load_system_spec(unrolled["hardware_sku"]).get("node", {}).get("num_gpus_per_node", DEFAULT_GPUS_PER_NODE))
    pod_gpus, multinode = _placement(pool.gpus, gpus_per_node)
    envs = [{"name": "DYN_FORWARDPASS_METRIC_PORT", "value": FPM_PORT}] if planner_on else []
    if worker.host_blocks and backend != "sglang":  # SGLang offloads with its own HiCache flags
        envs.append({"name": "DYN_KVBM_CPU_CACHE_OVERRIDE_NUM_BLOCKS", "value": str(worker.host_blocks)})
    service: dict[str, Any] = {"envFromSecret": HF_TOKEN_SECRET, "componentType": "worker"}
    if pool.disaggregated:
        service["subComponentType"] = role
    service["replicas"] = pool.replicas
    service["resources"] = {"limits": {"gpu": str(pod_gpus)}}
    if multinode:
        service["multinode"] = multinode
    if envs:
        service["envs"] = envs
    service["extraPodSpec"] = _container(image, f"dynamo.{backend}", ENGINE_ARGS[backend](pool, worker))
    return service


def _k8s_name(field: str, value: str) -> str:
    if len(value) > 63 or not K8S_NAME.fullmatch(value):
        raise ValueError(f"{field}: {value!r} is not a Kubernetes name (lowercase letters, digits, '-', at most 63)")
    return value


def dynamo_manifest(candidate: Candidate, *, namespace: str = "spica", name: str | None = None) -> dict[str, Any]:
    """The DynamoGraphDeployment (v1alpha1) that deploys `candidate` as it was replayed."""
    u = candidate.unrolled
    backend, mode = u["backend"], u["deployment_mode"]
    if backend not in ENGINE_ARGS:
        raise ValueError(f"backend: {backend!r} is not one of {', '.join(ENGINE_ARGS)}")
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    name = _k8s_name("name", name or f"spica-{mode}-{backend}-{candidate.key[:8].lower()}")
    image = f"{IMAGE_REPOSITORY}/{RUNTIME_IMAGES[backend]}:{DYNAMO_VERSION}"
    services: dict[str, Any] = {
        "Frontend": {
            "envFromSecret": HF_TOKEN_SECRET,
            "componentType": "frontend",
            "replicas": 1,
            "extraPodSpec": _container(image, "dynamo.frontend", frontend_args(u)),
        }
    }
    planner = planner_config(candidate)
    if planner is not None:
        services["Planner"] = {
            "componentType": "planner",
            "replicas": 1,
            "extraPodSpec": _container(
                f"{IMAGE_REPOSITORY}/dynamo-planner:{DYNAMO_VERSION}", "dynamo.planner", ["--config", _json(planner)]
            ),
        }
    for role in ROLES[mode]:
        services[SERVICE_NAMES[role]] = _worker_service(u, role, image, planner is not None)
    metadata = {
        "name": name,
        "namespace": _k8s_name("namespace", namespace),
        "annotations": {"spica/candidate": candidate.key, "spica/deployment": candidate.label()},
    }
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": {"services": services}}


def manifest_yaml(candidate: Candidate, *, namespace: str = "spica", name: str | None = None) -> str:
    """`dynamo_manifest` as YAML, headed by a comment with what was measured."""
    scored = ", ".join(f"{key}={value:.4g}" for key, value in candidate.objectives.items()) or "no objective"
    header = f"# Spica candidate {candidate.key}: {candidate.label()} ({scored}); ai-dynamo {DYNAMO_VERSION}\n"
    body = yaml.safe_dump(dynamo_manifest(candidate, namespace=namespace, name=name), sort_keys=False, width=1000)
    return header + body
