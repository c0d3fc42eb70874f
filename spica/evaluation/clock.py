"""The clock (and randomness) a kv_router replay reads, held: what makes each replay of a candidate repeat.

Replay's KV router breaks ties between equally good workers, and samples at a router
temperature above 0, with a random generator seeded from the wall clock; no seed is exposed
(Dynamo's own `run_synthetic_trace_replay` docstring: a fixed arrival seed does not fix the
routing). Measured on S2's kv_router candidates, each replay in a fresh process (docs/search.md,
"Why a kv_router replay repeats"): with the real clock, six replays gave six results (goodput
±0.5 %); with this module's clock, one result, at any router temperature; a clock started
elsewhere gave another result of the same spread (±0.6 %). Disagg candidates also varied with
the randomness Dynamo's library draws from the kernel when imported (its hash maps' seeds: two
results in eight processes); a fixed stream for that library alone gave one.

How: `replay_clock.c`, built once per machine with the C compiler (`cc`, or $CC) into Spica's
cache, is preloaded (LD_PRELOAD) into the forkserver that evaluation workers and replay children
are forked from. It answers `clock_gettime` and `gettimeofday` for a thread that holds it with a
clock that starts at the draw's own moment (`start_ns`) and moves one microsecond per read (every
other thread reads the real clock), and `getrandom` for Dynamo's library with a fixed stream
(everyone else gets the kernel's). A kv_router replay runs held, in a child forked for it alone
from a forkserver that has only imported: the generator also depends on what its process did
before (spica/evaluation/replay.py).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import multiprocessing
import multiprocessing.forkserver
import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from spica.core.paths import cache_root

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("replay_clock.c")
SECOND_NS = 1_000_000_000


class ClockNotHeld(RuntimeError):
    """The held clock is built but not loaded in this replay process (it was started otherwise)."""


def varies(replayed: Mapping[str, Any]) -> bool:
    """Whether another draw of this candidate (its unrolled config, or its Replay call's keyword
    arguments: both name `router_mode`) gives other metrics: its router samples."""
    return replayed.get("router_mode") == "kv_router"


def start_ns(draw: int) -> int:
    """Where draw `draw` of a candidate starts its clock: draw 0 is the search's own replay,
    1, 2, ... the spread's (spica/search/spread.py)."""
    return (draw + 1) * SECOND_NS


@functools.cache
def _digest() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]


def identity() -> str:
    """Which clock kv_router replays read here, for the plan's scores fingerprint: the held
    clock's source, or "real" where it could not be built (a draw then differs run to run)."""
    return f"held-{_digest()}" if library() is not None else "real"


def library() -> Path | None:
    """The built library in Spica's cache (built now if the cache has none for this source);
    None, with the reason in `unavailable()`, where no C compiler is found or it fails."""
    target = cache_root() / "clock" / f"replay_clock-{_digest()}.so"
    if target.is_file():
        return target
    compiler = shutil.which(os.environ.get("CC") or "cc")
    if compiler is None:
        _why[0] = "no C compiler (cc, or $CC) to build spica/evaluation/replay_clock.c"
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    built = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(partial), str(SOURCE)],
                           capture_output=True, text=True)
    if built.returncode != 0:
        partial.unlink(missing_ok=True)
        _why[0] = f"{compiler} could not build {SOURCE.name}: {' '.join(built.stderr.split())[:200]}"
        return None
    os.replace(partial, target)  # atomic: two processes building at once agree
    return target


_why = [""]  # why the last library() found none


def unavailable() -> str | None:
    """Why kv_router replays vary run to run on this machine, or None where they repeat."""
    return None if library() is not None else _why[0]


@contextmanager
def preloaded() -> Iterator[None]:
    """A process exec'd meanwhile (a forkserver) loads the held clock: LD_PRELOAD for that
    moment only, so no other program Spica starts (podman, sbatch, a browser) carries it."""
    path = library()
    before = os.environ.get("LD_PRELOAD")
    if path is not None:
        os.environ["LD_PRELOAD"] = f"{path} {before}" if before else str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("LD_PRELOAD", None)
        else:
            os.environ["LD_PRELOAD"] = before


def start_forkserver(imports: Sequence[str]) -> None:
    """The forkserver that evaluation workers and replay children are forked from, running with
    the held clock loaded and `imports` imported (the first caller decides them; starting it
    again is a no-op while it runs)."""
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(imports))
    with preloaded():
        multiprocessing.forkserver.ensure_running()


@contextmanager
def held(draw: int | None) -> Iterator[None]:
    """This thread reads draw `draw`'s clock meanwhile; None: the real clock (round_robin, which
    never reads it to route). Where no compiler built the library, the real clock, as the
    search said when it began."""
    if draw is None or library() is None:
        yield
        return
    this_process = ctypes.CDLL(None)
    try:
        hold, release = this_process.spica_clock_hold, this_process.spica_clock_release
    except AttributeError:
        raise ClockNotHeld("the held clock is not loaded in this replay process (its forkserver was started without it)") from None
    hold(ctypes.c_uint64(start_ns(draw)))
    try:
        yield
    finally:
        release()
