"""A SpaceRequest enumerated into branches: per backend, the legal shapes, their KV capacity and
timeability, and every replica count within the GPU budget (or the pinned configs), merged.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, Iterator, Mapping

from packaging.version import Version

from spica.backends import backend as backend_record
from spica.core.errors import UserError
from spica.core.quant import QUANT_FIELDS
from spica.core.unrolled import ROLES
from spica.space import capacity, timeable
from spica.space.branches import (
    BackendFit,
    Branch,
    ParallelConfig,
    RoleCapacity,
    RolePool,
    ShapeAssessment,
    SpaceRequest,
    bulk_allocation,
)
from spica.space.shapes import (
    GPUS_PER_WORKER,
    ModelInfo,
    WorkerShape,
    broken_rules,
    enumerate_shapes,
    load_model_info,
    parse_shape,
)

logger = logging.getLogger("spica.space")


class NoViableParallelConfig(UserError):
    """No deployment mode has a backend with a KV-feasible config within the GPU budget."""


class NoPerfData(UserError):
    """A system AI Configurator holds no perf data for, on any of the requested backends."""


class InvalidPinnedParallelConfig(UserError):
    """A pinned parallel config is legal for none of the requested backends."""


def enumerate_branches(request: SpaceRequest) -> tuple[Branch, ...]:
    """All viable branches for `request`; warns per dropped backend / skipped mode.

    Raises KvCapacityUnavailable (kv_load_ratio without a memory model) before any work,
    InvalidPinnedParallelConfig for a pin legal on no backend, NoViableParallelConfig when
    no mode survives.
    """
    if request.needs_kv_capacity:
        capacity.require_memory_model()
    for name, sku in _sku_fields(request):
        if all(capacity.perf_data_version(sku, backend) is None for backend in request.backends):
            known = capacity.known_systems()
            raise NoPerfData(
                f"search_space.{name}: {sku!r} has no AI Configurator {capacity.aic_version()} perf data "
                f"for {', '.join(request.backends)}; systems it knows: {', '.join(known)}"
            )
    versions = {
        backend: scored_version_on(request.skus, backend, request.backend_versions.get(backend)) for backend in request.backends
    }
    model = load_model_info(request.model_name)
    pins = [_parse_pin(entry, index, request.modes[0]) for index, entry in enumerate(request.pinned_parallel_configs)]
    enumerator = _Enumerator(request, model, capacity.memory_model_available(), versions)
    branches: list[Branch] = []
    skipped: list[str] = []
    for mode in request.modes:
        with bulk_allocation():
            branch = enumerator.branch(mode, pins)
        if branch.configs:
            branches.append(branch)
            continue
        reasons = "; ".join(f"{backend}: {reason}" for backend, reason in branch.dropped)
        logger.warning("mode %s skipped: no backend has a viable parallel config (%s)", mode, reasons)
        skipped.append(f"{mode}: {reasons}")
    if not branches:
        raise NoViableParallelConfig(
            f"no viable parallel config for {model.name} on {_systems(request)} within gpu budget "
            f"[{request.min_gpu_budget}, {request.gpu_budget}] at context_length {enumerator.context}: "
            + " | ".join(skipped)
        )
    return tuple(branches)


def _sku_fields(request: SpaceRequest) -> list[tuple[str, str]]:
    """(field, system) of every system the request names: hardware_sku and the per-role ones set."""
    roles = [(f"{role}_hardware_sku", getattr(request, f"{role}_hardware_sku")) for role in ROLES["disagg"]]
    return [("hardware_sku", request.hardware_sku), *((name, sku) for name, sku in roles if sku is not None)]


def _systems(request: SpaceRequest) -> str:
    """The systems in words: 'h200_sxm', or per role: 'prefill h100_sxm, decode h200_sxm'."""
    if len(request.skus) == 1:
        return request.skus[0]
    return ", ".join(f"{role} {request.sku(role)}" for mode in request.modes for role in ROLES[mode])


def _sizes_memory(name: str) -> bool:
    return next(field.sizes_memory for field in QUANT_FIELDS if field.name == name)


def scored_version(system: str, backend: str, pinned: str | None) -> str | None:
    """The perf-data version `backend` is scored at: the pinned one, which must be installed for
    both KV capacity and timing, else the default (None: no perf data, the backend is dropped)."""
    if pinned is None:
        return capacity.perf_data_version(system, backend)
    allowed = capacity.perf_data_versions(system, backend)
    if pinned not in allowed:
        raise UserError(
            f"search_space.backend_version: {pinned!r} is not a {backend} perf-data version on {system} that both "
            f"AI Configurator and AIS hold; allowed: {', '.join(allowed) or 'none'}"
        )
    return pinned


def scored_version_on(systems: tuple[str, ...], backend: str, pinned: str | None) -> str | None:
    """The one perf-data version `backend` is scored at on every system of a candidate (one engine
    version is deployed): the pinned one, held on each; else the default when the systems share it,
    else the latest all of them can score (None: none, the backend is dropped)."""
    found = [scored_version(system, backend, pinned) for system in systems]
    if None in found or len(set(found)) == 1:
        return None if None in found else found[0]
    common = set.intersection(*(set(capacity.perf_data_versions(system, backend)) for system in systems))
    return max(common, key=Version) if common else None


def _parse_pin(entry: Mapping[str, Any], index: int, mode: str) -> tuple[RolePool, ...]:
    where = f"parallel_configs[{index}]"
    if mode == "agg":
        shape = parse_shape(entry, where, extra_keys=("replicas",))
        return (RolePool("agg", shape, int(entry.get("replicas", 1))),)
    if set(entry) != {"prefill", "decode"}:
        raise UserError(f"{where}: a disagg pin needs exactly the keys prefill and decode, got {sorted(entry)}")
    pools = []
    for role in ROLES["disagg"]:
        role_entry = entry[role]
        if not isinstance(role_entry, Mapping):
            raise UserError(f"{where}.{role}: must be a mapping of {{tp, pp, attention_dp, moe_tp, moe_ep, replicas}}")
        shape = parse_shape(role_entry, f"{where}.{role}", extra_keys=("replicas",))
        pools.append(RolePool(role, shape, int(role_entry.get("replicas", 1))))
    return tuple(pools)


def _replica_counts(gpus: list[int], low: int, high: int) -> Iterator[tuple[int, ...]]:
    """Replica counts (>= 1 per role) for workers of `gpus` GPUs whose total lies in [low, high]."""
    first, rest = gpus[0], gpus[1:]
    if not rest:
        yield from ((count,) for count in range(max(1, -(-low // first)), high // first + 1))
        return
    for count in range(1, (high - sum(rest)) // first + 1):
        used = first * count
        for tail in _replica_counts(rest, low - used, high - used):
            yield (count, *tail)


class _PoolTable:
    """Interns RolePools as small ints so ~10^5 configs are keyed and sorted cheaply."""

    def __init__(self) -> None:
        self.pools: list[RolePool] = []
        self.sort_keys: list[tuple[str | int, ...]] = []
        self.gpus: list[int] = []
        self._ids: dict[RolePool, int] = {}

    def ids(self, role: str, shape: WorkerShape, max_replicas: int) -> list[int]:
        """Ids of (role, shape, r) for r = 0..max_replicas (index 0 unused)."""
        return [0] + [self.id(RolePool(role, shape, replicas)) for replicas in range(1, max_replicas + 1)]

    def canonical_ranks(self) -> list[int]:
        """Rank of each id in (role, shape, replicas) order: a tie-break independent of the
        order in which backends interned the pools."""
        ranks = [0] * len(self.pools)
        for rank, index in enumerate(sorted(range(len(self.pools)), key=self.sort_keys.__getitem__)):
            ranks[index] = rank
        return ranks

    def id(self, pool: RolePool) -> int:
        found = self._ids.get(pool)
        if found is None:
            found = self._ids[pool] = len(self.pools)
            self.pools.append(pool)
            self.sort_keys.append((pool.role, *pool.shape.to_dict().values(), pool.replicas))
            self.gpus.append(pool.gpus)
        return found


class _Enumerator:
    """Per-request state: model, context, and the per-(backend, role) shape assessments."""

    def __init__(self, request: SpaceRequest, model: ModelInfo, kv_known: bool, versions: Mapping[str, str | None]) -> None:
        self.request = request
        self.model = model
        self.kv_known = kv_known
        self.versions = versions
        self.context = request.context_length or model.max_context
        self._assessed: dict[tuple[str, str, tuple[WorkerShape, ...]], tuple[ShapeAssessment, ...]] = {}
        self._quant_kept: dict[str, dict[str, tuple[str, ...]]] = {}

    def branch(self, mode: str, pins: list[tuple[RolePool, ...]]) -> Branch:
        request = self.request
        roles = ROLES[mode]
        table = _PoolTable()
        merged: dict[tuple[int, ...], list[BackendFit]] = {}
        assessments: list[ShapeAssessment] = []
        dropped: list[tuple[str, str]] = []
        pin_reasons: list[dict[str, str]] = [{} for _ in pins]  # per pin: backend -> why not
        quant_choices: dict[str, dict[str, tuple[str, ...]]] = {}
        for backend in request.backends:
            version = self.versions[backend]
            quant = self._quant(backend, version) if version is not None else {}
            unscorable = next((name for name, modes in quant.items() if not modes), None)
            if version is None or unscorable:
                reason = (
                    f"no AI Configurator {capacity.aic_version()} perf data for {_systems(request)}" if version is None
                    else f"{unscorable}: none of {', '.join(request.quant_modes[unscorable])} has {backend} {version} perf data"
                )
                self._drop(dropped, backend, mode, reason)
                for reasons in pin_reasons:
                    reasons[backend] = reason
                continue
            quant_choices[backend] = quant
            if pins:
                shapes = {role: tuple(sorted({pin[i].shape for pin in pins})) for i, role in enumerate(roles)}
            else:
                shapes = {
                    role: enumerate_shapes(self.model, request.gpu_budget, capacity.nvlink_domain(request.sku(role)))
                    for role in roles
                }
            tables = {role: self._assess(backend, version, role, shapes[role]) for role in roles}
            for role_table in tables.values():
                assessments.extend(role_table)
            viable = {role: {a.shape: a for a in role_table if a.viable} for role, role_table in tables.items()}
            if pins:
                found = self._pinned(pins, viable, tables, backend, version, table, pin_reasons)
            else:
                found = self._enumerated(roles, viable, backend, version, table)
            count = 0
            for key, fit in found:
                merged.setdefault(key, []).append(fit)
                count += 1
            if count == 0 and pins:
                why = " | ".join(f"parallel_configs[{i}]: {r[backend]}" for i, r in enumerate(pin_reasons))
                self._drop(dropped, backend, mode, f"no pinned config is legal ({why})")
            elif count == 0:
                self._drop(dropped, backend, mode, self._why_empty(roles, tables, viable))
        if pins:
            self._reject_unusable_pins(pins, table, merged, pin_reasons)
        rank = table.canonical_ranks()
        keys = sorted(merged, key=lambda key: (sum(map(table.gpus.__getitem__, key)), *map(rank.__getitem__, key)))
        configs = tuple(
            ParallelConfig(mode, tuple(map(table.pools.__getitem__, key)), tuple(merged[key]), request.gpu_budget)
            for key in keys
        )
        served = {fit.backend for fits in merged.values() for fit in fits}
        return Branch(
            mode=mode,
            model=self.model,
            hardware_sku=request.hardware_sku,
            role_skus={role: request.sku(role) for role in roles},
            context_length=self.context,
            gpu_budget=request.gpu_budget,
            min_gpu_budget=request.min_gpu_budget,
            gpu_budget_per_sku=dict(request.gpu_budget_per_sku),
            backends=tuple(b for b in request.backends if b in served),
            configs=configs,
            assessments=tuple(assessments),
            dropped=tuple(dropped),
            pinned=bool(pins),
            kv_known=self.kv_known,
            quant_choices={backend: choices for backend, choices in quant_choices.items() if backend in served},
        )

    def _quant(self, backend: str, version: str) -> dict[str, tuple[str, ...]]:
        """The requested quant choices `backend` can score and deploy: its perf data holds them
        and (KV cache) the engine can be told; the others are dropped with a warning, once."""
        request = self.request
        if not request.quant_modes:
            return {}
        if backend not in self._quant_kept:
            # a mode every system of the search holds (each role is timed and sized on its own)
            tables = [capacity.supported_quant_modes(sku, backend, version) for sku in request.skus]
            held = {name: [m for m in tables[0][name] if all(m in table[name] for table in tables)] for name in tables[0]}
            deployable = backend_record(backend).kv_cache_dtypes
            kept = {}
            for name, modes in request.quant_modes.items():
                kept[name] = tuple(m for m in modes if m in held[name] and (name != "kvcache_quant_mode" or m in deployable))
                for lost in (m for m in modes if m not in kept[name]):
                    why = f"not in {backend} {version} perf data" if lost not in held[name] else "the engine has no KV dtype for it"
                    logger.warning("%s: %s dropped for %s on %s: %s", name, lost, backend, _systems(request), why)
            self._quant_kept[backend] = kept
        return dict(self._quant_kept[backend])

    def _memory_quants(self, backend: str, version: str) -> list[tuple[tuple[str, str], ...]]:
        """Every combination of the backend's quant choices that sizes memory ([()] when none is set)."""
        choices = [(name, modes) for name, modes in self._quant(backend, version).items() if _sizes_memory(name)]
        return [tuple(zip((name for name, _ in choices), combo)) for combo in itertools.product(*(modes for _, modes in choices))]

    @staticmethod
    def _drop(dropped: list[tuple[str, str]], backend: str, mode: str, reason: str) -> None:
        logger.warning("backend %s dropped from %s: %s", backend, mode, reason)
        dropped.append((backend, reason))

    def _assess(
        self, backend: str, version: str, role: str, shapes: tuple[WorkerShape, ...]
    ) -> tuple[ShapeAssessment, ...]:
        key = (backend, role, shapes)
        if key not in self._assessed:
            self._assessed[key] = tuple(self._assess_uncached(backend, version, role, shapes))
        return self._assessed[key]

    def _assess_uncached(
        self, backend: str, version: str, role: str, shapes: tuple[WorkerShape, ...]
    ) -> Iterator[ShapeAssessment]:
        request = self.request
        block_size = request.block_size(role)
        sku = request.sku(role)
        budget = request.sku_budget(sku)
        which = f"gpu_budget {budget}" if budget == request.gpu_budget else f"gpu_budget_per_sku {sku} {budget}"
        excluded: dict[WorkerShape, tuple[str, ...]] = {}
        domain = capacity.nvlink_domain(sku)
        for shape in shapes:
            broken = broken_rules(shape, self.model, backend)
            if broken:
                excluded[shape] = tuple(f"{rule.name}: {rule.statement}" for rule in broken)
            elif shape.gpus > max(GPUS_PER_WORKER) and shape.gpus > domain:
                excluded[shape] = (
                    f"beyond_nvlink_domain: a {shape.gpus}-GPU wide-EP worker needs one NVLink domain of as many GPUs; "
                    f"{sku} joins {domain}",
                )
            elif shape.gpus > budget:
                excluded[shape] = (f"over_budget: needs {shape.gpus} GPUs > {which}",)
        legal = [shape for shape in shapes if shape not in excluded]
        ranks: dict[WorkerShape, capacity.RankCapacity] = {}
        if self.kv_known:  # with quant choices, a shape holds what its most compact choice holds
            for quant in self._memory_quants(backend, version):
                found = capacity.rank_capacities(
                    self.model.name, request.sku(role), backend, version, request.memory_settings(role, quant), legal
                )
                ranks = {shape: max(ranks.get(shape, found[shape]), found[shape], key=lambda r: r.tokens) for shape in legal}
        holds = [shape for shape in legal if not self.kv_known or self._holds_context(ranks[shape], block_size)]
        untimed = self._untimeable(backend, version, role, holds)  # AIS is asked only about shapes kept so far
        for shape in shapes:
            if shape in excluded:
                yield ShapeAssessment(backend, role, shape, None, None, None, excluded[shape])
            elif not self.kv_known:
                yield ShapeAssessment(backend, role, shape, None, None, None, untimed.get(shape, ()))
            else:
                rank = ranks[shape]
                pool = RoleCapacity.of(rank.tokens, block_size, shape.attention_dp)
                exclusions: tuple[str, ...] = ()
                if rank.error:
                    exclusions = (f"no_kv_room: memory model says {rank.error}",)
                elif not self._holds_context(rank, block_size):
                    exclusions = (
                        f"kv_below_context: KV holds {rank.tokens} tokens per attention rank "
                        f"< context_length {self.context}",
                    )
                exclusions = exclusions or untimed.get(shape, ())
                yield ShapeAssessment(backend, role, shape, rank.tokens, pool.kv_tokens, pool.num_gpu_blocks, exclusions)

    def _holds_context(self, rank: capacity.RankCapacity, block_size: int) -> bool:
        return not rank.error and rank.tokens // block_size * block_size >= self.context

    def _untimeable(self, backend: str, version: str, role: str, shapes: list[WorkerShape]) -> dict[WorkerShape, tuple[str, ...]]:
        """The shapes AIS cannot time at any of the backend's quant choices (replaying them could
        only fail), each with AIS's reason: enumeration drops them (spica/space/timeable.py)."""
        choices = [(name, modes) for name, modes in self._quant(backend, version).items()]
        combos = [dict(zip((name for name, _ in choices), combo)) for combo in itertools.product(*(modes for _, modes in choices))]
        found: dict[WorkerShape, tuple[str, ...]] = {}
        for quant in combos:
            failing = timeable.untimeable(
                self.model.name, self.request.sku(role), backend, version, role, shapes, self.request.block_size(role),
                self.model.is_moe, quant,
            )
            for shape, reason in failing.items():
                found.setdefault(shape, (f"no_perf_data: {reason}",))
            shapes = [shape for shape in shapes if shape in failing]  # timeable at one choice is enough
        return {shape: why for shape, why in found.items() if shape in shapes}

    @staticmethod
    def _fit(
        backend: str,
        version: str,
        roles: tuple[str, ...],
        shapes: tuple[WorkerShape, ...],
        viable: Mapping[str, Mapping[WorkerShape, ShapeAssessment]],
    ) -> BackendFit:
        capacities = []
        for role, shape in zip(roles, shapes):
            verdict = viable[role][shape]
            known = verdict.kv_tokens is not None and verdict.num_gpu_blocks is not None
            capacities.append(RoleCapacity(verdict.kv_tokens, verdict.num_gpu_blocks) if known else None)
        return BackendFit(backend, version, tuple(capacities))  # type: ignore[arg-type]

    def _enumerated(
        self,
        roles: tuple[str, ...],
        viable: Mapping[str, Mapping[WorkerShape, ShapeAssessment]],
        backend: str,
        version: str,
        table: _PoolTable,
    ) -> Iterator[tuple[tuple[int, ...], BackendFit]]:
        """Every (shape × replicas) per role whose total lies in [min_gpu_budget, gpu_budget]."""
        low, high = self.request.min_gpu_budget, self.request.gpu_budget
        ids = {role: {shape: table.ids(role, shape, high // shape.gpus) for shape in viable[role]} for role in roles}
        capped = bool(self.request.gpu_budget_per_sku)
        for shapes in itertools.product(*(viable[role] for role in roles)):
            fit = self._fit(backend, version, roles, shapes, viable)
            role_ids = [ids[role][shape] for role, shape in zip(roles, shapes)]
            for replicas in _replica_counts([shape.gpus for shape in shapes], low, high):
                if capped and not self.request.within_sku_budgets(roles, tuple(s.gpus * r for s, r in zip(shapes, replicas))):
                    continue
                yield tuple(per_count[r] for per_count, r in zip(role_ids, replicas)), fit

    def _pinned(
        self,
        pins: list[tuple[RolePool, ...]],
        viable: Mapping[str, Mapping[WorkerShape, ShapeAssessment]],
        tables: Mapping[str, tuple[ShapeAssessment, ...]],
        backend: str,
        version: str,
        table: _PoolTable,
        pin_reasons: list[dict[str, str]],
    ) -> Iterator[tuple[tuple[int, ...], BackendFit]]:
        """The pins this backend can run; records why the others cannot."""
        low, high = self.request.min_gpu_budget, self.request.gpu_budget
        for pools, reasons in zip(pins, pin_reasons):
            problems = []
            for pool in pools:
                if pool.shape not in viable[pool.role]:
                    verdict = next(a for a in tables[pool.role] if a.shape == pool.shape)
                    problems.append(verdict.excluded_by if len(pools) == 1 else f"{pool.role} {verdict.excluded_by}")
            used = sum(pool.gpus for pool in pools)
            if not low <= used <= high:
                problems.append(f"uses {used} GPUs, outside the gpu budget [{low}, {high}]")
            elif not self.request.within_sku_budgets(tuple(p.role for p in pools), tuple(p.gpus for p in pools)):
                problems.append(f"exceeds gpu_budget_per_sku {dict(self.request.gpu_budget_per_sku)}")
            if problems:
                reasons[backend] = "; ".join(problems)
                continue
            roles = tuple(pool.role for pool in pools)
            shapes = tuple(pool.shape for pool in pools)
            yield tuple(table.id(pool) for pool in pools), self._fit(backend, version, roles, shapes, viable)

    def _reject_unusable_pins(
        self,
        pins: list[tuple[RolePool, ...]],
        table: _PoolTable,
        merged: Mapping[tuple[int, ...], list[BackendFit]],
        pin_reasons: list[dict[str, str]],
    ) -> None:
        for index, (pools, reasons) in enumerate(zip(pins, pin_reasons)):
            if tuple(table.id(pool) for pool in pools) not in merged:
                entry = dict(self.request.pinned_parallel_configs[index])
                raise InvalidPinnedParallelConfig(
                    f"parallel_configs[{index}] {entry} is legal for no backend: "
                    + " | ".join(f"{backend}: {reason}" for backend, reason in reasons.items())
                )

    def _why_empty(
        self,
        roles: tuple[str, ...],
        tables: Mapping[str, tuple[ShapeAssessment, ...]],
        viable: Mapping[str, Mapping[WorkerShape, ShapeAssessment]],
    ) -> str:
        for role in roles:
            if viable[role]:
                continue
            asked = [a for a in tables[role] if a.rank_kv_tokens is not None]
            if not asked:
                return f"no legal {role} shape within gpu_budget {self.request.gpu_budget}"
            best = max(asked, key=lambda a: (a.rank_kv_tokens, a.shape))
            holding = [a for a in asked if not {"no_kv_room", "kv_below_context"} & set(a.exclusion_codes)]
            if holding:  # they hold a sequence, and are excluded for something else (AIS cannot time them)
                example = max(holding, key=lambda a: (a.rank_kv_tokens, a.shape))
                return (
                    f"every legal {role} shape that holds a {self.context}-token sequence is excluded "
                    f"(e.g. {example.shape.label}: {example.excluded_by})"
                )
            if not best.rank_kv_tokens:
                return f"no legal {role} shape leaves room for KV ({best.excluded_by})"
            return (
                f"no legal {role} shape holds a {self.context}-token sequence (largest: {best.shape.label} "
                f"with {best.rank_kv_tokens} KV tokens per attention rank)"
            )
        smallest = sum(min(shape.gpus for shape in viable[role]) for role in roles)
        return (
            f"no config fits the gpu budget [{self.request.min_gpu_budget}, {self.request.gpu_budget}] "
            f"(smallest viable: {smallest} GPUs)"
        )
