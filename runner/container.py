"""How a submitit job enters one of Spica's images, seeing only what it needs.

Two modes (see the Dockerfile header):
- self-contained (default): the image holds Spica and its dependencies; the job runs the
  image's python and sees only its own files: what it reads (the plan, the trace) read-only,
  what it writes (results folder, submitit's job folder) and the search's caches read-write.
- shared-fs: the image holds the interpreter only; the repo and the venv are mounted
  read-only too, as on a site whose venv lives on a shared file system.
Every path is mounted at its host path, so submitit's pickled arguments mean the same inside.

- podman: the job's python command becomes `podman run ... IMAGE python` (local processes,
  or SLURM nodes with podman). No network, every capability dropped, no privilege gain, a
  read-only root file system, a non-root user: the image's `spica` user when the caller is
  root (podman hands it the writable mounts with `:U`), else the caller itself (rootless,
  `--userns=keep-id`, so the files stay the caller's).
- pyxis: srun itself enters the container (`--container-image`, `--container-mounts`), as on
  SLURM clusters with NVIDIA's pyxis/enroot plugin; enroot runs as the calling user.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from spica.core.errors import UserError
from spica.core.paths import cache_root
from spica.evaluation import clock

ContainerEngine = Literal["podman", "pyxis"]
ContainerMode = Literal["self-contained", "shared-fs"]

IMAGE_PYTHON = "/opt/spica/bin/python"  # the self-contained image's venv (Dockerfile)
IMAGE_USER = "10001:10001"  # its non-root `spica` user (Dockerfile)
# What a search reads and writes under the cache: KV capacities, timing tables, predictor
# sub-sweeps, JAX's compiled code, the held replay clock's library (built on this host: the image
# has no compiler; spica/evaluation/clock.py). Not the rest of it (the wheel cache, test venvs).
CACHE_PARTS = ("clock", "jax", "predictors", "space", "timing")

# Environment a job needs inside the container: submitit and SLURM describe the job through
# these (job id, task rank, requeue), SPICA_* carries Spica's own settings.
_PASSED_ENV = ("SLURM_*", "SUBMITIT_*", "SPICA_*")


def cache_dir() -> Path:
    """Spica's cache on this host (the same rule as the search's: $SPICA_CACHE_DIR or ~/.cache/spica)."""
    return cache_root().resolve()


def _check(field: str, value: str, choices: object) -> None:
    if value not in get_args(choices):
        raise ValueError(f"{field}={value!r} is not supported; allowed: {', '.join(get_args(choices))}")


@dataclass(frozen=True)
class Mount:
    """A host path mounted at the same path inside the container."""

    path: str
    writable: bool = False


def job_mounts(
    mode: ContainerMode,
    *,
    reads: tuple[str | os.PathLike[str], ...] = (),
    writes: tuple[str | os.PathLike[str], ...] = (),
) -> tuple[Mount, ...]:
    """The mounts of one job: `reads` read-only, `writes` and the search's caches read-write,
    plus (shared-fs) the repo and the venv read-only. A path inside a mount of the same kind
    is dropped; parents come first, so a read-only file inside a writable folder stays read-only.
    The caches are made, and the kv_router clock library built into them, before they are mounted:
    a job in an image without a compiler finds the library there (spica/evaluation/clock.py)."""
    _check("container_mode", mode, ContainerMode)
    caches = [cache_dir() / part for part in CACHE_PARTS]
    for folder in caches:
        folder.mkdir(parents=True, exist_ok=True)
    clock.library()
    code = (Path(__file__).resolve().parents[1], Path(sys.prefix).resolve()) if mode == "shared-fs" else ()
    wanted = {Mount(str(Path(p).resolve()), False) for p in (*reads, *code)}
    wanted |= {Mount(str(Path(p).resolve()), True) for p in (*writes, *caches)}
    kept = [m for m in wanted
            if not any(o != m and o.writable == m.writable and Path(m.path).is_relative_to(o.path) for o in wanted)]
    return tuple(sorted(kept, key=lambda m: m.path))


@dataclass(frozen=True)
class Container:
    """An image, how to enter it, and what to mount into it (same path inside)."""

    image: str
    engine: ContainerEngine = "podman"
    mode: ContainerMode = "self-contained"
    mounts: tuple[Mount, ...] = ()
    workdir: str | None = None

    def __post_init__(self) -> None:
        _check("container_engine", self.engine, ContainerEngine)
        _check("container_mode", self.mode, ContainerMode)
        if not self.image:
            raise ValueError("container_image is empty; give an image name, e.g. localhost/spica:latest")

    def python(self) -> str:
        """The python the job runs: the image's own, or (shared-fs) the mounted venv's."""
        return IMAGE_PYTHON if self.mode == "self-contained" else sys.executable

    def python_command(self, uid: int | None = None) -> str:
        """The shell command submitit runs as 'python'. podman: python inside the container,
        as a non-root user (see the module docstring; uid: the caller's, default os.getuid())."""
        if self.engine != "podman":
            return shlex.quote(self.python())
        rootful = (os.getuid() if uid is None else uid) == 0
        argv = ["podman", "run", "--rm", "--init", "--network=none", "--cap-drop=all",
                "--security-opt=no-new-privileges", "--read-only"]
        argv += [f"--user={IMAGE_USER}"] if rootful else ["--userns=keep-id"]
        for mount in self.mounts:
            options = ("rw,U" if rootful else "rw") if mount.writable else "ro"
            argv.append(f"--volume={mount.path}:{mount.path}:{options}")
        argv += [f"--env={pattern}" for pattern in _PASSED_ENV]
        argv += [f"--env=SPICA_CACHE_DIR={cache_dir()}", "--env=HOME=/tmp"]
        if self.mode == "shared-fs" and os.environ.get("PYTHONPATH"):
            argv.append("--env=PYTHONPATH")  # a source checkout used without installing it
        if self.workdir:
            argv.append(f"--workdir={self.workdir}")
        argv += [f"--entrypoint={self.python()}", self.image]
        return shlex.join(argv)

    def srun_args(self) -> list[str]:
        """Extra srun arguments (pyxis): srun starts the job step inside the container."""
        if self.engine != "pyxis":
            return []
        args = [f"--container-image={self.image}", "--no-container-mount-home"]
        if self.mounts:
            args.append("--container-mounts=" + ",".join(
                f"{m.path}:{m.path}" + ("" if m.writable else ":ro") for m in self.mounts))
        if self.workdir:
            args.append(f"--container-workdir={self.workdir}")
        return args


class ImageMissing(UserError):
    """The image a job would run in is not on this host; one line naming the setting and the fixes."""


def _podman_has(image: str) -> bool | None:
    """Whether podman's store on this host holds `image`; None: no podman here."""
    if shutil.which("podman") is None:
        return None
    try:
        done = subprocess.run(["podman", "image", "exists", image], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise ImageMissing(f"podman image exists {image} did not answer in 60 s; check podman on this host") from None
    if done.returncode > 1:
        detail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise ImageMissing(f"podman image exists {image} failed: {detail}")
    return done.returncode == 0


def ensure_image(container: Container | None, *, cluster: str, setting: str, host: str) -> None:
    """Before any job is submitted: the podman image the jobs run in is in this host's store.
    Otherwise one line naming `setting`, how to build Spica's image and how to run on the host
    instead (`host`, e.g. "set container_image=None"). A SLURM job's image is checked only when this
    host has podman (the nodes may have it when the login node does not); pyxis images are
    enroot's to find."""
    if container is None or container.engine != "podman":
        return
    present = _podman_has(container.image)
    if present is None and cluster != "local":
        return
    if not present:
        where = "podman is not installed on this host" if present is None else "not in podman's store on this host"
        raise ImageMissing(f"{setting}={container.image}: {where}; build Spica's image with `bash containers/build-image.sh` "
                           f"(root; it tags localhost/spica:latest), give another image, or {host} to run on the host")
