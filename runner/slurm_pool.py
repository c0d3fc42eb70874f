"""A submitit-backed evaluation pool for the distributed engine: the items of one `submit`
become the tasks of one SLURM job array, at most `max_parallel` running at once.

Pool protocol (spica.search.pool): `submit(fn, items)` returns one future per item, in item
order; a future holds the item's result, or the exception it raised as the result itself (its
traceback attached as a note), so one bad candidate never sinks a round; `close()` cancels
what is still running. `fn` must be importable from the installed package
(submitit pickles functions by reference; one from __main__ fails with NameError on the node)
and must be pure: an item is re-run from scratch when its job is requeued.

Interruption: a preempted task is requeued by SLURM and re-runs its item; a task that hits
`timeout_min` is not requeued, its item comes back as submitit's UncompletedJobError (the
per-candidate time cap). submitit counts a signal after min(0.8*T, T - 10 min) of a T-minute
limit as a time-out, so keep timeout_min >= 15 where preemption happens. Task failures outside `fn` (node failure, scancel, out of memory)
come back as FailedJobError / UncompletedJobError, detected through SLURM accounting (sacct).
If the driver itself dies, the running tasks finish on their own; resuming a search without
re-running finished evaluations is the ledger's job, not the pool's.
"""

from __future__ import annotations

import copy
import os
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import submitit

from runner.container import Container, ContainerEngine, ContainerMode, ensure_image, job_mounts
from runner.executors import make_executor
from spica.config.executors import DEFAULT_IMAGE


class _ReturnExceptions(submitit.helpers.Checkpointable):
    """Runs fn(item) in the task and returns what it raised instead of raising it."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, item: Any) -> Any:
        try:
            return self.fn(item)
        except Exception as error:  # noqa: BLE001 - the protocol returns every failure
            return _transportable(error)


def _transportable(error: Exception) -> Exception:
    """The error with its traceback as a note, or a RuntimeError naming it when the error
    itself would not survive the trip back (unpicklable arguments, custom __init__)."""
    where = f"raised in SLURM job {os.environ.get('SLURM_JOB_ID', '?')}:\n"
    note = where + "".join(traceback.format_exception(error))
    try:
        copy.deepcopy(error)  # rebuilt the way unpickling rebuilds it (its __reduce__), no pickle read
    except Exception:  # noqa: BLE001 - any failure to round-trip means: send a stand-in
        error = RuntimeError(f"{type(error).__name__}: {error}")
    error.add_note(note)
    return error


class SlurmPool:
    """Evaluate items as SLURM array tasks; see the module docstring for the protocol.

    container_image: the image each task runs in (default Spica's self-contained image, checked
    on this host before anything is submitted); None: the host's venv."""

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        slurm_partition: str | None = None,
        max_parallel: int = 16,
        container_image: str | None = DEFAULT_IMAGE,
        container_engine: ContainerEngine = "podman",
        container_mode: ContainerMode = "self-contained",
        timeout_min: int = 30,
        cpus_per_task: int = 1,
        mem_gb: float | None = None,
        mounts: tuple[str | os.PathLike[str], ...] = (),
    ) -> None:
        if max_parallel < 1:
            raise ValueError(f"max_parallel={max_parallel} must be >= 1")
        self.workers = max_parallel  # tasks running at once (the array's parallelism)
        job_folder = Path(folder).resolve()
        container = (
            Container(container_image, container_engine, container_mode,
                      job_mounts(container_mode, reads=mounts, writes=(job_folder,)), workdir=str(job_folder))
            if container_image is not None else None
        )
        ensure_image(container, cluster="slurm", setting="evaluation.container_image", host="set evaluation.container_image=null")
        self._executor = make_executor(
            job_folder, cluster="slurm", timeout_min=timeout_min, slurm_partition=slurm_partition,
            container=container, cpus_per_task=cpus_per_task, mem_gb=mem_gb,
            job_name="spica-eval", max_num_timeout=0, array_parallelism=max_parallel,
        )
        self._running: list[submitit.Job[Any]] = []

    def submit(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Future]:
        """fn over items as one job array; a watcher thread resolves each future as its task ends."""
        if not items:
            return []
        jobs = self._executor.map_array(_ReturnExceptions(fn), list(items))
        futures: list[Future] = [Future() for _ in jobs]
        self._running += jobs
        threading.Thread(target=_watch, args=(jobs, futures), daemon=True).start()
        return futures

    def job_ids(self) -> list[str]:
        """The SLURM ids of the tasks submitted since the last close (e.g. for sacct)."""
        return [job.job_id for job in self._running]

    def close(self, wait: bool = True) -> None:
        """Cancel tasks still queued or running (either way: a job is never waited for)."""
        for job in self._running:
            if not job.done():
                job.cancel(check=False)
        self._running = []

    def __enter__(self) -> SlurmPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _watch(jobs: list[submitit.Job[Any]], futures: list[Future], poll_seconds: float = 1.0) -> None:
    """Resolves each future with its job's outcome as soon as that job ends, in any order."""
    waiting = dict(enumerate(jobs))
    while waiting:
        for index, job in list(waiting.items()):
            try:
                finished = job.done()
            except Exception as error:  # noqa: BLE001 - a status query that fails ends the item
                futures[index].set_result(error)
                del waiting[index]
                continue
            if finished:
                futures[index].set_result(_outcome(job))
                del waiting[index]
        if waiting:
            time.sleep(poll_seconds)


def _outcome(job: submitit.Job[Any]) -> Any:
    try:
        return job.result()
    except Exception as error:  # noqa: BLE001 - infrastructure failures are results too
        return error
