"""Branches of the search: one per deployment mode, each a pool of KV-feasible parallel configs.

A config is a worker shape and replica count per role (agg, or prefill + decode) within the
GPU budget, tagged with the backends on which it is legal and with each backend's KV capacity
per role. The pool is the union over backends; the study picks a backend, and projection only
returns configs tagged with it. How a request becomes branches: spica/space/enumeration.py.
"""

from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, TypeVar

from spica.backends import NAMES as BACKEND_NAMES
from spica.core.errors import UserError
from spica.core.unrolled import ROLES
from spica.space import capacity
from spica.space.shapes import ModelInfo, WorkerShape

T = TypeVar("T")


@contextlib.contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause the cyclic GC while building ~10^5 acyclic configs.

    With AI Configurator loaded (~5·10^5 tracked objects) every full collection triggered by
    the allocations rescans them all: pausing halves the enumeration time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass(frozen=True)
class SpaceRequest:
    """Plain inputs of the enumeration (decoupled from the pydantic config).

    `*_max_num_batched_tokens` sizes the activation memory AIC reserves before KV; pass the
    largest value the search may pick for that role so the capacity is never overstated.
    """

    model_name: str
    hardware_sku: str
    prefill_hardware_sku: str | None = None  # disagg roles on their own systems (None: hardware_sku)
    decode_hardware_sku: str | None = None
    backends: tuple[str, ...] = ("vllm",)
    modes: tuple[str, ...] = ("agg", "disagg")
    gpu_budget: int = 32
    min_gpu_budget: int = 1
    context_length: int | None = None
    agg_block_size: int = 64
    prefill_block_size: int = 64
    decode_block_size: int = 64
    agg_gpu_memory_utilization: float = 0.9
    prefill_gpu_memory_utilization: float = 0.9
    decode_gpu_memory_utilization: float = 0.9
    agg_max_num_batched_tokens: int = 32768
    prefill_max_num_batched_tokens: int = 32768
    decode_max_num_batched_tokens: int = 8192
    pinned_parallel_configs: tuple[Mapping[str, Any], ...] = ()
    needs_kv_capacity: bool = False
    backend_versions: Mapping[str, str] = field(default_factory=dict)  # pinned perf-data versions; others: the default
    quant_modes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # quant field -> choices; unset: the checkpoint's
    gpu_budget_per_sku: Mapping[str, int] = field(default_factory=dict)  # system -> GPUs at most; unset: gpu_budget

    def __post_init__(self) -> None:
        _check_choices("backend", self.backends, BACKEND_NAMES)
        _check_choices("deployment_mode", self.modes, tuple(ROLES))
        if not 0 < self.min_gpu_budget <= self.gpu_budget:
            raise UserError(
                f"gpu budget: need 0 < min_gpu_budget <= gpu_budget, got {self.min_gpu_budget} and {self.gpu_budget}"
            )
        if self.context_length is not None and self.context_length < 1:
            raise UserError(f"context_length: must be a positive integer, got {self.context_length}")
        for role in ("agg", "prefill", "decode"):
            if getattr(self, f"{role}_block_size") < 1:
                raise UserError(f"{role}_block_size: must be a positive integer")
            if getattr(self, f"{role}_max_num_batched_tokens") < 1:
                raise UserError(f"{role}_max_num_batched_tokens: must be a positive integer")
            if not 0 < getattr(self, f"{role}_gpu_memory_utilization") <= 1:
                raise UserError(f"{role}_gpu_memory_utilization: must be in (0, 1]")
        if self.pinned_parallel_configs and len(self.modes) != 1:
            raise UserError(
                f"parallel_configs: pinning needs exactly one deployment_mode, got {list(self.modes)}"
            )

    def block_size(self, role: str) -> int:
        return int(getattr(self, f"{role}_block_size"))

    def sku(self, role: str) -> str:
        """The system `role` runs on: its own for a disagg role that has one, else hardware_sku."""
        return (getattr(self, f"{role}_hardware_sku") if role != "agg" else None) or self.hardware_sku

    @property
    def skus(self) -> tuple[str, ...]:
        """Every system the requested modes run on, each once."""
        return tuple(dict.fromkeys(self.sku(role) for mode in self.modes for role in ROLES[mode]))

    def sku_budget(self, sku: str) -> int:
        return min(self.gpu_budget, self.gpu_budget_per_sku.get(sku, self.gpu_budget))

    def within_sku_budgets(self, roles: tuple[str, ...], gpus: tuple[int, ...]) -> bool:
        """Whether the GPUs each role's pools use (`gpus`, per role) fit every per-system budget."""
        used: dict[str, int] = {}
        for role, count in zip(roles, gpus):
            used[self.sku(role)] = used.get(self.sku(role), 0) + count
        return all(count <= self.sku_budget(sku) for sku, count in used.items())

    def memory_settings(self, role: str, quant: tuple[tuple[str, str], ...] = ()) -> capacity.MemorySettings:
        return capacity.MemorySettings(
            gpu_memory_utilization=float(getattr(self, f"{role}_gpu_memory_utilization")),
            max_num_batched_tokens=int(getattr(self, f"{role}_max_num_batched_tokens")),
            quant=quant,
        )


def _check_choices(name: str, values: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    if not values:
        raise UserError(f"{name}: needs at least one value (allowed: {', '.join(allowed)})")
    for value in values:
        if value not in allowed:
            raise UserError(f"{name}: unknown value {value!r} (allowed: {', '.join(allowed)})")
    if len(set(values)) != len(values):
        raise UserError(f"{name}: duplicate values in {list(values)}")


@dataclass(frozen=True)
class ShapeAssessment:
    """One shape as one backend sees it for one role: its KV capacity and, if excluded, why."""

    backend: str
    role: str
    shape: WorkerShape
    rank_kv_tokens: int | None  # None: not asked (illegal shape) or no memory model
    kv_tokens: int | None  # the engine's pool: rank_kv_tokens × attention_dp
    num_gpu_blocks: int | None  # whole blocks per rank × attention_dp, what Replay gets
    exclusions: tuple[str, ...] = ()  # "code: detail"; code = a rule name, over_budget,
    # no_kv_room or kv_below_context

    @property
    def viable(self) -> bool:
        return not self.exclusions

    @property
    def excluded_by(self) -> str:
        return "; ".join(self.exclusions)

    @property
    def exclusion_codes(self) -> tuple[str, ...]:
        return tuple(part.split(":", 1)[0] for part in self.exclusions)


@dataclass(frozen=True, slots=True, order=True)
class RolePool:
    role: str
    shape: WorkerShape
    replicas: int

    @property
    def gpus(self) -> int:
        return self.shape.gpus * self.replicas


@dataclass(frozen=True, slots=True)
class RoleCapacity:
    """One worker's KV pool: per-rank tokens floored to whole blocks, × attention_dp ranks."""

    kv_tokens: int
    num_gpu_blocks: int

    @classmethod
    def of(cls, rank_tokens: int, block_size: int, attention_dp: int) -> "RoleCapacity":
        blocks = rank_tokens // block_size * attention_dp
        return cls(blocks * block_size, blocks)


def worker_capacity(
    model_name: str, system: str, backend: str, backend_version: str, shape: WorkerShape,
    settings: capacity.MemorySettings, block_size: int,
) -> RoleCapacity:
    """A worker's KV pool at one role's own engine settings (the memory model, cached on disk)."""
    rank = capacity.rank_capacities(model_name, system, backend, backend_version, settings, [shape])[shape]
    return RoleCapacity.of(rank.tokens, block_size, shape.attention_dp)


@dataclass(frozen=True, slots=True)
class BackendFit:
    """A backend on which a config is legal, with KV capacity per pool (None: no memory model)."""

    backend: str
    backend_version: str
    capacities: tuple[RoleCapacity | None, ...]


@dataclass(frozen=True, slots=True)
class ParallelConfig:
    """A candidate deployment layout: a pool (shape × replicas) per role within the budget."""

    mode: str
    pools: tuple[RolePool, ...]
    fits: tuple[BackendFit, ...]
    gpu_budget: int

    @property
    def used_gpus(self) -> int:
        return sum(pool.gpus for pool in self.pools)

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(fit.backend for fit in self.fits)

    def supports(self, backend: str) -> bool:
        return any(fit.backend == backend for fit in self.fits)

    def pool(self, role: str) -> RolePool:
        return next(pool for pool in self.pools if pool.role == role)

    def fit(self, backend: str) -> BackendFit:
        for candidate in self.fits:
            if candidate.backend == backend:
                return candidate
        raise ValueError(f"backend {backend!r} is not legal for {self.to_dict()} (legal: {list(self.backends)})")

    def backend_version(self, backend: str) -> str:
        return self.fit(backend).backend_version

    def role_capacity(self, backend: str, role: str) -> RoleCapacity | None:
        fit = self.fit(backend)
        return next(cap for pool, cap in zip(self.pools, fit.capacities) if pool.role == role)

    def kv_tokens(self, backend: str, role: str) -> int | None:
        cap = self.role_capacity(backend, role)
        return None if cap is None else cap.kv_tokens

    def num_gpu_blocks(self, backend: str, role: str) -> int | None:
        cap = self.role_capacity(backend, role)
        return None if cap is None else cap.num_gpu_blocks

    def to_dict(self) -> dict[str, Any]:
        """The published parallel_configs form (every key explicit)."""
        if self.mode == "agg":
            return _pool_dict(self.pools[0])
        return {pool.role: _pool_dict(pool) for pool in self.pools}

    def unrolled(self, backend: str) -> dict[str, Any]:
        """Flat shape fields for one backend (docs/unrolled-candidate.md); KV fields absent when unknown."""
        fit = self.fit(backend)
        out: dict[str, Any] = {
            "deployment_mode": self.mode,
            "backend": backend,
            "backend_version": fit.backend_version,
            "used_gpus": self.used_gpus,
        }
        for pool, cap in zip(self.pools, fit.capacities):
            prefix = "" if self.mode == "agg" else f"{pool.role}_"
            out.update({f"{prefix}{key}": value for key, value in pool.shape.to_dict().items()})
            out[f"{prefix}strategy"] = pool.shape.strategy
            out[f"{prefix}replicas"] = pool.replicas
            if cap is not None:
                out[f"{pool.role}_kv_capacity_tokens"] = cap.kv_tokens
                out[f"{pool.role}_num_gpu_blocks"] = cap.num_gpu_blocks
        return out


def _pool_dict(pool: RolePool) -> dict[str, int]:
    return {**pool.shape.to_dict(), "replicas": pool.replicas}


@dataclass(frozen=True)
class Branch:
    """One deployment mode's pool, the backends that serve it, and why others were dropped."""

    mode: str
    model: ModelInfo
    hardware_sku: str
    role_skus: Mapping[str, str]
    """The system each role's pools run on (prefill and decode may differ)."""
    context_length: int
    gpu_budget: int
    min_gpu_budget: int
    gpu_budget_per_sku: Mapping[str, int]
    backends: tuple[str, ...]
    configs: tuple[ParallelConfig, ...]
    assessments: tuple[ShapeAssessment, ...]
    dropped: tuple[tuple[str, str], ...]
    pinned: bool
    kv_known: bool
    quant_choices: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    """Per backend, the quant choices its perf data holds (a field left unset is absent)."""
    searched_systems: bool = False
    """Whether the search has a branch per system (hardware_sku a list): the branch's name says its own."""
    _memo: dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def systems(self) -> str:
        """The branch's system, or its prefill/decode pair when they differ."""
        return "+".join(dict.fromkeys(self.role_skus.values()))

    @property
    def name(self) -> str:
        """The branch in study ids, the ledger and tables: its mode, with its system when the search has several."""
        return f"{self.mode}@{self.systems}" if self.searched_systems else self.mode

    def memoised(self, key: Any, compute: Callable[[], T]) -> T:
        """Derived data computed once per branch (a pool can hold ~10^5 configs)."""
        if key not in self._memo:
            with bulk_allocation():
                self._memo[key] = compute()
        return self._memo[key]

    def configs_for(self, backend: str) -> tuple[ParallelConfig, ...]:
        """The configs legal on `backend`, in branch order (fewest GPUs first)."""
        return self.memoised(
            ("configs_for", backend), lambda: tuple(c for c in self.configs if c.supports(backend))
        )

    def backend_version(self, backend: str) -> str:
        return next(c.backend_version(backend) for c in self.configs_for(backend))

    def quant_knobs(self) -> dict[str, tuple[str, ...]]:
        """Each set quant field with the choices some backend of this branch can score."""
        knobs: dict[str, dict[str, None]] = {}
        for backend in self.backends:
            for name, modes in self.quant_choices.get(backend, {}).items():
                knobs.setdefault(name, {}).update(dict.fromkeys(modes))
        return {name: tuple(modes) for name, modes in knobs.items()}
