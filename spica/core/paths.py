"""Where Spica keeps what it computes once and reuses: one rule for every cache (standard library
only, so the lightest process can ask)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """${SPICA_CACHE_DIR:-~/.cache/spica}: timing tables, KV capacities, traffic, predictor
    sub-sweeps, JAX's compiled code, the held replay clock's library, each in a folder of its own."""
    return Path(os.environ.get("SPICA_CACHE_DIR") or Path.home() / ".cache" / "spica")
