"""JAX functions traced and compiled once per machine, not once per process.

Tracing Vizier's GP (a TFP model run through coroutines) takes seconds per process and
array shape, longer than a whole round of a small search. The first process to need a (function,
static settings, shapes) triple exports the trace (`jax.export`) and its compiled executable to
Spica's cache; every later process loads the executable alone, in about 50 ms, without lowering the
export again or looking it up in JAX's compilation cache (which took 60-120 ms more per function:
the first model-based ask of benchmarks/peer/s1.yaml waited for three of them). The cache
key covers the versions of JAX, Vizier and TFP, the JAX platform and the source of the module
that defines the function, so an upgrade or an edit exports again. If exporting fails, the
function simply runs under jax.jit; an executable that loads but cannot run is compiled again
from its export. Both files are data (JAX's and XLA's own serialisations), never pickles.

Loading is itself most of what a short search's first model-based ask waits for (about 0.15 s
for the default search's three executables). A caller that knows what it is about to compute
names it (`preload`): the executables the last process of that name loaded are read again in
a background thread, beside the seconds of imports that come before any ask.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import importlib.metadata
import inspect
import logging
import os
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
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
_PRELOADED: dict[Path, Future] = {}  # executables being (or already) read in the background, by path
_PRELOADS = ThreadPoolExecutor(1, thread_name_prefix="spica-executable-preload")
_NAMES: set[str] = set()  # the names preload() was given: each remembers what this process loads
_USED: list[str] = []  # the executables this process has loaded or compiled, in order


def preload(name: str) -> None:
    """Starts reading, in the background, the executables the last process that preloaded `name`
    went on to use, and makes this process remember its own under `name` for the next one. A
    name that fits what the caller computes (not its seed) makes every later run find them read;
    a stale list only costs a background read."""
    _NAMES.add(name)
    for file in _remembered(name):
        path = cache_dir() / "export" / file
        with _LOCK:
            if path in _PRELOADED or not path.exists():
                continue
            collection_pause.enter()
            _PRELOADED[path] = _PRELOADS.submit(_preloaded, path)


def _preloaded(path: Path) -> Callable[..., Any] | None:
    try:
        return _load_executable(path.with_suffix(".bin"))
    finally:
        collection_pause.leave()


def _remembered(name: str) -> list[str]:
    try:
        return _used_list(name).read_text().split()
    except OSError:
        return []


def _remember(path: Path) -> None:
    """Adds an executable to what this process's preload names used (called under _LOCK)."""
    if path.name in _USED:
        return
    _USED.append(path.name)
    for name in _NAMES:
        _write_atomically(_used_list(name), lambda: "\n".join(_USED).encode())


def _used_list(name: str) -> Path:
    """Where the executables used under `name` are listed, a file name per line."""
    return cache_dir() / "export" / "used" / f"{hashlib.sha256(name.encode()).hexdigest()[:24]}.txt"


class _CollectionPause:
    """Automatic garbage collection is off while any background thread runs XLA (a designer's
    warm-up, a preload). JAX hooks XLA's own collection into every pass (gc.callbacks), and a
    pass set off by another thread's allocations while a warm-up ran XLA with the GIL released
    once deadlocked a search: the collecting thread waited for an XLA lock with the GIL held,
    the XLA thread holding that lock waited for the GIL. The background work starts beside
    imports and the opening of studies, so the pass is not left to chance."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._was_enabled = False

    def enter(self) -> None:
        with self._lock:
            if not self._running:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._running += 1

    def leave(self) -> None:
        with self._lock:
            self._running -= 1
            if not self._running and self._was_enabled:
                gc.enable()


collection_pause = _CollectionPause()


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
        preloaded = _PRELOADED.get(path.with_suffix(".xla"))
        loaded = preloaded.result() if preloaded is not None else _load_executable(path)
        _remember(path.with_suffix(".xla"))
        if loaded is not None:
            return loaded
        if path.exists():
            exported = export.deserialize(bytearray(path.read_bytes()))
        else:
            specs = [jax.ShapeDtypeStruct(shape, np.dtype(dtype)) for shape, dtype in shapes]
            exported = export.export(jax.jit(flat))(*specs)
            _write_atomically(path, exported.serialize)
    except Exception:  # noqa: BLE001 - only a speed-up: trace in this process instead
        log.debug("jax.export of %s failed; tracing it in this process", fn.__qualname__, exc_info=True)
        return jax.jit(flat)
    return _compile(exported, path.with_suffix(".xla"))


def _load_executable(export_path: Path) -> Callable[..., Any] | None:
    """The executable kept beside the export (None if there is none, or it cannot be loaded).
    The file is data, never code: the output tree as a protocol buffer, then the executable as
    XLA serialises it (`_executable_file`)."""
    path = export_path.with_suffix(".xla")
    try:
        data = path.read_bytes()
        tree_size = int.from_bytes(data[:8], "little")
        out_tree = jax.tree_util.PyTreeDef.deserialize_using_proto(jax.tree_util.default_registry, data[8 : 8 + tree_size])
        executable = _client().deserialize_executable(data[8 + tree_size :])
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - torn, or from another build: compiled again
        log.debug("could not load %s; compiling it again", path, exc_info=True)
        return None

    client, device = _client(), jax.devices()[0]

    def run(*leaves: Any) -> Any:
        # buffer_from_pyval: jax.device_put's own checks cost 10x as much (0.37 ms per loss call)
        results = executable.execute_sharded([[client.buffer_from_pyval(np.asarray(leaf), device)] for leaf in leaves])
        return jax.tree_util.tree_unflatten(out_tree, [arrays[0] for arrays in results.disassemble_into_single_device_arrays()])

    def first_run(*leaves: Any) -> Any:
        """The first call waits for its result: a failure to run shows there (runs are asynchronous)."""
        try:
            result = jax.block_until_ready(run(*leaves))
            chosen[0] = run
        except jax.errors.JaxRuntimeError:  # it cannot run here: the export, compiled afresh, can
            log.debug("%s failed to run; compiling its export again", path, exc_info=True)
            chosen[0] = _compile(export.deserialize(bytearray(export_path.read_bytes())), path)
            result = chosen[0](*leaves)
        return result

    chosen: list[Callable[..., Any]] = [first_run]
    return lambda *leaves: chosen[0](*leaves)


def _compile(exported: export.Exported, path: Path) -> Callable[..., Any]:
    """The export compiled, and the executable kept at `path`. Always compiled afresh: its module
    gets a name of its own, so JAX's persistent compilation cache cannot hand back an executable
    it read from disk, which serialises without its kernels (it loads, then fails to run).
    Every argument is kept (`keep_unused`), so the executable takes the leaves as they come."""

    def call(*leaves: Any) -> Any:
        return exported.call(*leaves)

    call.__name__ = call.__qualname__ = f"{exported.fun_name}_{os.getpid()}_{time.time_ns()}"
    try:
        compiled = jax.jit(call, keep_unused=True).lower(*exported.in_avals).compile()
    except Exception:  # noqa: BLE001 - only a speed-up
        log.debug("could not compile %s ahead; JAX compiles it on call", exported.fun_name, exc_info=True)
        return jax.jit(exported.call)
    _write_atomically(path, lambda: _executable_file(exported.out_tree, compiled.runtime_executable()))
    return compiled


def _executable_file(out_tree: Any, executable: Any) -> bytes:
    tree = out_tree.serialize_using_proto()
    return len(tree).to_bytes(8, "little") + tree + _client().serialize_executable(executable)


def _client() -> Any:
    """The XLA client of the one device Spica's GP runs on."""
    return jax.devices()[0].client


def _key(fn: Callable[..., Any], static: Hashable, treedef: Any, shapes: tuple) -> str:
    parts = [fn.__module__, fn.__qualname__, repr(static), str(treedef), repr(shapes), _made_of(fn)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


@functools.cache
def _made_of(fn: Callable[..., Any]) -> str:
    """What the trace of `fn` depends on besides its arguments: its module's source, the JAX
    platform and the traced libraries' versions."""
    source = Path(inspect.getsourcefile(fn) or "").read_bytes()
    versions = (importlib.metadata.version(package) for package in _TRACED_LIBRARIES)
    return "\n".join([hashlib.sha256(source).hexdigest(), jax.default_backend(), *versions])


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
