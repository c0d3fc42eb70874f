"""One place that turns (cluster, partition, container, limits) into a submitit executor,
shared by plan launches and the SLURM evaluation pool."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

import submitit

from runner.container import Container

Cluster = Literal["local", "slurm"]


def make_executor(
    folder: Path,
    *,
    cluster: Cluster,
    timeout_min: int,
    slurm_partition: str | None = None,
    container: Container | None = None,
    cpus_per_task: int = 1,
    mem_gb: float | None = None,
    job_name: str = "spica",
    max_num_timeout: int = 3,
    signal_delay_s: int | None = None,
) -> submitit.Executor:
    """A local or SLURM executor whose jobs run the venv python, in the container if given.

    max_num_timeout: how many times a job that hits its time limit is requeued (SLURM; a
    preempted job is always requeued). Requeue re-runs the job's callable with the same
    arguments, so callables must resume from what they already wrote (or be pure).
    signal_delay_s (SLURM): how long before the time limit the job is signalled to requeue
    itself (submitit's default: 90 s).
    """
    if cluster not in get_args(Cluster):
        raise ValueError(f"cluster={cluster!r} is not supported; allowed: {', '.join(get_args(Cluster))}")
    if container and container.engine == "pyxis" and cluster != "slurm":
        raise ValueError("container_engine='pyxis' needs cluster='slurm' (pyxis is a SLURM plugin)")
    python = container.python_command() if container else None
    if cluster == "local":
        local = submitit.LocalExecutor(folder, python=python, max_num_timeout=max_num_timeout)
        local.update_parameters(timeout_min=timeout_min)
        return local
    slurm = submitit.SlurmExecutor(folder, python=python, max_num_timeout=max_num_timeout)
    optional = {
        "partition": slurm_partition,
        "mem": f"{int(mem_gb * 1024)}M" if mem_gb else None,
        "srun_args": container.srun_args() if container else None,
        "signal_delay_s": signal_delay_s,
    }
    slurm.update_parameters(
        time=timeout_min,
        cpus_per_task=cpus_per_task,
        job_name=job_name,
        **{key: value for key, value in optional.items() if value is not None},
    )
    return slurm
