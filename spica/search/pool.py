"""Where evaluations run: in this process, in a spawned process pool, or elsewhere.

Any object with `map(fn, items) -> list` (results in order, an exception inside one item
returned as that exception) and `close()` is a pool; runner.slurm_pool.SlurmPool is one that
fans out over SLURM. The local process pool is created once per run: workers pay the import
of Replay and AI Configurator once, not per candidate.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Protocol, Sequence

from spica.errors import DeadPoolError

DEAD_POOL_MESSAGE = (
    "the evaluation worker pool died. Worker processes are spawned and re-import your script: "
    "if you call run_smart_search from a script, put the call under `if __name__ == \"__main__\":`. "
    "Otherwise a worker ran out of memory; lower sweep.parallel_evals."
)


class EvaluationPool(Protocol):
    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]: ...

    def close(self) -> None: ...


class InlinePool:
    """Evaluate in this process, one after another (parallel_evals or per_round is 1)."""

    workers = 1

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        results = []
        for item in items:
            try:
                results.append(fn(item))
            except Exception as exc:  # one candidate's bug must not end the search
                results.append(exc)
        return results

    def close(self) -> None:
        return None


class ProcessPool:
    """A spawn-context process pool; spawn because Replay's Rust runtime is not fork-safe."""

    def __init__(self, workers: int):
        self.workers = workers
        self._executor = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        try:
            futures = [self._executor.submit(fn, item) for item in items]
        except (BrokenProcessPool, RuntimeError) as exc:
            raise DeadPoolError(DEAD_POOL_MESSAGE) from exc
        results: list[Any] = []
        for future in futures:
            try:
                results.append(future.result())
            except BrokenProcessPool as exc:
                raise DeadPoolError(DEAD_POOL_MESSAGE) from exc
            except Exception as exc:
                results.append(exc)
        return results

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


def local_pool(parallel_evals: int, per_round: int) -> EvaluationPool:
    """SPEC §3 step 5: min(parallel_evals, per_round) workers, only when both exceed 1."""
    workers = min(parallel_evals, per_round)
    return ProcessPool(workers) if parallel_evals > 1 and per_round > 1 else InlinePool()
