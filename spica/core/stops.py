"""How the `spica` command stops on Ctrl-C (exit 130) and SIGTERM (143): one line, no traceback,
from its first moment. Standard library only: the command's entry (spica/__main__.py) installs
these before it imports anything heavier, so a stop while the command itself imports is held back
like any other (spica/cli/exits.py reports it and shuts a search down)."""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading
import time
from typing import Any, Iterator, NoReturn


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's stop, `kill`): handled like Ctrl-C, so the pool is shut down."""


STOP_RETRY_SECONDS = 0.1

_held = threading.Event()
_arrived = threading.Event()


def stop_held() -> bool:
    """Whether a stop has reached the command and waits to be raised (the main thread was
    importing): the main thread should start nothing meanwhile (spica/search/pool.py)."""
    return _held.is_set()


def stop_arrived() -> bool:
    """Whether a stop has reached the command, raised or held back: no thread should start a
    process any more (spica/search/pool.py)."""
    return _arrived.is_set()


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt and SIGTERM Terminated in the main thread, once: a signal
    while that one stops the command (Ctrl-C pressed twice) does nothing, since raised into the
    shutdown it would cut it short and skip the command's exit. Python runs a signal's handler
    wherever the main thread is: inside an import the exception is held back and tried again every
    STOP_RETRY_SECONDS (`_importing`); raised inside a garbage collector's callback (JAX registers
    one), Python prints it and drops it, and a search so interrupted while it imported went on as
    if never asked: a dropped one is raised again. A signal the command was started ignoring (a
    script's background job ignores Ctrl-C) stays ignored; outside the main thread, whoever owns
    the process handles its signals. Nested, the inner block's handler is the one raised (a retry
    from the outer one included) and the outer one's is back when it ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = threading.Event()

    def again(signum: int) -> None:
        """The signal once more, soon, from another thread (from this one, its handler would run at
        once, where this one is); not once the command is stopping, or this block has ended."""
        _held.set()
        retry = threading.Timer(STOP_RETRY_SECONDS, lambda: raised.is_set() or _thread.interrupt_main(signum))
        retry.daemon = True
        retry.start()

    def on_signal(signum: int, frame: Any) -> None:
        _arrived.set()
        if raised.is_set():
            return
        if _importing(frame):
            return again(signum)
        raised.set()
        _held.clear()
        raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt

    report_unraisable = sys.unraisablehook

    def on_unraisable(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and raised.is_set():
            raised.clear()
            again(signal.SIGTERM if isinstance(unraisable.exc_value, Terminated) else signal.SIGINT)
        else:
            report_unraisable(unraisable)

    previous = {signum: signal.signal(signum, on_signal) for signum in (signal.SIGINT, signal.SIGTERM)
                if signal.getsignal(signum) is not signal.SIG_IGN}
    sys.unraisablehook = on_unraisable
    try:
        yield
    finally:
        raised.set()
        _held.clear()
        _arrived.clear()
        sys.unraisablehook = report_unraisable
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _importing(frame: Any) -> bool:
    """Whether the main thread is importing a module. Raised into a native module's
    initialisation, KeyboardInterrupt can abort the process (jaxlib's: a C++ terminate, exit -6,
    the pool's semaphores leaked): the stop waits for the import (stop_signals)."""
    while frame is not None:
        if frame.f_globals.get("__name__") in ("importlib._bootstrap", "importlib._bootstrap_external"):
            return True
        frame = frame.f_back
    return False


def stop_message(exc: KeyboardInterrupt) -> tuple[str, int]:
    """The line a stop prints (after "spica: ") and the command's exit status."""
    return ("terminated.", 143) if isinstance(exc, Terminated) else ("interrupted.", 130)


def stopped_early(exc: KeyboardInterrupt) -> NoReturn:
    """A stop before spica/cli/commands.py's `main` could report it (while the command imports it): nothing
    started yet, nothing to shut down."""
    line, code = stop_message(exc)
    with contextlib.suppress(OSError, ValueError):  # its reader gone: the exit status still says it
        sys.stderr.write(f"\nspica: {line}\n")
        sys.stderr.flush()
    raise SystemExit(code)


@contextlib.contextmanager
def starting_processes() -> Iterator[None]:
    """Around whatever may start a process: a pool's (every submit: the executor starts workers
    on demand, spica/search/pool.py) or a replay child (spica/evaluation/replay.py).
    - Ctrl-C blocked in this thread meanwhile: the processes a submit starts (the forkserver, a
      worker) inherit the mask, born with Ctrl-C blocked, so one pressed while they import (it
      reaches the terminal's whole process group) cannot kill them with a traceback. The caller
      alone handles it, and the workers then ignore it (_worker_setup). One pressed meanwhile is
      not lost: another thread takes it, or this one once it is unblocked.
    - On the main thread, a stop held back while it imported (spica/core/stops.py) is raised here
      first, before anything starts: a search stopped by SIGTERM to its process group while it
      imported went on for ~1.5 s, started a forkserver in place of the one the signal had
      ended, and a worker forked for it then read semaphores the command's exit had removed
      (a traceback in 12 of 30 runs).
    - Once a stop has arrived, no thread starts anything (RuntimeError, as from a closed pool): the
      pool's start-up thread, a replay's completion feeding the next one, a broken pool's healing
      would otherwise start processes the command's exit may miss.
    - Python's resource tracker, the first time it starts, unblocks Ctrl-C in the thread that
      started it, and anything a forkserver needs starts it: so it is started before the block
      (a forkserver started first by a replay in the search's own process was born with Ctrl-C
      open, and so was every worker forked from it)."""
    from multiprocessing import resource_tracker

    if threading.current_thread() is threading.main_thread():
        while stop_held():  # its next try raises it here
            time.sleep(STOP_RETRY_SECONDS / 4)
    if stop_arrived():
        raise RuntimeError("a stop has arrived: no process is started any more")
    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
