"""Jobs on the real infrastructure: SLURM, and Spica's images under podman."""

from __future__ import annotations

import sys
from pathlib import Path

import docker
import pytest

from runner.container import CACHE_PARTS, IMAGE_PYTHON, Container, ContainerMode, cache_dir, job_mounts
from runner.executors import make_executor
from runner.probe import describe_environment

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def _in_container(image: str, folder: Path, mode: ContainerMode = "self-contained") -> Container:
    return Container(image, "podman", mode, job_mounts(mode, writes=(folder,)), workdir=str(folder))


def test_slurm_job_returns_its_value_from_a_slurm_node(slurm_partition, tmp_path):
    executor = make_executor(tmp_path, cluster="slurm", timeout_min=5, slurm_partition=slurm_partition)
    job = executor.submit(describe_environment)
    report = job.result()
    assert report["slurm_job_id"] == job.job_id
    assert report["python"] == sys.executable


def test_a_job_in_the_self_contained_image_runs_its_own_spica_unprivileged_and_offline(runtime_image, tmp_path):
    executor = make_executor(tmp_path, cluster="local", timeout_min=5, container=_in_container(runtime_image, tmp_path))
    report = executor.submit(describe_environment).result()
    assert report["container"] == "podman"
    assert (report["python"], report["spica_code"]) == (IMAGE_PYTHON, "/opt/spica/src")
    assert report["uid"] == "10001"  # the image's user, not root
    assert report["capabilities"] == "0000000000000000"
    assert report["network"] == "lo"
    caches = [f"{cache_dir() / part}:rw" for part in CACHE_PARTS]
    assert report["host_mounts"].split() == sorted([f"{tmp_path}:rw", *caches])  # nothing else of the host


def test_a_job_in_shared_fs_mode_runs_the_mounted_venv_and_repo(interpreter_image, tmp_path):
    container = _in_container(interpreter_image, tmp_path, "shared-fs")
    report = make_executor(tmp_path, cluster="local", timeout_min=5, container=container).submit(describe_environment).result()
    assert report["container"] == "podman"
    assert report["python"] == sys.executable  # the venv, bind-mounted read-only at its host path
    assert report["python_version"] == describe_environment()["python_version"]
    assert report["spica_code"] == str(REPO)
    assert (report["uid"], report["network"]) == ("10001", "lo")
    venv = Path(sys.prefix).resolve()
    code = {f"{REPO}:ro"} | (set() if venv.is_relative_to(REPO) else {f"{venv}:ro"})  # a venv inside the repo rides along
    assert code | {f"{tmp_path}:rw"} <= set(report["host_mounts"].split())


def test_slurm_job_in_the_container(slurm_partition, runtime_image, tmp_path):
    container = _in_container(runtime_image, tmp_path)
    executor = make_executor(tmp_path, cluster="slurm", timeout_min=5, slurm_partition=slurm_partition, container=container)
    job = executor.submit(describe_environment)
    report = job.result()
    assert (report["container"], report["slurm_job_id"]) == ("podman", job.job_id)


def test_docker_api_runs_the_image_with_a_bind_mount(docker_host, runtime_image, tmp_path):
    (tmp_path / "hello.txt").write_text("from the host")
    tmp_path.chmod(0o755)  # readable by the image's non-root user
    client = docker.DockerClient(base_url=docker_host, timeout=120)
    # detached, then waited for: podman 4.3's API can leave the attached log stream of a container
    # that already ended open for ever (a CI run hung here), where wait and logs return
    container = client.containers.run(
        runtime_image, ["-c", "print(open('/mnt/hello.txt').read())"], entrypoint="python",
        volumes={str(tmp_path): {"bind": "/mnt", "mode": "ro"}}, network_mode="none", detach=True,
    )
    try:
        assert container.wait(timeout=120)["StatusCode"] == 0
        assert container.logs().decode().strip() == "from the host"
    finally:
        container.remove(force=True)
