"""From a validated config to the branch pools of spica.space (docs/search.md step 4), and the
part of each pool a study searches.

A search is scale-free when k× every pool's replicas at k× the load scores exactly like the
deployment itself: the load is a KV-load ratio (concurrency and request count follow the
deployment's own capacity), requests are dealt round robin, no Planner resizes the pools, and
no objective or bound grows with the deployment's size (total throughput, GPUs, a goodput floor).
There, replicas only spend the study's trials and make its replays longer: the study searches
the fewest-GPU config of each replica ratio (1 agg replica, a reduced prefill:decode pair), and
the results table says that they scale. Measured: docs/search.md, "Why a scale-free search
searches one config per replica ratio".
"""

from __future__ import annotations

import dataclasses
import logging
import math

from spica.config import ConfigError, SmartSearchConfig
from spica.config.search_space import ROLE_HARDWARE_FIELDS
from spica.core.errors import UserError
from spica.core.goals import GOALS
from spica.core.unrolled import EVERY_ROLE
from spica.plan import scale_free
from spica.space import capacity
from spica.space.branches import Branch, ParallelConfig, SpaceRequest
from spica.space.enumeration import NoPerfData, NoViableParallelConfig, enumerate_branches
from spica.space.table import format_pool_table
from spica.workloads.summary import warn_if_longer_than

logger = logging.getLogger("spica.space")


def space_requests(config: SmartSearchConfig) -> list[SpaceRequest]:
    """One enumeration per system assignment (search_space.system_assignments): one for a pinned system."""
    return [space_request(config, *systems) for systems in config.search_space.system_assignments()]


def space_request(config: SmartSearchConfig, hardware_sku: str, prefill_hardware_sku: str | None, decode_hardware_sku: str | None) -> SpaceRequest:
    space = config.search_space
    return SpaceRequest(
        model_name=space.model_name,
        hardware_sku=hardware_sku,
        prefill_hardware_sku=prefill_hardware_sku,
        decode_hardware_sku=decode_hardware_sku,
        gpu_budget_per_sku=dict(space.gpu_budget_per_sku or {}),
        backends=tuple(space.backend),
        modes=tuple(space.deployment_mode),
        gpu_budget=space.gpu_budget,
        min_gpu_budget=space.effective_min_gpu_budget,
        context_length=space.context_length,
        **{f"{role}_block_size": getattr(space, f"{role}_block_size") for role in EVERY_ROLE},
        **{f"{role}_gpu_memory_utilization": getattr(space, f"{role}_gpu_memory_utilization") for role in EVERY_ROLE},
        # the memory model reserves activations for the largest batch the engine may run
        **{f"{role}_max_num_batched_tokens": max(getattr(space, f"{role}_max_num_batched_tokens")) for role in EVERY_ROLE},
        pinned_parallel_configs=tuple(space.parallel_configs),
        needs_kv_capacity=config.workload.kind == "kv_load_ratio",
        backend_versions=space.backend_versions(),
        quant_modes=space.quant_modes(),
    )


def branches_for(config: SmartSearchConfig) -> list[Branch]:
    """Enumerate; a model or system AI Configurator does not know is a config error. Where the
    search lists several systems, each gets its own branches, and a system with no perf data for
    the backends, or no viable config, is dropped with a warning (an error when none is left). A
    trace with requests longer than the model's maximum context (context_length null) is said
    here, where that maximum is known (a set context_length is checked with the config)."""
    requests = space_requests(config)
    branches: list[Branch] = []
    try:
        if len(requests) > 1:
            _check_known_systems(config)
        _check_power_figures(config)
        for request in requests:
            try:
                found = enumerate_branches(request)
            except (NoPerfData, NoViableParallelConfig) as exc:
                if len(requests) == 1:
                    raise
                logger.warning("%s dropped from the search: %s", "/".join(request.skus), exc)
                continue
            branches += [dataclasses.replace(branch, searched_systems=len(requests) > 1) for branch in found]
    except UserError as exc:
        raise ConfigError(exc.lines) from None
    if not branches:
        raise ConfigError([f"search_space.hardware_sku: none of {', '.join(config.search_space.hardware_skus)} has a viable "
                           "deployment (each one's reason is warned above)"])
    workload = config.workload
    if workload.is_trace_based and config.search_space.context_length is None:
        warn_if_longer_than(workload.trace_path, branches[0].context_length, "the model's maximum context", workload.trace_format)
    return branches


def _check_known_systems(config: SmartSearchConfig) -> None:
    """A listed system AI Configurator does not know is a typo, not a system to drop."""
    known = capacity.known_systems()
    space = config.search_space
    for name in ("hardware_sku", *ROLE_HARDWARE_FIELDS):
        listed = getattr(space, name)
        for index, sku in enumerate(listed if isinstance(listed, list) else [listed] if listed else []):
            if sku not in known:
                where = f"{name}[{index}]" if isinstance(listed, list) else name
                raise UserError(f"search_space.{where}: {sku!r} is not a system AI Configurator knows; known: {', '.join(known)}")


def _check_power_figures(config: SmartSearchConfig) -> None:
    """An energy goal needs every system's GPU power from AI Configurator's system spec."""
    powered = [name for name in config.goal.objectives if GOALS[name].powered]
    for sku in config.search_space.hardware_skus if powered else ():
        if capacity.gpu_power_w(sku) is None:
            raise UserError(f"goal: {powered[0]} needs each GPU's power; AI Configurator's system spec for {sku} states none")


def format_branches(branches: list[Branch]) -> str:
    return format_pool_table(branches)


def searched_branch(config: SmartSearchConfig, branch: Branch) -> Branch:
    """The branch a study searches: in a scale-free search, one config per replica ratio (the
    fewest GPUs, first in branch order); a pinned menu is searched as the user listed it."""
    if branch.pinned or not scale_free(config):
        return branch
    kept: dict[tuple, ParallelConfig] = {}
    for parallel in branch.configs:
        kept.setdefault(_replica_ratio(parallel), parallel)
    return dataclasses.replace(branch, configs=tuple(kept.values()))


def _replica_ratio(parallel: ParallelConfig) -> tuple:
    """The config's backends, shapes and replica counts divided by their greatest common divisor."""
    common = math.gcd(*(pool.replicas for pool in parallel.pools))
    return parallel.backends, tuple((pool.role, pool.shape, pool.replicas // common) for pool in parallel.pools)
