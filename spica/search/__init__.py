"""The search: branches, study rounds, dedupe, evaluation fan-out, merge (docs/search.md)."""

from __future__ import annotations

from typing import Any

__all__ = ["SearchResults", "run_smart_search"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from spica.search import run

        return getattr(run, name)
    raise AttributeError(name)
