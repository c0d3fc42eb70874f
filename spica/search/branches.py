"""From a validated config to the branch pools of spica.space (docs/search.md step 4)."""

from __future__ import annotations

from spica.config import ConfigError, SmartSearchConfig
from spica.errors import UserError
from spica.space.branches import Branch, SpaceRequest, enumerate_branches
from spica.space.table import format_pool_table

ROLES = ("agg", "prefill", "decode")


def space_request(config: SmartSearchConfig) -> SpaceRequest:
    space = config.search_space
    return SpaceRequest(
        model_name=space.model_name,
        hardware_sku=space.hardware_sku,
        prefill_hardware_sku=space.prefill_hardware_sku,
        decode_hardware_sku=space.decode_hardware_sku,
        gpu_budget_per_sku=dict(space.gpu_budget_per_sku or {}),
        backends=tuple(space.backend),
        modes=tuple(space.deployment_mode),
        gpu_budget=space.gpu_budget,
        min_gpu_budget=space.effective_min_gpu_budget,
        context_length=space.context_length,
        **{f"{role}_block_size": getattr(space, f"{role}_block_size") for role in ROLES},
        **{f"{role}_gpu_memory_utilization": getattr(space, f"{role}_gpu_memory_utilization") for role in ROLES},
        # the memory model reserves activations for the largest batch the engine may run
        **{f"{role}_max_num_batched_tokens": max(getattr(space, f"{role}_max_num_batched_tokens")) for role in ROLES},
        pinned_parallel_configs=tuple(space.parallel_configs),
        needs_kv_capacity=config.workload.kind == "kv_load_ratio",
        backend_versions=space.backend_versions(),
        quant_modes=space.quant_modes(),
    )


def branches_for(config: SmartSearchConfig) -> list[Branch]:
    """Enumerate; a model or system AI Configurator does not know is a config error."""
    try:
        return list(enumerate_branches(space_request(config)))
    except UserError as exc:
        raise ConfigError(exc.lines) from None


def format_branches(branches: list[Branch]) -> str:
    return format_pool_table(branches)
