"""Executors by name: where candidate replays and launched jobs run.

One record per executor holds every fact Spica uses about it: the model of its own keys in the
config's `evaluation` block, its evaluation pool, the submitit executor plan jobs, probes and
Hydra multirun jobs run on, and the container engines its jobs can enter. `evaluation.executor`,
the command's pool, `runner.launch.submit_plan(cluster=...)`, `python -m runner.probe --cluster`
and `hydra/launcher=spica_<name>` all read `EXECUTORS`, so adding an executor is an entry here
plus its own module. An entry names its builders by import path (spica/core/lazy.py): runner/
reads this registry, and checking a config never imports runner/ or submitit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

from pydantic import BaseModel

from spica.config.fields import Frozen, PositiveInt


DEFAULT_IMAGE = "localhost/spica:latest"
"""Spica's self-contained image (containers/build-image.sh builds it and moves this tag): where
plan jobs, SLURM evaluation workers and Hydra multirun jobs run unless told to use another image
or (None) the host's venv."""


class LocalSettings(Frozen):
    """Spica's own process pool on this machine (`sweep.parallel_evals` workers): nothing to set."""


class SlurmSettings(Frozen):
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
    jobs: str
    """Import path of (job folder, runner.executors.JobSpec) → the submitit executor of plan jobs,
    probes and Hydra multirun jobs (runner.executors.make_executor checks the spec first)."""
    pool: str | None = None
    """Import path of the evaluation pool (spica.search.pool's protocol), called as
    (its job folder, mounts=host paths a job reads, **its settings); None: Spica's own process pool."""
    container_engines: tuple[str, ...] = ("podman",)
    """How its jobs may enter a container (runner/container.py)."""


EXECUTORS: Mapping[str, Executor] = {
    entry.name: entry
    for entry in (
        Executor("local", LocalSettings, "runner.executors:local_jobs"),
        # pyxis is a SLURM plugin: srun itself enters the container
        Executor("slurm", SlurmSettings, "runner.executors:slurm_jobs", "runner.slurm_pool:SlurmPool",
                 container_engines=("podman", "pyxis")),
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
