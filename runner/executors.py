"""One place that turns (executor, partition, container, limits) into a submitit executor,
shared by plan launches, probes, the Hydra launchers and the SLURM evaluation pool. Which
executors exist, and which builder each one uses, is the registry's (spica/config/executors.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import submitit

from runner.container import Container
from spica.config.executors import EXECUTORS
from spica.core.lazy import load


@dataclass(frozen=True)
class JobSpec:
    """What every job of one submitit executor gets; a builder ignores what its executor lacks."""

    timeout_min: int
    partition: str | None = None
    container: Container | None = None
    cpus_per_task: int = 1
    mem_gb: float | None = None
    job_name: str = "spica"
    max_num_timeout: int = 3
    signal_delay_s: int | None = None
    array_parallelism: int | None = None

    @property
    def python(self) -> str | None:
        """The command submitit runs as python: the container's, or (None) the venv's."""
        return self.container.python_command() if self.container else None


def make_executor(
    folder: Path,
    *,
    cluster: str,
    timeout_min: int,
    slurm_partition: str | None = None,
    container: Container | None = None,
    cpus_per_task: int = 1,
    mem_gb: float | None = None,
    job_name: str = "spica",
    max_num_timeout: int = 3,
    signal_delay_s: int | None = None,
    array_parallelism: int | None = None,
) -> submitit.Executor:
    """The submitit executor of `cluster` (an executor's name), whose jobs run the venv python,
    in the container if given.

    max_num_timeout: how many times a job that hits its time limit is requeued (SLURM; a
    preempted job is always requeued). Requeue re-runs the job's callable with the same
    arguments, so callables must resume from what they already wrote (or be pure).
    signal_delay_s (SLURM): how long before the time limit the job is signalled to requeue
    itself (submitit's default: 90 s). array_parallelism (SLURM): how many tasks of one
    map_array run at once.
    """
    entry = EXECUTORS.get(cluster)
    if entry is None:
        raise ValueError(f"cluster={cluster!r} is not supported; allowed: {', '.join(EXECUTORS)}")
    if container and container.engine not in entry.container_engines:
        hosts = " or ".join(repr(name) for name, other in EXECUTORS.items() if container.engine in other.container_engines)
        raise ValueError(f"container_engine={container.engine!r} needs cluster={hosts}")
    spec = JobSpec(timeout_min=timeout_min, partition=slurm_partition, container=container, cpus_per_task=cpus_per_task,
                   mem_gb=mem_gb, job_name=job_name, max_num_timeout=max_num_timeout, signal_delay_s=signal_delay_s,
                   array_parallelism=array_parallelism)
    return load(entry.jobs)(Path(folder), spec)


def local_jobs(folder: Path, spec: JobSpec) -> submitit.Executor:
    """Jobs as processes of this machine."""
    local = submitit.LocalExecutor(folder, python=spec.python, max_num_timeout=spec.max_num_timeout)
    local.update_parameters(timeout_min=spec.timeout_min)
    return local


def slurm_jobs(folder: Path, spec: JobSpec) -> submitit.Executor:
    """Jobs as SLURM jobs; pyxis enters the container through srun's own arguments."""
    slurm = submitit.SlurmExecutor(folder, python=spec.python, max_num_timeout=spec.max_num_timeout)
    optional = {
        "partition": spec.partition,
        "mem": f"{int(spec.mem_gb * 1024)}M" if spec.mem_gb else None,
        "srun_args": spec.container.srun_args() if spec.container else None,
        "signal_delay_s": spec.signal_delay_s,
        "array_parallelism": spec.array_parallelism,
    }
    slurm.update_parameters(
        time=spec.timeout_min,
        cpus_per_task=spec.cpus_per_task,
        job_name=spec.job_name,
        **{key: value for key, value in optional.items() if value is not None},
    )
    return slurm
