"""How a submitit job enters Spica's runtime container.

The image carries the interpreter only; the repo, the venv and the job's folders are
bind-mounted at their host paths, so the job runs the same venv python at the same path
inside as outside (see the Dockerfile header).
- podman: the job's python command becomes `podman run ... IMAGE <venv python>` (local
  processes, or SLURM nodes with podman installed).
- pyxis: srun itself enters the container (`--container-image`, `--container-mounts`),
  as on SLURM clusters with NVIDIA's pyxis/enroot plugin.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

ContainerEngine = Literal["podman", "pyxis"]

# Environment a job needs inside the container: submitit and SLURM describe the job through
# these (job id, task rank, requeue), SPICA_* carries Spica's own settings, PYTHONPATH a
# source checkout used without installing it.
_PASSED_ENV = ("SLURM_*", "SUBMITIT_*", "SPICA_*", "PYTHONPATH")


def runtime_mounts(*paths: str | os.PathLike[str]) -> tuple[str, ...]:
    """Host directories a containerised job needs: the repo (Spica's code), the venv
    (sys.prefix) and the given paths; nested paths are dropped."""
    repo = Path(__file__).resolve().parents[1]
    wanted = {Path(p).resolve() for p in (repo, sys.prefix, *paths)}
    kept = [p for p in wanted if not any(p != q and p.is_relative_to(q) for q in wanted)]
    return tuple(sorted(str(p) for p in kept))


@dataclass(frozen=True)
class Container:
    """Spica's runtime image and the host paths to mount into it (same path inside)."""

    image: str
    engine: ContainerEngine = "podman"
    mounts: tuple[str, ...] = ()
    workdir: str | None = None

    def __post_init__(self) -> None:
        if self.engine not in get_args(ContainerEngine):
            allowed = ", ".join(get_args(ContainerEngine))
            raise ValueError(f"container_engine={self.engine!r} is not supported; allowed: {allowed}")
        if not self.image:
            raise ValueError("container_image is empty; give an image name, e.g. localhost/spica-runtime:latest")

    def python_command(self, python: str = sys.executable) -> str:
        """The shell command submitit runs as 'python' (podman): python inside the container."""
        if self.engine != "podman":
            return shlex.quote(python)
        argv = ["podman", "run", "--rm", "--init", "--network=host"]
        argv += [f"--volume={m}:{m}" for m in self.mounts]
        argv += [f"--env={pattern}" for pattern in _PASSED_ENV]
        if self.workdir:
            argv.append(f"--workdir={self.workdir}")
        argv += [self.image, python]
        return shlex.join(argv)

    def srun_args(self) -> list[str]:
        """Extra srun arguments (pyxis): srun starts the job step inside the container."""
        if self.engine != "pyxis":
            return []
        args = [f"--container-image={self.image}"]
        if self.mounts:
            args.append("--container-mounts=" + ",".join(f"{m}:{m}" for m in self.mounts))
        if self.workdir:
            args.append(f"--container-workdir={self.workdir}")
        return args
