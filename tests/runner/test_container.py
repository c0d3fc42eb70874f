"""How a job enters a container: exactly what it mounts, and how it runs."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from runner.container import Container, Mount, job_mounts

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SPICA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return tmp_path / "cache"


def _plan_job(tmp_path: Path) -> tuple[Mount, ...]:
    return job_mounts("self-contained", reads=(tmp_path / "plans" / "p.yaml", tmp_path / "t.jsonl"),
                      writes=(tmp_path / "out", tmp_path / "out" / "submitit"))


def test_a_self_contained_job_as_root_runs_the_image_python_as_its_user_with_only_its_files(tmp_path, cache):
    container = Container("localhost/spica:abc", "podman", "self-contained", _plan_job(tmp_path), workdir=f"{tmp_path}/out")
    assert shlex.split(container.python_command(uid=0)) == [
        "podman", "run", "--rm", "--init", "--network=none", "--cap-drop=all",
        "--security-opt=no-new-privileges", "--read-only", "--user=10001:10001",
        f"--volume={cache}/clock:{cache}/clock:rw,U",
        f"--volume={cache}/jax:{cache}/jax:rw,U",
        f"--volume={cache}/predictors:{cache}/predictors:rw,U",
        f"--volume={cache}/space:{cache}/space:rw,U",
        f"--volume={cache}/timing:{cache}/timing:rw,U",
        f"--volume={tmp_path}/out:{tmp_path}/out:rw,U",
        f"--volume={tmp_path}/plans/p.yaml:{tmp_path}/plans/p.yaml:ro",  # the file, not its folder
        f"--volume={tmp_path}/t.jsonl:{tmp_path}/t.jsonl:ro",
        "--env=SLURM_*", "--env=SUBMITIT_*", "--env=SPICA_*",
        f"--env=SPICA_CACHE_DIR={cache}", "--env=HOME=/tmp",
        f"--workdir={tmp_path}/out",
        "--entrypoint=/opt/spica/bin/python", "localhost/spica:abc",
    ]
    assert container.srun_args() == []
    assert all((cache / part).is_dir() for part in ("clock", "jax", "predictors", "space", "timing"))


def test_a_non_root_caller_runs_as_itself_in_a_rootless_user_namespace(tmp_path, cache):
    argv = shlex.split(Container("img", mounts=_plan_job(tmp_path)).python_command(uid=1000))
    assert "--userns=keep-id" in argv and not any(a.startswith("--user=") for a in argv)
    assert f"--volume={tmp_path}/out:{tmp_path}/out:rw" in argv  # no chown: the files stay the caller's


def test_shared_fs_mounts_the_repo_and_venv_read_only_and_runs_the_venv_python(tmp_path, cache, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    mounts = job_mounts("shared-fs", writes=(tmp_path / "out",))
    code = {str(REPO), str(Path(sys.prefix).resolve())}
    code = {path for path in code if not any(path != other and Path(path).is_relative_to(other) for other in code)}  # a venv inside the repo rides along
    assert {m.path for m in mounts if not m.writable} == code
    argv = shlex.split(Container("img", "podman", "shared-fs", mounts).python_command(uid=0))
    assert argv[-2:] == [f"--entrypoint={sys.executable}", "img"]
    assert "--env=PYTHONPATH" in argv
    assert all(f"--volume={path}:{path}:ro" in argv for path in code)


def test_a_writable_folder_inside_a_read_only_one_is_mounted_over_it(tmp_path, cache):
    mounts = job_mounts("shared-fs", writes=(REPO / "results" / "x",))
    paths = [m.path for m in mounts]
    assert paths.index(str(REPO)) < paths.index(str(REPO / "results" / "x"))
    assert Mount(str(REPO / "results" / "x"), True) in mounts


def test_pyxis_enters_the_container_through_srun_with_the_same_mounts(tmp_path, cache):
    container = Container("nvcr.io#nvidia/spica:1", "pyxis", "self-contained",
                          (Mount("/a", True), Mount("/b/p.yaml")), workdir="/a")
    assert container.srun_args() == [
        "--container-image=nvcr.io#nvidia/spica:1",
        "--no-container-mount-home",
        "--container-mounts=/a:/a,/b/p.yaml:/b/p.yaml:ro",
        "--container-workdir=/a",
    ]
    assert container.python_command() == "/opt/spica/bin/python"


@pytest.mark.parametrize(("field", "kwargs", "allowed"), [
    ("container_engine", {"engine": "docker"}, "podman, pyxis"),
    ("container_mode", {"mode": "bind"}, "self-contained, shared-fs"),
])
def test_an_unknown_engine_or_mode_is_one_line_naming_the_allowed_ones(field, kwargs, allowed):
    value = next(iter(kwargs.values()))
    with pytest.raises(ValueError, match=rf"^{field}='{value}' is not supported; allowed: {allowed}$"):
        Container("img", **kwargs)  # type: ignore[arg-type]
