"""How the `spica` command ends: its exit codes, user errors in one line each, a stop by Ctrl-C
or SIGTERM, and leaving without interpreter finalization.

Every user error is printed as one line per problem, without a traceback, exit status 2; a
search that finds no feasible deployment says why and exits 3.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sys
from typing import Any, Iterator, NoReturn

from spica.core.console import flush_output, tell
from spica.core.errors import SearchError, UserError
from spica.core.stops import stop_message, stop_signals
from spica.results.outcome import SearchResults

EXIT_USAGE = 2
EXIT_NOTHING_FEASIBLE = 3


def exit_if_nothing_feasible(results: SearchResults) -> None:
    """A search that found no deployment ends with its reason and exit 3, so scripts notice."""
    if not len(results):
        from spica.results.table import nothing_feasible

        say(f"spica: {nothing_feasible(results.ledger)}")
        raise SystemExit(EXIT_NOTHING_FEASIBLE)


def say(line: str) -> None:
    """A line for the user on stderr, unless no one reads it any more (spica/core/console.py's
    `tell`): a message that cannot be shown must not turn an exit status into a traceback."""
    tell(sys.stderr, line + "\n")


def stopped(exc: KeyboardInterrupt, hint: str = "") -> NoReturn:
    """The command's end on Ctrl-C (exit 130) or SIGTERM (143): one line, no traceback."""
    line, code = stop_message(exc)
    say(f"\nspica: {line}{hint}")
    leave(code)


@contextlib.contextmanager
def resumable(again_with: str) -> Iterator[None]:
    """Ctrl-C or SIGTERM during a search: one line saying how to resume, exit 130 (143 for
    SIGTERM); what the search started is shut down on the way out (spica/core/stops.py)."""
    with stop_signals():
        try:
            yield
        except KeyboardInterrupt as exc:
            # Everything the search started is shut down and every finished evaluation is on disk by now.
            stopped(exc, f" Finished evaluations are kept; run again with {again_with} to resume.")


class user_errors:
    """User errors print as lines and exit 2; a search that cannot go on says why and exits 1; a
    bug prints its traceback and asks for a report, exit 1 — never "invalid input"."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if isinstance(exc, UserError):
            say("\n".join(["spica: invalid input:", *(f"  {line}" for line in exc.lines)]))
            raise SystemExit(EXIT_USAGE)
        if isinstance(exc, SearchError):
            say(f"spica: {exc}")
            raise SystemExit(1)
        if isinstance(exc, Exception):
            import traceback

            say("".join(traceback.format_exception(exc)).rstrip("\n"))
            say(f"spica: this is a bug in Spica, not a problem with your input ({type(exc).__name__}); please report "
                "it with the traceback above and the command you ran")
            raise SystemExit(1)
        return False


def leave(code: int) -> NoReturn:
    """Exit with `code`, skipping interpreter finalization: the work is done and on disk, and
    tearing down the JAX, TensorFlow Probability and Replay runtimes a search loaded only cost
    time (~1 s of a search of benchmarks/peer/s1.yaml) — or, with a JAX thread still running, aborted the process
    (exit -6) instead of exiting with the code. What finalization would have removed and a
    search leaves behind is removed here: the evaluation workers' forkserver (idle, its pool
    closed; left to itself it ends only after its own finalization, ~0.1 s after this process),
    multiprocessing's resource tracker (it ends when this process's end of its pipe closes, so
    it would end after this process) and multiprocessing's temporary folder (the forkserver's
    socket, `/tmp/pymp-*`). An interrupted search's pools still hold their queues' semaphores:
    they are removed here, as their owners' finalizers would at a normal exit, before the tracker
    stops. Left to the tracker, it removed them itself with a warning of leaks, and the
    finalizers, run later by a garbage collection, printed a traceback for each. A pool's
    processes still running are killed first: a pool a Ctrl-C stopped while it was being made
    was never closed, and its processes, which hold the tracker's pipe, kept the tracker, and so
    this exit, waiting for ever. A stop while it leaves changes nothing: it is leaving."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    logging.shutdown()
    if "multiprocessing" in sys.modules:
        import multiprocessing
        from multiprocessing import forkserver, process, resource_tracker, synchronize, util

        for child in multiprocessing.active_children():  # a pool stopped before it could be closed
            with contextlib.suppress(OSError):
                child.kill()
        for finalizer in list(util._finalizer_registry.values()):  # a copy: each call removes itself
            if getattr(finalizer, "_callback", None) is synchronize.SemLock._cleanup:
                with contextlib.suppress(Exception):  # already gone (a cleaner of /dev/shm): nothing to remove
                    finalizer()

        server = getattr(forkserver, "_forkserver", None)
        pid = getattr(server, "_forkserver_pid", None)  # the module's one forkserver, if it was started
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        tracker = getattr(resource_tracker, "_resource_tracker", None)  # the module's one tracker
        with contextlib.suppress(Exception):
            tracker._stop()  # closes its pipe and waits for it to end
        folder = process.current_process()._config.get("tempdir")  # get_temp_dir() would make one, and may fail to
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    flush_output()
    os._exit(code)
