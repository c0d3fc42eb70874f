"""Process-wide JAX settings Vizier's GP code needs, applied once before its first use.

x64 is required by Vizier's designers (its service turns it on too; calling designers
directly does not). The on-disk compilation cache turns the seconds XLA spends
compiling each GP shape into a one-off per machine instead of a per-process cost.
"""

from __future__ import annotations

import functools
from pathlib import Path

from spica.core.paths import cache_root


def cache_dir() -> Path:
    """Spica's JAX compilation cache: ${SPICA_CACHE_DIR:-~/.cache/spica}/jax."""
    return cache_root() / "jax"


@functools.cache
def configure_jax() -> None:
    """Enables float64 and, unless the user set one, Spica's persistent compilation cache."""
    import jax

    jax.config.update("jax_enable_x64", True)
    if jax.config.jax_compilation_cache_dir:
        return
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # an unwritable home only costs compile time
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
