"""JAX functions traced once per machine, not once per process.

Tracing Vizier's GP (a TFP model run through coroutines) takes seconds per process and
array shape, longer than a whole round of a small search. `jax.export` keeps the traced,
lowered function: the first process to need a (function, static settings, shapes) triple
exports it to Spica's cache, every later process loads it in milliseconds and gets the
compiled code from JAX's persistent compilation cache. The cache key covers the versions
of JAX, Vizier and TFP, the JAX platform and the source of the module that defines the
function, so an upgrade or an edit re-exports. If exporting fails, the function simply runs under jax.jit.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Hashable

from spica.study.jax_setup import cache_dir, configure_jax

configure_jax()

import jax  # noqa: E402
import jaxlib.lapack  # noqa: E402
import numpy as np  # noqa: E402
from jax import export  # noqa: E402

log = logging.getLogger(__name__)

_TRACED_LIBRARIES = ("jax", "jaxlib", "google-vizier", "tfp-nightly")  # what a traced function is made of
_LOADED: dict[Hashable, Callable[..., Any]] = {}
_LOCK = threading.Lock()


def call(fn: Callable[..., Any], args: tuple, static: Hashable = ()) -> Any:
    """fn(*args, **bound) with the trace cached on disk; `fn` must be a module-level function,
    `static` a tuple of (name, value) keyword arguments that are not arrays."""
    leaves, treedef = jax.tree_util.tree_flatten(args)
    shapes = tuple((leaf.shape, leaf.dtype.str) if hasattr(leaf, "dtype") else (np.shape(leaf), np.result_type(leaf).str) for leaf in leaves)
    memo_key = (fn.__module__, fn.__qualname__, static, treedef, shapes)
    compiled = _LOADED.get(memo_key)
    if compiled is None:
        with _LOCK:
            compiled = _LOADED.get(memo_key) or _load_or_export(fn, static, treedef, shapes)
            _LOADED[memo_key] = compiled
    return compiled(*leaves)


def _load_or_export(fn: Callable[..., Any], static: Hashable, treedef: Any, shapes: tuple) -> Callable[..., Any]:
    bound = functools.partial(fn, **dict(static))

    def flat(*leaves: Any) -> Any:
        return bound(*jax.tree_util.tree_unflatten(treedef, leaves))

    try:
        path = cache_dir() / "export" / f"{fn.__qualname__}-{_key(fn, static, treedef, shapes)}.bin"
        if path.exists():
            return jax.jit(export.deserialize(bytearray(path.read_bytes())).call)
        specs = [jax.ShapeDtypeStruct(shape, np.dtype(dtype)) for shape, dtype in shapes]
        exported = export.export(jax.jit(flat))(*specs)
    except Exception:  # noqa: BLE001 - only a speed-up: trace in this process instead
        log.debug("jax.export of %s failed; tracing it in this process", fn.__qualname__, exc_info=True)
        return jax.jit(flat)
    _write_atomically(path, exported.serialize)
    return jax.jit(exported.call)


def _key(fn: Callable[..., Any], static: Hashable, treedef: Any, shapes: tuple) -> str:
    source = Path(inspect.getsourcefile(fn) or "").read_bytes()
    parts = [
        fn.__module__, fn.__qualname__, repr(static), str(treedef), repr(shapes), hashlib.sha256(source).hexdigest(),
        jax.default_backend(),
        *(importlib.metadata.version(package) for package in _TRACED_LIBRARIES),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def _write_atomically(path: Path, serialize: Callable[[], bytes]) -> None:
    try:
        data = serialize()
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)
    except Exception:  # noqa: BLE001 - an unwritable cache only costs the next process a trace
        log.debug("could not save %s; the next process traces again", path, exc_info=True)


# A loaded export calls LAPACK through jaxlib's custom calls without going through the
# lowering that normally initialises them (calling one uninitialised crashes the process).
jaxlib.lapack.prepare_lapack_call("potrf", np.float64)
