"""How a job's python command and srun arguments enter the runtime container."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from runner.container import Container, runtime_mounts

REPO = Path(__file__).resolve().parents[2]


def test_podman_command_runs_the_venv_python_in_the_image_with_same_path_mounts():
    container = Container("localhost/spica-runtime:abc", "podman", ("/data/jobs", "/repo"), workdir="/data/jobs")
    argv = shlex.split(container.python_command("/repo/.venv/bin/python"))
    assert argv[:2] == ["podman", "run"]
    assert argv[-2:] == ["localhost/spica-runtime:abc", "/repo/.venv/bin/python"]
    assert "--volume=/data/jobs:/data/jobs" in argv and "--volume=/repo:/repo" in argv
    assert {"--env=SLURM_*", "--env=SUBMITIT_*", "--env=SPICA_*", "--env=PYTHONPATH"} <= set(argv)
    assert "--workdir=/data/jobs" in argv
    assert container.srun_args() == []


def test_pyxis_enters_the_container_through_srun_and_keeps_the_plain_python():
    container = Container("nvcr.io#nvidia/dynamo:1", "pyxis", ("/a", "/b"), workdir="/a")
    assert container.srun_args() == [
        "--container-image=nvcr.io#nvidia/dynamo:1",
        "--container-mounts=/a:/a,/b:/b",
        "--container-workdir=/a",
    ]
    assert container.python_command("/venv/bin/python") == "/venv/bin/python"


def test_unknown_engine_is_one_line_naming_the_allowed_ones():
    with pytest.raises(ValueError, match=r"^container_engine='docker' is not supported; allowed: podman, pyxis$"):
        Container("img", "docker")  # type: ignore[arg-type]


def test_runtime_mounts_hold_repo_venv_and_extras_without_nested_duplicates(tmp_path):
    inner = tmp_path / "out" / "submitit"
    mounts = runtime_mounts(tmp_path / "out", inner, REPO / "tests")
    covered = lambda path: any(Path(path).resolve().is_relative_to(m) for m in mounts)  # noqa: E731
    assert str(REPO) in mounts and str(tmp_path / "out") in mounts
    assert covered(sys.prefix) and covered(inner)
    assert str(inner) not in mounts and str(REPO / "tests") not in mounts
