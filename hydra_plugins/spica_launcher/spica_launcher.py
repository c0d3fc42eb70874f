"""Hydra launchers that run each job of a multirun inside one of Spica's images, one per
executor of spica/config/executors.py (`spica_<name>`: SLURM or local processes):

    spica hydra/launcher=spica_slurm hydra.launcher.partition=debug -m workload=chat,summarize
    spica hydra/launcher=spica_local hydra.launcher.container_image=localhost/spica:TAG -m ...

Hydra's own submitit launchers start the job with the host's python, so they cannot enter a
self-contained image. These build their executor with runner.executors (the same one plan
jobs and the SLURM evaluation pool use) and keep Hydra's submitit job side. Hydra finds them
here, in its plugin namespace, and imports this module at start-up: keep it light. A job sees, as
in runner/container.py: conf/ and the trace read-only, the sweep folder and the caches
read-write (results_dir, when given, too).
"""

# No `from __future__ import annotations`: Hydra loads this module outside sys.modules while
# scanning for plugins, and OmegaConf reads the dataclass's annotations as types.
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import BaseSubmititLauncher
from spica.config.executors import DEFAULT_IMAGE, EXECUTORS


@dataclass
class ContainerLauncherConf:
    """The options of hydra/launcher=spica_<executor>; array_parallelism: SLURM only."""

    _target_: str = "hydra_plugins.spica_launcher.spica_launcher.ContainerLauncher"
    cluster: str = "slurm"
    submitit_folder: str = "${hydra.sweep.dir}/.submitit"
    partition: Optional[str] = None
    timeout_min: int = 120
    cpus_per_task: int = 2
    mem_gb: Optional[float] = None
    max_num_timeout: int = 3
    array_parallelism: int = 16
    container_image: str = DEFAULT_IMAGE
    container_engine: str = "podman"
    container_mode: str = "self-contained"
    container_mounts: List[str] = field(default_factory=list)  # more host paths a job may read


class ContainerLauncher(BaseSubmititLauncher):
    """Hydra's submitit job protocol, with the executor from runner.executors in a container."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from runner.container import Container, ensure_image, job_mounts
        from runner.executors import make_executor
        from spica.cli.exits import user_errors
        from spica.cli.hydra_app import CONF_DIR

        assert self.config is not None
        options = dict(self.params)
        sweep_dir = Path(str(self.config.hydra.sweep.dir)).resolve()
        sweep_dir.mkdir(parents=True, exist_ok=True)
        folder = Path(options["submitit_folder"]).resolve()
        workload = self.config.get("workload") or {}
        reads = [CONF_DIR, *options["container_mounts"]]
        if workload.get("trace_path"):
            reads.append(workload["trace_path"])
        writes = [sweep_dir, folder, *([self.config.results_dir] if self.config.get("results_dir") else [])]
        mode = options["container_mode"]
        container = Container(options["container_image"], options["container_engine"], mode,
                              job_mounts(mode, reads=tuple(reads), writes=tuple(writes)), workdir=os.getcwd())
        with user_errors():  # one line and exit 2, as the command's own input errors (Hydra would print a traceback)
            ensure_image(container, cluster=options["cluster"], setting="hydra.launcher.container_image",
                         host=f"use hydra/launcher=submitit_{options['cluster']}")
        executor = make_executor(
            folder, cluster=options["cluster"], timeout_min=options["timeout_min"],
            slurm_partition=options["partition"], container=container, cpus_per_task=options["cpus_per_task"],
            mem_gb=options["mem_gb"], job_name="spica-multirun", max_num_timeout=options["max_num_timeout"],
            array_parallelism=options["array_parallelism"],
        )
        numbers = range(initial_job_idx, initial_job_idx + len(job_overrides))
        jobs = executor.map_array(
            self, [list(o) for o in job_overrides], ["hydra.sweep.dir"] * len(numbers), list(numbers),
            [f"job_id_for_{n}" for n in numbers], [Singleton.get_state()] * len(numbers),
        )
        return [job.result() for job in jobs]


for _name in EXECUTORS:
    ConfigStore.instance().store(group="hydra/launcher", name=f"spica_{_name}", node=ContainerLauncherConf(cluster=_name),
                                 provider="spica")
