"""Each engine's worker command line in a manifest, one builder per backend (its registry entry in
spica/backends.py names it).

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

from typing import Any

from spica.core.unrolled import Pool
from spica.deploy.flags import SGLANG_BOOTSTRAP_PORT, Worker, cli_words, compact_json, vllm_kv_transfer


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
