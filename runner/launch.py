"""Run a compiled plan as a submitit job: on local processes or a SLURM node, inside Spica's
self-contained image by default (localhost/spica:latest; runner/container.py), or on the host's
venv with container_image=None.

    job = submit_plan("plan.json", "out/", cluster="slurm", slurm_partition="debug")
    results_dir = collect(job)

Preemption and time limits (SLURM): the job is Checkpointable, so submitit requeues the
same call (always on preemption, up to max_num_timeout times on a time-out), and
`run_plan_file` picks up from what out_dir already holds instead of re-running
finished evaluations.
"""

from __future__ import annotations

import os
from pathlib import Path

import submitit
from submitit.core.utils import FailedJobError, UncompletedJobError

import yaml

from runner.container import Container, ContainerEngine, ContainerMode, ensure_image, job_mounts
from runner.executors import make_executor
from spica.config.executors import DEFAULT_IMAGE


class PlanJobFailed(RuntimeError):
    """A plan job ended without a results directory."""


class PlanRun(submitit.helpers.Checkpointable):
    """The job itself. Lives in the installed package (submitit pickles it by reference:
    a function from __main__ fails with NameError on the node)."""

    def __call__(self, plan_path: str, out_dir: str) -> str:
        return run_plan_file(plan_path, out_dir)


def run_plan_file(plan_path: str, out_dir: str) -> str:
    """Run a verified plan and write its results folder; returns that folder."""
    from spica.plan import load_plan  # imported in the job only: the search stack is heavy

    plan = load_plan(plan_path)  # refuse a bad plan before loading the search
    from spica.search import run_smart_search

    return str(run_smart_search(plan, results_dir=out_dir).results_dir)


def submit_plan(
    plan_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    cluster: str = "local",
    slurm_partition: str | None = None,
    container_image: str | None = DEFAULT_IMAGE,
    container_engine: ContainerEngine = "podman",
    container_mode: ContainerMode = "self-contained",
    timeout_min: int = 120,
    cpus_per_task: int = 2,
    mem_gb: float | None = None,
    max_num_timeout: int = 3,
    signal_delay_s: int | None = None,
    mounts: tuple[str | os.PathLike[str], ...] = (),
    folder: str | os.PathLike[str] | None = None,
) -> submitit.Job[str]:
    """Submit `run_plan_file(plan_path, out_dir)`; returns the submitit job.

    cluster: where it runs, an executor of spica/config/executors.py (local, slurm).
    container_image: the image the job runs in (default Spica's self-contained image; a podman
    image missing from this host is a one-line error before anything is submitted); None: the
    host's venv. container_mode="shared-fs": an interpreter image with the repo and venv mounted.

    folder: submitit's job files and logs (default <out_dir>/submitit). In a container the job
    sees the plan file and its trace read-only, out_dir, folder and the search's caches
    read-write, and nothing else; mounts: more host paths it may read.
    """
    plan = Path(plan_path).resolve()
    if not plan.is_file():
        raise FileNotFoundError(f"plan_path={str(plan_path)!r}: no such file")
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    job_folder = Path(folder).resolve() if folder else out / "submitit"
    container = (
        Container(container_image, container_engine, container_mode,
                  job_mounts(container_mode, reads=(plan, *_trace_of(plan), *mounts), writes=(out, job_folder)),
                  workdir=str(out))
        if container_image is not None else None
    )
    ensure_image(container, cluster=cluster, setting="container_image", host="set container_image=None")
    executor = make_executor(
        job_folder, cluster=cluster, timeout_min=timeout_min, slurm_partition=slurm_partition,
        container=container, cpus_per_task=cpus_per_task, mem_gb=mem_gb,
        job_name=f"spica-{plan.stem}", max_num_timeout=max_num_timeout, signal_delay_s=signal_delay_s,
    )
    return executor.submit(PlanRun(), str(plan), str(out))


def _trace_of(plan: Path) -> tuple[str, ...]:
    """The trace file a plan replays, if it names one (the job checks the rest of the plan)."""
    try:
        data = yaml.safe_load(plan.read_text())
        trace = data["config"]["workload"].get("trace_path")
    except (OSError, yaml.YAMLError, TypeError, KeyError, AttributeError):
        return ()
    return (trace,) if isinstance(trace, str) and Path(trace).is_file() else ()


def collect(job: submitit.Job[str]) -> Path:
    """Wait for a plan job and return its results directory; a failure becomes one line
    naming the job, the error and where its log is."""
    try:
        return Path(job.result())
    except (FailedJobError, UncompletedJobError) as error:
        raise PlanJobFailed(f"plan job {job.job_id} failed: {_last_error_line(error)} (log: {job.paths.stderr})") from error


def _last_error_line(error: Exception) -> str:
    """The job's own exception line: submitit puts the job's traceback between dashed rules,
    followed by where the logs are."""
    parts = str(error).split("-" * 22)
    body = parts[1] if len(parts) >= 3 else parts[0]
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__
