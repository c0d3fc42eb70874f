"""Executors by name: where candidate replays and launched jobs run.

One record per executor holds every fact Spica uses about it: the model of its own keys in the
config's `evaluation` block, its evaluation pool, the submitit executor plan jobs, probes and
Hydra multirun jobs run on, and the container engines its jobs can enter. `evaluation.executor`,
the command's pool, `runner.launch.submit_plan(cluster=...)`, `python -m runner.probe --cluster`
and `hydra/launcher=spica_<name>` all read `EXECUTORS`, so adding an executor is an entry here
plus its own module. Factories import runner/ when called: checking a config never imports
submitit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping

from pydantic import BaseModel

from spica.config.schema import PositiveInt, _Frozen

if TYPE_CHECKING:
    import submitit

    from runner.executors import JobSpec
    from spica.search.pool import EvaluationPool


DEFAULT_IMAGE = "localhost/spica:latest"
"""Spica's self-contained image (containers/build-image.sh builds it and moves this tag): where
plan jobs, SLURM evaluation workers and Hydra multirun jobs run unless told to use another image
or (None) the host's venv."""


class LocalSettings(_Frozen):
    """Spica's own process pool on this machine (`sweep.parallel_evals` workers): nothing to set."""


class SlurmSettings(_Frozen):
    """Each round's replays as one SLURM job array; the names are runner.slurm_pool.SlurmPool's."""

    slurm_partition: str | None = None  # null: the cluster's default partition
    max_parallel: PositiveInt = 16  # array tasks running at once
    container_image: str | None = DEFAULT_IMAGE  # each evaluation runs inside this image (podman); null: on the host's venv
    container_mode: Literal["self-contained", "shared-fs"] = "self-contained"  # shared-fs: mount the repo and venv


@dataclass(frozen=True)
class Executor:
    """Everything Spica knows about one executor."""

    name: str
    """The config's `evaluation.executor`, runner's `cluster`, and the Hydra launcher `spica_<name>`."""
    settings: type[BaseModel]
    """Its own keys of the `evaluation` block, their defaults and rules."""
    jobs: Callable[[Path, "JobSpec"], "submitit.Executor"]
    """(job folder, what every job gets) → the submitit executor of plan jobs, probes and Hydra
    multirun jobs (runner.executors.make_executor checks the spec first)."""
    pool: Callable[[BaseModel, Path, tuple[str, ...]], "EvaluationPool"] | None = None
    """(its settings, its job folder, host paths a job reads) → the evaluation pool; None:
    Spica's own process pool."""
    container_engines: tuple[str, ...] = ("podman",)
    """How its jobs may enter a container (runner/container.py)."""


def _local_jobs(folder: Path, spec: JobSpec) -> submitit.Executor:
    from runner.executors import local_jobs

    return local_jobs(folder, spec)


def _slurm_jobs(folder: Path, spec: JobSpec) -> submitit.Executor:
    from runner.executors import slurm_jobs

    return slurm_jobs(folder, spec)


def _slurm_pool(settings: BaseModel, folder: Path, mounts: tuple[str, ...]) -> EvaluationPool:
    from runner.slurm_pool import SlurmPool

    return SlurmPool(folder, mounts=mounts, **settings.model_dump())


EXECUTORS: Mapping[str, Executor] = {
    entry.name: entry
    for entry in (
        Executor("local", LocalSettings, _local_jobs),
        # pyxis is a SLURM plugin: srun itself enters the container
        Executor("slurm", SlurmSettings, _slurm_jobs, _slurm_pool, container_engines=("podman", "pyxis")),
    )
}
NAMES: tuple[str, ...] = tuple(EXECUTORS)


def settings_fields() -> dict[str, Any]:
    """Every executor's own keys as `create_model` fields, in registry order: the `evaluation`
    block is flat (conf/ and the command line write `evaluation.max_parallel`). A key two
    executors share is declared by the first; each executor's model still checks its own."""
    fields: dict[str, Any] = {}
    for entry in EXECUTORS.values():
        for name, field in entry.settings.model_fields.items():
            fields.setdefault(name, (field.annotation, field))
    return fields
