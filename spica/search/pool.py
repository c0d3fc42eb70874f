"""Where evaluations run: in this process, in a local process pool, or elsewhere.

A pool is any object with `workers` (how many items it evaluates at once), `submit(fn, items)
-> list[Future]` (one future per item, in item order), `close()`, and optionally
`instant_handoff` (True: an item handed over reaches a free worker at once, so the search may
hand replays out one per free worker; spica/search/feeder.py); `outcome(future)` reads a
future as the item's result or the exception it raised, so one bad candidate never sinks a
search. Futures let the search keep each branch's rounds going on its own: one branch's study
asks while another branch's candidates replay.
runner.slurm_pool.SlurmPool is a pool that fans out over SLURM. The local process pool is
created once per run, its workers forked from one forkserver that imported Replay and the
evaluation stack: paid once per run, not per worker or per candidate.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from spica.core.errors import DeadPoolError
from spica.core.stops import starting_processes, stop_arrived
from spica.evaluation import clock

DEAD_POOL_MESSAGE = (
    "the evaluation worker pool died. Worker processes are spawned and re-import your script: "
    "if you call run_smart_search from a script, put the call under `if __name__ == \"__main__\":`. "
    "Otherwise a worker ran out of memory; lower sweep.parallel_evals."
)


ORPHAN_POLL_SECONDS = 0.5

WORKER_NICENESS = 10
"""Evaluation workers (and their replay children) run at this lower CPU priority. Where a search
has more workers than cores (upstream's GLM-5 study (examples/glm5_b200_72.yaml): 8 on a 2-core machine), the study's ask
otherwise shares the cores with every running replay and takes several times longer, while the
workers its results would feed run dry (7.0 % of their time on that study's first 160 samples).
With a core per worker, there is nothing to share and it changes nothing."""


class EvaluationPool(Protocol):
    workers: int  # how many items it evaluates at once

    def submit(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Future]: ...

    def close(self, wait: bool = True) -> None:
        """Cancel what is queued; `wait`: until what runs has finished, else what runs is
        abandoned (an interrupted search keeps only what finished)."""


class WorkerLost(RuntimeError):
    """A worker process died while evaluating an item (killed, or out of memory): transient."""


def outcome(future: Future) -> Any:
    """The item's result, or the exception it raised; a dead pool raises DeadPoolError."""
    try:
        return future.result()
    except DeadPoolError:
        raise
    except BrokenProcessPool as exc:
        raise DeadPoolError(DEAD_POOL_MESSAGE) from exc
    except Exception as exc:
        return exc


def run_all(pool: EvaluationPool, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """fn over items on the pool, all submitted at once; results (or exceptions) in item order."""
    return [outcome(future) for future in pool.submit(fn, items)]


class InlinePool:
    """Evaluate in this process, one after another (parallel_evals or per_round is 1)."""

    workers = 1

    def submit(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Future]:
        futures = []
        for item in items:
            future: Future = Future()
            try:
                future.set_result(fn(item))
            except Exception as exc:  # one candidate's bug must not end the search
                future.set_exception(exc)
            futures.append(future)
        return futures

    def close(self, wait: bool = True) -> None:
        return None  # nothing runs once submit has returned


def pass_on(inner: Future, proxy: Future) -> None:
    """Gives `proxy`, the future a caller holds, the outcome of the future `inner` that did the
    work: its result, its error, or its cancellation."""
    if inner.cancelled():
        proxy.cancel()
    elif inner.exception() is not None:
        proxy.set_exception(inner.exception())
    else:
        proxy.set_result(inner.result())


class ProcessPool:
    """A process pool that survives losing a worker. Its workers are spawned, each importing
    what it runs; or, given `imports`, forked from a forkserver that has imported those modules
    once (never from this process: Replay's Rust runtime and JAX are not fork-safe), so N
    workers cost one import instead of N.

    `preload` (a picklable function, e.g. spica.evaluation.evaluate.prepare_worker) starts every
    worker at once and runs in it, so the workers' start-up overlaps the caller's own set-up
    instead of the first round. When a worker dies, Python's pool fails every item in flight:
    this one starts a fresh pool and submits each of those items once more; an item that loses
    its worker twice fails alone, as WorkerLost. A pool none of whose workers ever came up
    cannot be healed (a script without the main guard, or no memory for even one worker):
    DeadPoolError.
    Workers end themselves when this process is gone, however it ended. `niceness` lowers their
    CPU priority below this process's (os.nice).
    """

    RETRIES = 1
    instant_handoff = True
    """An item handed to it reaches a free worker at once: the search may hold replays back and
    hand them out one per free worker (spica/search/feeder.py), where a SLURM pool's items
    are better sent as one job array per ask."""

    def __init__(self, workers: int, preload: Callable[[], None] | None = None, imports: Sequence[str] = (), niceness: int = 0):
        self.workers = workers
        self._preload = preload
        self._niceness = niceness
        self._imports = tuple(imports)
        self._context = multiprocessing.get_context("forkserver" if imports else "spawn")
        self._lock = threading.Lock()
        self._progress = False  # a worker came up, or an item finished, since the last break
        self._closed = False
        self._executor = self._start()

    def _start(self) -> ProcessPoolExecutor:
        executor = ProcessPoolExecutor(
            max_workers=self.workers, mp_context=self._context, initializer=_worker_setup,
            initargs=(os.getpid(), self._preload, self._niceness),
        )
        # Every worker starts now; one that comes up proves the pool can. Launched from a thread:
        # a forkserver forks no worker before it has imported `imports` (~0.5 s), and the caller
        # goes on with its own set-up meanwhile.
        threading.Thread(target=self._launch, args=(executor,), daemon=True, name="spica-pool-start").start()
        return executor

    def _launch(self, executor: ProcessPoolExecutor) -> None:
        if self._imports:  # with the held clock its kv_router replays read (spica/evaluation/clock.py)
            try:
                with starting_processes():
                    clock.start_forkserver(self._imports)
            except (RuntimeError, OSError):  # a stop arrived: no worker starts either
                return
        for _ in range(self.workers):
            try:
                with starting_processes():
                    executor.submit(_ready).add_done_callback(self._started)
            except (BrokenProcessPool, RuntimeError, OSError, EOFError):  # closed or broken (its forkserver gone) before its workers came up
                return

    def _started(self, probe: Future) -> None:
        if not probe.cancelled() and probe.exception() is None:
            self._progress = True

    def submit(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Future]:
        return [self._submit(fn, item, self.RETRIES, Future()) for item in items]

    def _submit(self, fn: Callable[[Any], Any], item: Any, retries: int, proxy: Future) -> Future:
        with self._lock:
            executor = self._executor
        try:
            with starting_processes():
                inner = executor.submit(fn, item)
        except (BrokenProcessPool, RuntimeError) as exc:
            if self._closed or stop_arrived():
                proxy.cancel()
                return proxy
            if not self._heal(executor):
                raise DeadPoolError(DEAD_POOL_MESSAGE) from exc
            return self._submit(fn, item, retries, proxy)
        inner.add_done_callback(lambda done: self._settle(done, executor, fn, item, retries, proxy))
        return proxy

    def _settle(self, inner: Future, executor: ProcessPoolExecutor, fn: Callable[[Any], Any], item: Any, retries: int, proxy: Future) -> None:
        cancelled = inner.cancelled()
        error = None if cancelled else inner.exception()
        if isinstance(error, BrokenProcessPool) and self._closed:  # its worker killed by close(wait=False)
            proxy.cancel()
            return
        if isinstance(error, BrokenProcessPool):
            if not self._heal(executor):
                proxy.set_exception(DeadPoolError(DEAD_POOL_MESSAGE))
            elif retries > 0:
                self._submit(fn, item, retries - 1, proxy)
            else:
                proxy.set_exception(WorkerLost("the worker evaluating this item died twice (killed, or out of memory)"))
            return
        if not cancelled and error is None:
            self._progress = True
        pass_on(inner, proxy)

    def _heal(self, broken: ProcessPoolExecutor) -> bool:
        """Replace a broken pool (once per break); False when no worker of it ever came up."""
        with self._lock:
            if self._closed or self._executor is not broken:
                return True  # closed meanwhile: nothing replaces it; or another item's callback replaced it already
            if not self._progress:
                return False
            self._progress = False
            self._executor = self._start()
        broken.shutdown(wait=False, cancel_futures=True)
        return True

    def close(self, wait: bool = True) -> None:
        """Cancel what is queued; `wait`: until the items running finish and the workers end, else
        the workers are killed, and the replay children they hold with them (an interrupted search:
        what they run would be thrown away, and a replay may run for minutes; upstream's GLM-5 study
        (examples/glm5_b200_72.yaml), stopped 40 s in, was still waiting for its first round 2
        minutes later). Their items end cancelled."""
        with self._lock:  # a break being healed meanwhile either ends before, or sees it closed
            self._closed = True
            executor = self._executor
        workers = list((executor._processes or {}).values())  # CPython's own table of them, emptied by shutdown
        executor.shutdown(wait=wait, cancel_futures=True)
        if not wait:
            for process in workers:
                with contextlib.suppress(OSError):
                    process.kill()


def _ready() -> None:
    """A probe: it returns once a worker has come up."""


def _worker_setup(caller: int, preload: Callable[[], None] | None, niceness: int) -> None:
    """Ctrl-C reaches every process of the terminal's group: workers ignore it, so the caller
    alone decides (it cancels what is queued and keeps what finished) instead of the pool dying.
    A worker whose caller is gone (killed with SIGKILL, say) ends itself within a second
    instead of living on as an orphan. Then the pool's `preload`, in every worker; it is only a
    head start (what it prepares, the first item would), so its failure does not end the worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if niceness:
        os.nice(niceness)
    threading.Thread(target=_exit_with, args=(caller, os.getppid()), daemon=True, name="spica-orphan-watch").start()
    if preload is not None:
        try:
            preload()
        except Exception:  # noqa: BLE001 - see above
            logging.getLogger(__name__).debug("worker preload failed", exc_info=True)


def _exit_with(caller: int, parent: int) -> None:
    """Ends this worker once its caller or its parent is gone. A spawned worker's parent is the
    caller. A forked one's is the caller's forkserver, which outlives the caller until its
    workers end (they hold it open), so they watch the caller itself."""
    while os.getppid() == parent and _exists(caller):
        time.sleep(ORPHAN_POLL_SECONDS)
    os._exit(1)


def _exists(pid: int) -> bool:
    """The process runs: not gone, and not a zombie (a caller killed and not yet reaped by its
    own parent, which may be waiting for this worker to close the output they share)."""
    if Path("/proc/self/stat").exists():
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    try:  # no /proc (not Linux): a zombie counts as running
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def local_pool(parallel_evals: int, per_round: int) -> EvaluationPool:
    """docs/search.md step 5: min(parallel_evals, per_round) workers, only when both exceed 1.
    Each worker gets ready to replay as it starts (its replay child running: see
    spica/evaluation/replay.py), at WORKER_NICENESS."""
    from spica.evaluation.evaluate import prepare_worker
    from spica.evaluation.replay import WORKER_IMPORTS

    workers = min(parallel_evals, per_round)
    if parallel_evals > 1 and per_round > 1:
        return ProcessPool(workers, preload=prepare_worker, imports=WORKER_IMPORTS, niceness=WORKER_NICENESS)
    return InlinePool()
