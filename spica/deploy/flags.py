"""The command lines of a candidate's pods: engine flags per worker pool, router flags for the frontend.

The model flags (`--model` / `--model-path`, `--served-model-name`) are not here: Dynamo's
config modifiers set them (`BaseConfigModifier.update_model`) when the manifest is built.
Flag names are those of the parsers the 1.6.1 runtime images run, checked by tests/deploy:
- frontend: `dynamo/common/configuration/groups/{router_args,kv_router_args}.py`. The router
  knob flags warn "removed in v1.7" but are what 1.6.1 applies; their `--router-policy-config`
  replacement is parsed by the Rust router only at start-up, so it cannot be checked offline;
- workers: `dynamo/{vllm,sglang,trtllm}/backend_args.py` and the engines' own parsers.
  vLLM: NIXL / KVBM through `--kv-transfer-config` (`dynamo/vllm/args.py`), NIXL roles as in
  `dynamo.profiler.utils.config_modifiers.vllm.DEFAULT_VLLM_KV_TRANSFER_CONFIG`, and one explicit
  NIXL `engine_id` per role when a worker spans nodes, so the pods of one engine agree on it.
  SGLang: `--tp` is the whole engine (attention DP ranks included) and its request / chunk
  budgets are global, split over DP ranks, so they are multiplied back here.
  TRT-LLM: `--override-engine-args` replaces Dynamo's whole `kv_cache_config`
  (`dynamo/trtllm/workers/llm_worker.py`), so what Dynamo sets there is repeated (the memory
  fraction; `enable_partial_reuse: false` under KVBM); a prefill worker runs without the overlap
  scheduler, and a disagg worker's `max_num_tokens` must be a multiple of `tokens_per_block`
  (TRT-LLM's cache transceiver asserts it).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Iterable, Mapping

SGLANG_BOOTSTRAP_PORT = 12345  # dynamo/profiler/templates/dgd/sglang/disagg.yaml
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


def profiler_modules() -> tuple[ModuleType, ModuleType]:
    """Dynamo's profiler config modifiers and DGD helpers. They import transformers and Dynamo's
    planner (seconds): loaded when the first manifest is built, not when Spica starts."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # no "PyTorch was not found" notice
    from dynamo.profiler.utils import config as dgd
    from dynamo.profiler.utils import config_modifiers

    return config_modifiers, dgd


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
    """What every backend needs beyond the pool: context, speculation, router, offload, placement."""

    context_length: int | None  # None: the engine's default, the model's maximum
    nextn: int
    kv_events: bool  # the KV router needs this pool's cache events
    host_blocks: int  # G2 (host) offload blocks per DP rank, 0 = off (as Replay models it)
    engine_id: str | None  # explicit NIXL engine id (vLLM, a disagg worker spanning nodes)

    @classmethod
    def of(cls, unrolled: Mapping[str, Any], pool: Pool, engine_id: str | None = None) -> "Worker":
        context = unrolled.get("context_length")
        return cls(
            context_length=None if context is None else int(context),
            nextn=int(unrolled.get("aic_nextn") or 0),
            kv_events=unrolled["router_mode"] == "kv_router" and pool.prefix_caching,
            host_blocks=int(unrolled.get("num_g2_blocks") or 0) if pool.prefix_caching else 0,
            engine_id=engine_id,
        )


def _flags(pairs: Iterable[tuple[str, Any]]) -> list[str]:
    """CLI words from (flag, value) pairs: True is a bare flag, None / False drop the flag."""
    words: list[str] = []
    for flag, value in pairs:
        if value is None or value is False:
            continue
        words += [flag] if value is True else [flag, value if isinstance(value, str) else json.dumps(value)]
    return words


def compact_json(value: Mapping[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"))


def _vllm_kv_transfer(pool: Pool, worker: Worker) -> dict[str, Any] | None:
    """NIXL moves KV from prefill to decode, KVBM offloads it to host; both at once ride in a
    PdConnector, composed as `dynamo/vllm/args.py` does (its children inherit the engine id)."""
    if not pool.disaggregated:
        return KVBM if worker.host_blocks else None
    config_modifiers, _ = profiler_modules()
    nixl = json.loads(config_modifiers.vllm.DEFAULT_VLLM_KV_TRANSFER_CONFIG[pool.role])
    transfer = nixl
    if worker.host_blocks:
        transfer = {
            "kv_connector": "PdConnector",
            "kv_role": "kv_both",
            "kv_connector_extra_config": {"connectors": [KVBM, nixl]},
            "kv_connector_module_path": KVBM["kv_connector_module_path"],
        }
    if worker.engine_id:
        transfer["engine_id"] = worker.engine_id
    return transfer


def vllm_args(pool: Pool, worker: Worker) -> list[str]:
    transfer = _vllm_kv_transfer(pool, worker)
    events = {"publisher": "zmq", "topic": "kv-events", "endpoint": "tcp://*:20080", "enable_kv_cache_events": True}
    return _flags([
        ("--tensor-parallel-size", pool.tp), ("--pipeline-parallel-size", pool.pp),
        ("--data-parallel-size", pool.attention_dp), ("--enable-expert-parallel", pool.moe_ep > 1),
        ("--max-model-len", worker.context_length),
        ("--max-num-seqs", pool.max_num_seqs), ("--max-num-batched-tokens", pool.max_num_batched_tokens),
        ("--block-size", pool.block_size), ("--gpu-memory-utilization", pool.gpu_memory_utilization),
        ("--enable-prefix-caching" if pool.prefix_caching else "--no-enable-prefix-caching", True),
        ("--speculative-config", compact_json({"method": "mtp", "num_speculative_tokens": worker.nextn}) if worker.nextn else None),
        ("--kv-events-config", compact_json(events) if worker.kv_events else None),
        ("--disaggregation-mode", pool.role if pool.disaggregated else None),
        ("--kv-transfer-config", compact_json(transfer) if transfer else None),
    ])


def sglang_args(pool: Pool, worker: Worker) -> list[str]:
    dp = pool.attention_dp
    events = {"publisher": "zmq", "topic": "kv-events", "endpoint": "tcp://*:5557"}
    host_ratio = round(worker.host_blocks * dp / pool.num_gpu_blocks, 3) if worker.host_blocks else None
    return _flags([
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
        ("--kv-events-config", compact_json(events) if worker.kv_events else None),
        ("--disaggregation-mode", pool.role if pool.disaggregated else None),
        ("--disaggregation-transfer-backend", "nixl" if pool.disaggregated else None),
        ("--disaggregation-bootstrap-port", SGLANG_BOOTSTRAP_PORT if pool.disaggregated else None),
        ("--host", "0.0.0.0" if pool.disaggregated else None),
    ])


def trtllm_args(pool: Pool, worker: Worker) -> list[str]:
    if pool.disaggregated and pool.max_num_batched_tokens % pool.block_size:
        raise ValueError(
            f"{pool.role}_max_num_batched_tokens: {pool.max_num_batched_tokens} is not a multiple of "
            f"{pool.role}_block_size {pool.block_size} (TRT-LLM's disagg cache transceiver requires it)"
        )
    kv_cache: dict[str, Any] = {
        "free_gpu_memory_fraction": pool.gpu_memory_utilization,
        "tokens_per_block": pool.block_size,
        "enable_block_reuse": pool.prefix_caching,
    }
    if worker.host_blocks:
        kv_cache["enable_partial_reuse"] = False  # what Dynamo sets for KVBM
    engine: dict[str, Any] = {
        "enable_chunked_prefill": True,  # prompts longer than max_num_tokens must still be served
        "kv_cache_config": kv_cache,
    }
    if pool.disaggregated:
        engine["cache_transceiver_config"] = {"backend": "DEFAULT"}
    if pool.role == "prefill":
        engine["disable_overlap_scheduler"] = True
    if worker.nextn:
        engine["speculative_config"] = {"decoding_type": "MTP", "num_nextn_predict_layers": worker.nextn}
    return _flags([
        ("--tensor-parallel-size", pool.tp * pool.attention_dp), ("--pipeline-parallel-size", pool.pp),
        ("--expert-parallel-size", pool.moe_ep if pool.moe else None), ("--enable-attention-dp", pool.attention_dp > 1),
        ("--max-seq-len", worker.context_length),
        ("--max-batch-size", pool.max_num_seqs), ("--max-num-tokens", pool.max_num_batched_tokens),
        ("--kv-block-size", pool.block_size), ("--free-gpu-memory-fraction", pool.gpu_memory_utilization),
        ("--override-engine-args", compact_json(engine)),
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
