"""Where did a job really run, and with what? A tiny job that reports its interpreter, host,
SLURM job, container, user, capabilities, network interfaces and host mounts, to check a cluster or
container setup before launching real work:

    python -m runner.probe --cluster slurm [--partition debug] [--container-image IMAGE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import sys
from pathlib import Path
from tempfile import mkdtemp

from runner.container import Container, ImageMissing, ensure_image, job_mounts
from runner.executors import make_executor
from spica.config.executors import EXECUTORS


def describe_environment() -> dict[str, str]:
    """Facts about the process this runs in (call it inside a job)."""
    pretty = next((line.split("=", 1)[1].strip().strip('"') for line in _lines("/etc/os-release")
                   if line.startswith("PRETTY_NAME=")), "")
    return {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "venv": sys.prefix,
        "hostname": socket.gethostname(),
        "os": pretty,
        "slurm_job_id": os.environ.get("SLURM_JOB_ID", ""),
        # podman (and enroot, systemd-nspawn) tell a process it is inside a container this way
        "container": os.environ.get("container", ""),
        "spica_code": str(Path(__file__).resolve().parents[1]),
        "uid": str(os.getuid()),
        "capabilities": _status_field("CapEff"),  # effective capability mask, hex
        "network": " ".join(sorted(line.split(":")[0].strip() for line in _lines("/proc/net/dev")[2:])),
        "host_mounts": " ".join(_same_path_mounts()),
    }


def _same_path_mounts() -> list[str]:
    """Host paths bind-mounted at their own path (how runner/container.py mounts), as path:ro|rw."""
    found = []
    for line in _lines("/proc/self/mountinfo"):
        fields = line.split()
        root, point, options = fields[3], fields[4], fields[5].split(",")
        if root == point != "/":
            found.append(f"{point}:{'ro' if 'ro' in options else 'rw'}")
    return sorted(found)


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def _status_field(name: str) -> str:
    return next((line.split(":", 1)[1].strip() for line in _lines("/proc/self/status") if line.startswith(f"{name}:")), "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m runner.probe", description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", choices=list(EXECUTORS), default="local")
    parser.add_argument("--partition", default=None)
    parser.add_argument("--container-image", default=None)
    parser.add_argument("--container-engine", choices=["podman", "pyxis"], default="podman")
    parser.add_argument("--container-mode", choices=["self-contained", "shared-fs"], default="self-contained")
    parser.add_argument("--folder", default=None, help="submitit folder (default: a new temp dir)")
    args = parser.parse_args(argv)
    folder = Path(args.folder or mkdtemp(prefix="spica-probe-")).resolve()
    container = (
        Container(args.container_image, args.container_engine, args.container_mode,
                  job_mounts(args.container_mode, writes=(folder,)), str(folder))
        if args.container_image else None
    )
    try:
        ensure_image(container, cluster=args.cluster, setting="--container-image", host="leave out --container-image")
    except ImageMissing as error:
        parser.exit(2, f"{parser.prog}: {error}\n")
    executor = make_executor(folder, cluster=args.cluster, timeout_min=5,
                             slurm_partition=args.partition, container=container, job_name="spica-probe")
    job = executor.submit(describe_environment)
    print(json.dumps({"job_id": job.job_id, **job.result()}, indent=2))


if __name__ == "__main__":
    main()
