"""Quantization knobs: the five quant modes AI Configurator's memory model and AIS timing take.

Each field names one of AI Configurator's quant-mode enums (its `sdk.common`), so a choice is
validated against the modes AI Configurator knows; the perf data of each system and backend
holds a subset of them, listed by its support matrix under `matrix_key` (spica.space.capacity).
Only the KV-cache mode has an engine flag (each backend's spelling is in spica.backends); the
others describe the checkpoint that is deployed (its weights' format), as `model_name` does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class QuantField:
    name: str
    aic_enum: str  # the enum in aiconfigurator.sdk.common
    matrix_key: str  # the perf database's support-matrix entry that lists the modes it has data for
    sizes_memory: bool  # changes the weight or KV bytes, so the KV capacity


QUANT_FIELDS: tuple[QuantField, ...] = (
    QuantField("gemm_quant_mode", "GEMMQuantMode", "gemm", True),
    QuantField("moe_quant_mode", "MoEQuantMode", "moe", True),
    QuantField("kvcache_quant_mode", "KVCacheQuantMode", "generation_attention", True),
    QuantField("fmha_quant_mode", "FMHAQuantMode", "context_attention", False),
    QuantField("comm_quant_mode", "CommQuantMode", "nccl", False),
)
QUANT_NAMES = tuple(field.name for field in QUANT_FIELDS)


@functools.lru_cache(maxsize=None)
def known_modes(name: str) -> tuple[str, ...]:
    """The modes AI Configurator knows for quant field `name` (its enum's member names)."""
    from aiconfigurator.sdk import common

    enum = getattr(common, next(field.aic_enum for field in QUANT_FIELDS if field.name == name))
    return tuple(member.name for member in enum)
