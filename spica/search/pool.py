"""Where evaluations run: in this process, in a spawned process pool, or elsewhere.

A pool is any object with `submit(fn, items) -> list[Future]` (one future per item, in item
order) and `close()`; `outcome(future)` reads a future as the item's result or the exception
it raised, so one bad candidate never sinks a search. Futures let the search keep each branch's
rounds going on its own: one branch's study asks while another branch's candidates replay.
runner.slurm_pool.SlurmPool is a pool that fans out over SLURM. The local process pool is
created once per run: workers pay the import of Replay and AI Configurator once, not per
candidate.
"""

from __future__ import annotations

import importlib
import multiprocessing
import signal
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Protocol, Sequence

from spica.errors import DeadPoolError

DEAD_POOL_MESSAGE = (
    "the evaluation worker pool died. Worker processes are spawned and re-import your script: "
    "if you call run_smart_search from a script, put the call under `if __name__ == \"__main__\":`. "
    "Otherwise a worker ran out of memory; lower sweep.parallel_evals."
)


class EvaluationPool(Protocol):
    def submit(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Future]: ...

    def close(self) -> None: ...


def outcome(future: Future) -> Any:
    """The item's result, or the exception it raised; a dead pool raises DeadPoolError."""
    try:
        return future.result()
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

    def close(self) -> None:
        return None


class ProcessPool:
    """A spawn-context process pool; spawn because Replay's Rust runtime is not fork-safe.

    `preload` (a module name) starts every worker at once and imports that module in it, so
    the workers' start-up overlaps the caller's own set-up instead of the first round.
    """

    def __init__(self, workers: int, preload: str | None = None):
        self.workers = workers
        self._executor = ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn"), initializer=_leave_interrupts_to_the_caller
        )
        if preload is not None:
            self.submit(_preload, [preload] * workers)

    def submit(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Future]:
        try:
            return [self._executor.submit(fn, item) for item in items]
        except (BrokenProcessPool, RuntimeError) as exc:
            raise DeadPoolError(DEAD_POOL_MESSAGE) from exc

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


def _preload(module: str) -> None:
    importlib.import_module(module)


def _leave_interrupts_to_the_caller() -> None:
    """Ctrl-C reaches every process of the terminal's group: workers ignore it, so the caller
    alone decides (it cancels what is queued and keeps what finished) instead of the pool dying."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def local_pool(parallel_evals: int, per_round: int) -> EvaluationPool:
    """docs/search.md step 5: min(parallel_evals, per_round) workers, only when both exceed 1."""
    workers = min(parallel_evals, per_round)
    return ProcessPool(workers, preload="spica.evaluation.evaluate") if parallel_evals > 1 and per_round > 1 else InlinePool()
