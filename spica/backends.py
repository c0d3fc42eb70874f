"""The backend registry: one record per serving engine, holding every fact Spica uses about it.

The schema's choice set, the shape legality rules, AI Configurator's memory model (backend name,
memory-fraction kind), AIS timing and Replay's mocker (their backend name), the runtime image,
the engine version the image runs, and the worker flags of a manifest all read `BACKENDS`.
Adding a backend is one `Backend` entry here with its flag builder in spica/deploy/engines.py
(named by import path, so this registry imports nothing of the layers that read it), plus its
`conf/backend/` file.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

AIC_ENUMERATOR = "aiconfigurator.sdk.utils.enumerate_parallel_config"


@dataclass(frozen=True)
class LegalityRule:
    """A rule a shape must satisfy, with where it comes from; `backends` empty = every backend."""

    name: str
    statement: str
    source: str
    backends: tuple[str, ...]
    holds: Callable[[Any, Any], bool]
    """(spica.space.shapes.WorkerShape, ModelInfo) → whether the shape is legal."""

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
    engine_args: str
    """Import path of (Pool, Worker) → the worker's command line in a manifest (the model flags
    are Dynamo's modifiers'); spica/deploy/engines.py."""
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
                LegalityRule(
                    "vllm_no_wide_ep",
                    "vllm workers span at most 16 GPUs",
                    "aiconfigurator.sdk.task_v2.build_disagg_parallel_lists: its vllm lists stop at 16 GPUs a worker",
                    (),
                    lambda s, m: s.gpus <= 16,
                ),
            ),
            engine_package="vllm",
            runtime_image="vllm-runtime",
            engine_args="spica.deploy.engines:vllm_args",
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
            engine_args="spica.deploy.engines:sglang_args",
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
            engine_args="spica.deploy.engines:trtllm_args",
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
