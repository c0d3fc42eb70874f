"""`search_space.parallel_configs`: pinned pools, a worker shape and replica count per role."""

from __future__ import annotations

from typing import Any, Mapping

from spica.core.unrolled import SHAPE_KEYS, Mode

PINNED_POOL_KEYS = (*SHAPE_KEYS, "replicas")
"""What a `parallel_configs` entry may set for one pool: its workers' shape and how many."""
DERIVED_SHAPE_KEYS = ("strategy", "used_gpus")


def _shape_entry(entry: Any, where: str = "") -> dict[str, int]:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}{entry!r} must be a dict of {', '.join(PINNED_POOL_KEYS)}")
    for key, value in entry.items():
        if key in DERIVED_SHAPE_KEYS:
            raise ValueError(f"{where}{key} is derived and cannot be set")
        if key not in PINNED_POOL_KEYS:
            raise ValueError(f"{where}unknown key {key!r}; allowed: {', '.join(PINNED_POOL_KEYS)}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{where}{key}: {value!r} must be a positive integer")
    if "tp" not in entry:
        raise ValueError(f"{where}tp is required (pp, attention_dp, moe_tp, moe_ep and replicas default to 1)")
    return dict(entry)


def parallel_config_entry(entry: Any) -> dict[str, Any]:
    """Agg entries are a shape; disagg entries hold a `prefill` and a `decode` shape."""
    if isinstance(entry, Mapping) and ("prefill" in entry or "decode" in entry):
        unknown = sorted(set(entry) - {"prefill", "decode"})
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r}; a disagg entry holds exactly prefill and decode")
        for role in ("prefill", "decode"):
            if role not in entry:
                raise ValueError(f"a disagg entry needs both prefill and decode; {role} is missing")
        return {role: _shape_entry(entry[role], f"{role}.") for role in ("prefill", "decode")}
    return _shape_entry(entry)


def parallel_config_mode(entry: Mapping[str, Any]) -> Mode:
    return "disagg" if "prefill" in entry else "agg"
