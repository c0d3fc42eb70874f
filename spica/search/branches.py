"""From a validated config to the branch pools of spica.space (SPEC §3 step 4)."""

from __future__ import annotations

from spica.config import ConfigError, SmartSearchConfig
from spica.space.branches import Branch, SpaceRequest, enumerate_branches, format_pool_table


def space_request(config: SmartSearchConfig) -> SpaceRequest:
    space = config.search_space
    return SpaceRequest(
        model_name=space.model_name,
        hardware_sku=space.hardware_sku,
        backends=tuple(space.backend),
        modes=tuple(space.deployment_mode),
        gpu_budget=space.gpu_budget,
        min_gpu_budget=space.min_gpu_budget,
        context_length=space.context_length,
        block_size={role: getattr(space, f"{role}_block_size") for role in ("agg", "prefill", "decode")},
        gpu_memory_utilization={role: getattr(space, f"{role}_gpu_memory_utilization") for role in ("agg", "prefill", "decode")},
        pinned_parallel_configs=tuple(space.parallel_configs),
        needs_kv_capacity=config.workload.kind == "kv_load_ratio",
    )


def branches_for(config: SmartSearchConfig) -> list[Branch]:
    """Enumerate; a model or system AI Configurator does not know is a config error."""
    try:
        return list(enumerate_branches(space_request(config)))
    except LookupError as exc:
        raise ConfigError([str(exc)]) from None


def format_branches(branches: list[Branch]) -> str:
    return format_pool_table(branches)
