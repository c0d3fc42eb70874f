"""KV capacity of worker shapes from AI Configurator's memory model, and the AIC facts around it.

AIC's `estimate_kv_cache` answers for one attention rank; an attention-DP engine holds that
many tokens on each of its attention_dp ranks. AIC releases before 0.10 have no memory model:
then the KV filter is skipped (warned once) and only kv_load_ratio workloads, which derive
their concurrency from the capacity, cannot run.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import logging
from dataclasses import dataclass
from typing import Any, Iterable

from packaging.version import Version

from spica import backends
from spica.core.errors import UserError
from spica.core.quant import QUANT_FIELDS
from spica.space import cache
from spica.space.shapes import WorkerShape

logger = logging.getLogger("spica.space")

MEMORY_MODULE = "aiconfigurator.sdk.memory"
UNKNOWN_CAPACITY_BLOCKS = 16_384
"""KV blocks per attention rank a replay gets when no memory model can size them: the mocker's own
default for an engine nothing sizes (its --num-gpu-blocks-override help)."""


class KvCapacityUnavailable(UserError):
    """The workload needs KV capacity but the installed AI Configurator cannot estimate it."""


@functools.cache  # read from the installed metadata: milliseconds, and asked per candidate
def aic_version() -> str:
    return importlib.metadata.version("aiconfigurator")


@functools.cache
def ais_version() -> str | None:
    try:
        return importlib.metadata.version("aisimulate")
    except importlib.metadata.PackageNotFoundError:  # spica.space alone, beside an AIC without AIS
        return None


@functools.lru_cache(maxsize=None)
def perf_data_version(system: str, backend: str) -> str | None:
    """The default perf-database version for (system, backend): AI Configurator's latest
    (its maintained default); None when AIC has no data."""
    return _perf_data(system, backend)["default"]


@functools.lru_cache(maxsize=None)
def perf_data_versions(system: str, backend: str) -> tuple[str, ...]:
    """The versions a candidate can be scored at: those both AI Configurator (KV capacity) and
    AIS (timing) can query for (system, backend)."""
    return tuple(_perf_data(system, backend)["scorable"])


def _perf_data(system: str, backend: str) -> dict[str, Any]:
    key = {"kind": "perf_data_versions", "aic": aic_version(), "ais": ais_version(), "system": system, "backend": backend}
    stored = cache.load(key)
    if "default" in stored:
        return stored
    from aiconfigurator.sdk import perf_database

    record = backends.backend(backend)
    aic = list(perf_database.get_supported_databases().get(system, {}).get(record.aic_name, []))
    default = perf_database.get_latest_database_version(system, record.aic_name) if aic else None
    timed = _ais_versions(system, record.ais_name) if ais_version() else set(aic)
    scorable = [version for version in aic if version in timed]
    if not _memory_module_present() and timed:  # no KV capacity from AIC: only timing's data decides
        scorable = sorted(timed, key=Version)
        default = default if default in timed else scorable[-1]
    found = {"default": default, "scorable": scorable}
    cache.store(key, found)
    return found


def _ais_versions(system: str, backend: str) -> set[str]:
    """The versions AIS accepts: its version slots (current, next) where it has them, else
    every version its perf data holds."""
    from aisimulate_core.sdk import perf_database

    slots = perf_database.get_version_slots(system, backend)
    if slots is not None:
        return set(slots.values())
    return set(perf_database.get_supported_databases().get(system, {}).get(backend, []))


def supported_quant_modes(system: str, backend: str, version: str) -> dict[str, list[str]]:
    """Per quant field, the modes the perf database of (system, backend, version) holds data for
    (its support matrix, read once and cached: loading a database takes seconds)."""
    key = {"kind": "quant_modes", "aic": aic_version(), "system": system, "backend": backend, "backend_version": version}
    stored = cache.load(key)
    if not stored:
        from aiconfigurator.sdk import perf_database

        matrix = perf_database.get_database(system, backends.backend(backend).aic_name, version).supported_quant_mode
        stored = {field.name: list(matrix.get(field.matrix_key) or []) for field in QUANT_FIELDS}
        cache.store(key, stored)
    return stored


def checkpoint_quant_modes(model_name: str, backend: str) -> dict[str, str | None]:
    """The quant modes AI Configurator assumes for a checkpoint when none is set (it infers them
    from the model's quantization config, e.g. fp8 KV cache for an FP8 checkpoint): what an unset
    field was scored with, and so what a deployment must run. Without the memory model nothing was
    sized, so nothing is assumed (None): the engine's own default stands."""
    if not _memory_module_present():
        return {field.name: None for field in QUANT_FIELDS}
    key = {"kind": "checkpoint_quant_modes", "aic": aic_version(), "model": model_name, "backend": backend}
    stored = cache.load(key)
    if not stored:
        from aiconfigurator.sdk.memory import build_model_config
        from aiconfigurator.sdk.models import get_model

        config = get_model(model_name, build_model_config(1, 1, 1, 1, 1), backends.backend(backend).aic_name).config
        stored = {field.name: getattr(config, field.name).name for field in QUANT_FIELDS}
        cache.store(key, stored)
    return stored


@functools.lru_cache(maxsize=None)
def system_spec(system: str) -> dict[str, Any]:
    """AI Configurator's system spec of `system` (its `gpu` and `node` blocks); empty for an older
    AI Configurator with no spec to read (the dynamo-planner image's)."""
    try:
        from aiconfigurator.sdk.perf_database import load_system_spec
    except ImportError:
        return {}
    return load_system_spec(system)


def gpu_power_w(system: str) -> float | None:
    """The GPU's board power in W as the system spec states it (`gpu.power`, e.g. 700 for
    h200_sxm, 1,000 for b200_sxm); None where the spec has none."""
    power = system_spec(system).get("gpu", {}).get("power")
    return float(power) if power else None


def gpu_memory_gib(system: str) -> float | None:
    """The GPU's memory in GiB as the system spec states it (`gpu.mem_capacity`, e.g. 141 for
    h200_sxm, 180 for b200_sxm); None where the spec has none."""
    capacity_bytes = system_spec(system).get("gpu", {}).get("mem_capacity")
    return float(capacity_bytes) / 2**30 if capacity_bytes else None


DEFAULT_GPUS_PER_NODE = 8


def system_node(system: str) -> dict[str, Any]:
    """The `node` block of the system spec (GPUs per node and per rack, bandwidths)."""
    return dict(system_spec(system).get("node", {}))


def gpus_per_node(system: str) -> int:
    """GPUs in one node of `system`; DEFAULT_GPUS_PER_NODE where the spec says nothing."""
    return int(system_node(system).get("num_gpus_per_node", DEFAULT_GPUS_PER_NODE))


def nvlink_domain(system: str) -> int:
    """GPUs one NVLink domain of `system` joins: a rack where the spec names one
    (`num_gpus_per_rack`: 72 on gb200 / gb300, NVL72), else a node (8 on h200_sxm)."""
    return int(system_node(system).get("num_gpus_per_rack") or gpus_per_node(system))


def known_systems() -> list[str]:
    """Every system AI Configurator has a perf database for (any backend)."""
    from aiconfigurator.sdk import perf_database

    return sorted(system for system, backends in perf_database.get_supported_databases().items() if backends)


@functools.lru_cache(maxsize=None)
def _memory_module_present() -> bool:
    """Found, not imported: importing it costs ~1.4 s, and cached capacities never need it."""
    try:
        return importlib.util.find_spec(MEMORY_MODULE) is not None
    except ImportError:  # aiconfigurator itself (or aiconfigurator.sdk) is missing
        return False


@functools.lru_cache(maxsize=None)
def memory_model_available() -> bool:
    """Whether KV capacity can be estimated; warns once per process when it cannot."""
    present = _memory_module_present()
    if not present:
        logger.warning(
            "aiconfigurator %s has no memory model (%s, added in 0.10): KV-feasibility filter "
            "skipped, shapes carry no KV capacity and every replay gets Replay's default KV cache of "
            "%s blocks per attention rank (scores then do not reflect each shape's memory)",
            aic_version(),
            MEMORY_MODULE,
            f"{UNKNOWN_CAPACITY_BLOCKS:,}",
        )
    return present


def require_memory_model() -> None:
    """Fail fast for workloads whose concurrency is derived from KV capacity."""
    if not _memory_module_present():
        raise KvCapacityUnavailable(
            f"kv_load_ratio needs KV capacity from AI Configurator's memory model ({MEMORY_MODULE}), "
            f"which the installed aiconfigurator {aic_version()} lacks (added in 0.10): install "
            "aiconfigurator>=0.10 or use a trace or fixed-concurrency workload"
        )


@dataclass(frozen=True)
class MemorySettings:
    """Engine settings of one role that change how many KV tokens fit: the memory left for KV,
    and the quant modes (field, mode) that size weights and KV entries (unset: the checkpoint's)."""

    gpu_memory_utilization: float
    max_num_batched_tokens: int
    quant: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RankCapacity:
    """KV tokens one attention rank holds; 0 with `error` when AIC found no room or failed."""

    tokens: int
    error: str | None = None


def _estimate(
    model_name: str, system: str, backend: str, version: str, settings: MemorySettings, shape: WorkerShape
) -> RankCapacity:
    from aiconfigurator.sdk.memory import estimate_kv_cache

    record = backends.backend(backend)
    try:
        result = estimate_kv_cache(
            model_name,
            system,
            record.aic_name,
            version,
            max_num_tokens=settings.max_num_batched_tokens,
            max_batch_size=1,  # AIC ignores it for non-KV memory (activations follow max_num_tokens)
            memory_fraction_kind=record.memory_fraction_kind,
            memory_fraction_value=settings.gpu_memory_utilization,
            tp_size=shape.tp,
            pp_size=shape.pp,
            attention_dp_size=shape.attention_dp,
            moe_tp_size=shape.moe_tp,
            moe_ep_size=shape.moe_ep,
            **dict(settings.quant),
        )
    except Exception as exc:  # "no KV budget" / unsupported model: AIC raises ValueError, internals may not
        return RankCapacity(0, str(exc).splitlines()[0][:300])
    return RankCapacity(int(result["total_kv_size_tokens"]))


def rank_capacities(
    model_name: str,
    system: str,
    backend: str,
    backend_version: str,
    settings: MemorySettings,
    shapes: Iterable[WorkerShape],
) -> dict[WorkerShape, RankCapacity]:
    """Per-rank KV capacity of each shape, from the on-disk cache or one AIC call per new shape."""
    key = {
        "kind": "rank_kv_tokens",
        "aic": aic_version(),
        "model": model_name,
        "system": system,
        "backend": backend,
        "backend_version": backend_version,
        "gpu_memory_utilization": settings.gpu_memory_utilization,
        "max_num_batched_tokens": settings.max_num_batched_tokens,
        **({"quant": dict(settings.quant)} if settings.quant else {}),  # keys of the checkpoint's own modes unchanged
    }
    stored = cache.load(key)
    shapes = tuple(shapes)
    fresh = {}
    for shape in shapes:
        if shape.label not in stored:
            capacity = _estimate(model_name, system, backend, backend_version, settings, shape)
            fresh[shape.label] = [capacity.tokens, capacity.error]
    if fresh:
        cache.store(key, fresh)
        stored.update(fresh)
    return {shape: RankCapacity(*stored[shape.label]) for shape in shapes}
