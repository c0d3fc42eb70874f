"""The backend registry: one record per serving engine, holding every fact Spica uses about it.

The schema's choice set, the shape legality rules, AI Configurator's memory model (backend name,
memory-fraction kind), AIS timing and Replay's mocker (their backend name), the runtime image,
the engine version the image runs, and the worker flags of a manifest all read `BACKENDS`.
Adding a backend is one `Backend` entry here with its flag builder, plus its `conf/backend/` file.

Worker flag names are those of the parsers the ai-dynamo 1.6.1 runtime images run, checked by
tests/deploy: `dynamo/{vllm,sglang,trtllm}/backend_args.py` and the engines' own parsers.
- vLLM: NIXL / KVBM through `--kv-transfer-config` (`spica.deploy.flags.vllm_kv_transfer`).
- SGLang: `--tp` is the whole engine (attention DP ranks included) and its request / chunk
  budgets are global, split over DP ranks, so they are multiplied back here.
- TRT-LLM: `--override-engine-args` replaces Dynamo's whole `kv_cache_config`
  (`dynamo/trtllm/workers/llm_worker.py`), so what Dynamo sets there is repeated (the memory
  fraction; `enable_partial_reuse: false` under KVBM); a prefill worker runs without the overlap
  scheduler, and a disagg worker's `max_num_tokens` must be a multiple of `tokens_per_block`
  (TRT-LLM's cache transceiver asserts it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping

from spica.deploy.flags import SGLANG_BOOTSTRAP_PORT, Worker, cli_words, compact_json, vllm_kv_transfer
from spica.core.unrolled import Pool

if TYPE_CHECKING:
    from spica.space.shapes import ModelInfo, WorkerShape

AIC_ENUMERATOR = "aiconfigurator.sdk.utils.enumerate_parallel_config"


@dataclass(frozen=True)
class LegalityRule:
    """A rule a shape must satisfy, with where it comes from; `backends` empty = every backend."""

    name: str
    statement: str
    source: str
    backends: tuple[str, ...]
    holds: Callable[["WorkerShape", "ModelInfo"], bool]

    def applies_to(self, backend: str) -> bool:
        return not self.backends or backend in self.backends


@dataclass(frozen=True)
class Backend:
    """Everything Spica knows about one engine."""

    name: str
    """The config's name (`search_space.backend`, conf/backend/) and ai-dynamo's extra for it."""
    label: str
    """How people write it (tables, version notes)."""
    aic_name: str
    """AI Configurator's backend: memory model and perf database."""
    ais_name: str
    """AIS's backend (timing) and Replay's mocker engine `backend`."""
    memory_fraction_kind: str
    """vLLM / SGLang apply the memory fraction to total GPU memory, TRT-LLM to the free memory
    left after weights: AIC's estimator insists on the matching kind."""
    rules: tuple[LegalityRule, ...]
    """Shape rules of this backend only (`backends` is filled in by `legality_rules`)."""
    engine_package: str
    """The package ai-dynamo's extra pins: the engine version the runtime image runs."""
    runtime_image: str
    """The `<registry>/<image>:<tag>` name of Dynamo's runtime image for it."""
    engine_args: Callable[[Pool, Worker], list[str]]
    """The worker's command line in a manifest (the model flags are Dynamo's modifiers')."""
    kv_cache_dtypes: Mapping[str, str]
    """AI Configurator's KV-cache quant mode → the value of the engine's KV dtype setting; a mode
    absent here cannot be deployed on this engine and is dropped from its choices."""
    replay_engine: Callable[[int], dict[str, Any]] = lambda max_num_batched_tokens: {}
    """Extra mocker engine args for one role, given its batched-token budget."""
    disagg_tokens_per_block: bool = False
    """A disagg worker's max_num_batched_tokens must be a multiple of its block size."""
    context_flag_after_modifier: str | None = None
    """The context flag Dynamo's config modifier drops and the manifest sets again."""
    nixl_engine_id: bool = False
    """A disagg worker spanning nodes needs one explicit NIXL engine id per role."""
    kvbm_offload: bool = True
    """Host offload is KVBM (its block-count env var); False: the engine's own flags do it."""


def vllm_args(pool: Pool, worker: Worker) -> list[str]:
    transfer = vllm_kv_transfer(pool, worker)
    events = {"publisher": "zmq", "topic": "kv-events", "endpoint": "tcp://*:20080", "enable_kv_cache_events": True}
    return cli_words([
        ("--tensor-parallel-size", pool.tp), ("--pipeline-parallel-size", pool.pp),
        ("--data-parallel-size", pool.attention_dp), ("--enable-expert-parallel", pool.moe_ep > 1),
        ("--max-model-len", worker.context_length),
        ("--max-num-seqs", pool.max_num_seqs), ("--max-num-batched-tokens", pool.max_num_batched_tokens),
        ("--block-size", pool.block_size), ("--gpu-memory-utilization", pool.gpu_memory_utilization),
        ("--kv-cache-dtype", worker.kv_cache_dtype),
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
    return cli_words([
        ("--tp", pool.tp * dp), ("--pipeline-parallel-size", pool.pp),
        ("--dp", dp if dp > 1 else None), ("--enable-dp-attention", dp > 1), ("--ep", pool.moe_ep if pool.moe_ep > 1 else None),
        ("--context-length", worker.context_length),
        ("--max-running-requests", pool.max_num_seqs * dp),
        ("--chunked-prefill-size", pool.max_num_batched_tokens * dp), ("--max-prefill-tokens", pool.max_num_batched_tokens),
        ("--page-size", pool.block_size), ("--mem-fraction-static", pool.gpu_memory_utilization),
        ("--kv-cache-dtype", worker.kv_cache_dtype),
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
    if worker.kv_cache_dtype:
        kv_cache["dtype"] = worker.kv_cache_dtype
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
    return cli_words([
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


def _sglang_chunking(max_num_batched_tokens: int) -> dict[str, Any]:
    """SGLang's mocker ignores max_num_batched_tokens and chunks by its own two budgets."""
    return {"sglang": {"chunked_prefill_size": max_num_batched_tokens, "max_prefill_tokens": max_num_batched_tokens}}


BACKENDS: Mapping[str, Backend] = {
    backend.name: backend
    for backend in (
        Backend(
            name="vllm",
            label="vLLM",
            aic_name="vllm",
            ais_name="vllm",
            memory_fraction_kind="of_total",
            rules=(
                LegalityRule(
                    "vllm_no_moe_tp_with_moe_ep",
                    "vllm forbids moe_tp > 1 together with moe_ep > 1",
                    f"{AIC_ENUMERATOR}: vllm branch skips `moe_tp > 1 and moe_ep > 1`",
                    (),
                    lambda s, m: not (s.moe_tp > 1 and s.moe_ep > 1),
                ),
            ),
            engine_package="vllm",
            runtime_image="vllm-runtime",
            engine_args=vllm_args,
            kv_cache_dtypes={"bfloat16": "bfloat16", "fp8": "fp8"},  # vLLM's CacheDType
            context_flag_after_modifier="--max-model-len",
            nixl_engine_id=True,
        ),
        Backend(
            name="sglang",
            label="SGLang",
            aic_name="sglang",
            ais_name="sglang",
            memory_fraction_kind="of_total",
            rules=(),
            engine_package="sglang",
            runtime_image="sglang-runtime",
            engine_args=sglang_args,
            kv_cache_dtypes={"bfloat16": "bfloat16", "fp8": "fp8_e4m3"},  # SGLang's --kv-cache-dtype choices
            replay_engine=_sglang_chunking,
            kvbm_offload=False,  # SGLang offloads with its own HiCache flags
        ),
        Backend(
            name="trtllm",
            label="TensorRT-LLM",
            aic_name="trtllm",
            ais_name="trtllm",
            memory_fraction_kind="of_free",
            rules=(
                LegalityRule(
                    "trtllm_no_tp_with_attention_dp",
                    "trtllm forbids tp > 1 together with attention_dp > 1",
                    f"{AIC_ENUMERATOR}: trtllm branch skips `dp > 1 and tp > 1`",
                    (),
                    lambda s, m: not (s.tp > 1 and s.attention_dp > 1),
                ),
            ),
            engine_package="tensorrt-llm",
            runtime_image="tensorrtllm-runtime",
            engine_args=trtllm_args,
            # KvCacheConfig.dtype: "auto" follows the checkpoint (bf16 for a bf16 model), as AI
            # Configurator's generator writes it
            kv_cache_dtypes={"bfloat16": "auto", "fp8": "fp8"},
            disagg_tokens_per_block=True,
        ),
    )
}
NAMES: tuple[str, ...] = tuple(BACKENDS)


def backend(name: str) -> Backend:
    """The record of `name`; a one-line error naming the known backends otherwise."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"backend: {name!r} is not one of {', '.join(NAMES)}") from None


def legality_rules() -> tuple[LegalityRule, ...]:
    """Every backend's own rules, each tagged with the backend it belongs to."""
    return tuple(replace(rule, backends=(entry.name,)) for entry in BACKENDS.values() for rule in entry.rules)
