"""Pareto dominance, the one rule behind every front: a study's best trials and a search's front."""

from __future__ import annotations

from typing import Sequence


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """a is at least as good everywhere and strictly better somewhere (higher is better)."""
    return all(x >= y for x, y in zip(a, b, strict=True)) and any(x > y for x, y in zip(a, b))
