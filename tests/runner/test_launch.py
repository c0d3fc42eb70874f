"""submit_plan / collect: a compiled plan run as a submitit job."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from results_checks import check_results_folder

import spica.plan
from runner.container import ImageMissing
from runner.executors import make_executor
from runner.launch import PlanJobFailed, _trace_of, collect, submit_plan


def test_missing_plan_is_one_line(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^plan_path='nope.yaml': no such file$"):
        submit_plan("nope.yaml", tmp_path / "out")


def test_a_failing_plan_job_names_the_job_the_error_and_its_log(tmp_path):
    not_a_plan = tmp_path / "plan.yaml"
    not_a_plan.write_text("hello: world\n")
    job = submit_plan(not_a_plan, tmp_path / "out", cluster="local", timeout_min=5, container_image=None)
    with pytest.raises(PlanJobFailed, match=rf"^plan job {job.job_id} failed: .*not a Spica plan.*\(log: .*\.err\)$"):
        collect(job)


def test_a_container_job_is_given_the_trace_its_plan_replays_and_nothing_for_a_missing_one(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text("{}\n")
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"config:\n  workload:\n    trace_path: {trace}\n")
    assert _trace_of(plan) == (str(trace),)
    plan.write_text(f"config:\n  workload:\n    trace_path: {tmp_path / 'gone.jsonl'}\n")
    assert _trace_of(plan) == ()
    plan.write_text("hello: world\n")
    assert _trace_of(plan) == ()


class _Submitted(Exception):
    """Raised instead of submitting: the test has what it wanted."""


@pytest.fixture
def built(monkeypatch):
    """The executors submit_plan builds, none of them submitting anything."""
    executors = []

    def refuse(*args, **kwargs):
        raise _Submitted

    def build(*args, **kwargs):
        executor = make_executor(*args, **kwargs)
        executors.append(executor)
        monkeypatch.setattr(executor, "submit", refuse)
        return executor

    monkeypatch.setattr("runner.launch.make_executor", build)
    return executors


def test_a_plan_job_runs_in_the_self_contained_image_by_default(tmp_path, built, monkeypatch):
    monkeypatch.setattr("runner.container._podman_has", lambda image: image == "localhost/spica:latest")
    plan = tmp_path / "plan.yaml"
    plan.write_text("hello: world\n")
    with pytest.raises(_Submitted):
        submit_plan(plan, tmp_path / "out", cluster="local")
    argv = shlex.split(built[0].python)
    assert argv[:8] == ["podman", "run", "--rm", "--init", "--network=none", "--cap-drop=all",
                        "--security-opt=no-new-privileges", "--read-only"]
    assert argv[-2:] == ["--entrypoint=/opt/spica/bin/python", "localhost/spica:latest"]
    assert f"--volume={plan}:{plan}:ro" in argv and f"--workdir={tmp_path / 'out'}" in argv


def test_container_image_none_runs_the_plan_job_on_the_host(tmp_path, built, monkeypatch):
    monkeypatch.setattr("runner.container._podman_has", lambda image: pytest.fail("no image to look for"))
    plan = tmp_path / "plan.yaml"
    plan.write_text("hello: world\n")
    with pytest.raises(_Submitted):
        submit_plan(plan, tmp_path / "out", cluster="local", container_image=None)
    assert built[0].python == sys.executable


@pytest.mark.parametrize(("present", "cluster", "where"), [
    (False, "local", "not in podman's store on this host"), (False, "slurm", "not in podman's store on this host"),
    (None, "local", "podman is not installed on this host")])
def test_a_missing_image_is_one_line_before_anything_is_submitted(tmp_path, built, monkeypatch, present, cluster, where):
    monkeypatch.setattr("runner.container._podman_has", lambda image: present)
    plan = tmp_path / "plan.yaml"
    plan.write_text("hello: world\n")
    with pytest.raises(ImageMissing) as info:
        submit_plan(plan, tmp_path / "out", cluster=cluster)
    assert str(info.value) == (
        f"container_image=localhost/spica:latest: {where}; build Spica's image with `bash containers/build-image.sh` "
        "(root; it tags localhost/spica:latest), give another image, or set container_image=None to run on the host")
    assert built == [] and not (tmp_path / "out" / "submitit").exists()


def test_a_slurm_job_from_a_host_without_podman_is_left_to_the_nodes(tmp_path, built, monkeypatch):
    monkeypatch.setattr("runner.container._podman_has", lambda image: None)
    plan = tmp_path / "plan.yaml"
    plan.write_text("hello: world\n")
    with pytest.raises(_Submitted):
        submit_plan(plan, tmp_path / "out", cluster="slurm")
    assert "localhost/spica:latest" in built[0].python


@pytest.mark.e2e
def test_a_missing_image_on_the_real_podman_is_the_same_line(tmp_path, docker_host):
    plan = tmp_path / "plan.yaml"
    plan.write_text("hello: world\n")
    with pytest.raises(ImageMissing, match=r"^container_image=localhost/spica-missing:0: not in podman's store on this host; "):
        submit_plan(plan, tmp_path / "out", cluster="local", container_image="localhost/spica-missing:0")


def _tiny_plan(tmp_path: Path) -> Path:
    from spica.config import SmartSearchConfig

    config = SmartSearchConfig.from_mapping({
        "search_space": {
            "model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm", "gpu_budget": 1,
            "deployment_mode": ["agg"], "backend": ["vllm"], "parallel_configs": [{"tp": 1, "replicas": 1}],
            "agg_max_num_batched_tokens": [8192], "agg_max_num_seqs": [256],
            "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"],
        },
        "workload": {"isl": 512, "osl": 64, "concurrency": 4, "num_request_ratio": 5},
        "sweep": {"max_rounds": 1, "parallel_evals": 1, "algorithm": "grid", "random_seed": 3},
    })
    return spica.plan.compile_plan(config).write(tmp_path / "plans" / "plan.yaml")


@pytest.mark.e2e
def test_a_compiled_plan_runs_as_a_local_job_on_the_host_and_returns_its_results_folder(tmp_path):
    results = collect(submit_plan(_tiny_plan(tmp_path), tmp_path / "out", cluster="local", timeout_min=10,
                                  container_image=None))
    assert results == tmp_path / "out"
    assert [entry["status"] for entry in check_results_folder(results)] == ["feasible"]  # the plan's one candidate


@pytest.mark.e2e
def test_a_compiled_plan_runs_in_the_self_contained_image_as_its_user(runtime_image, tmp_path):
    plan = _tiny_plan(tmp_path)
    job = submit_plan(plan, tmp_path / "out", cluster="local", timeout_min=10, container_image=runtime_image)
    results = collect(job)
    assert [entry["status"] for entry in check_results_folder(results)] == ["feasible"]
    assert (results / "ledger.json").stat().st_uid == 10001  # written by the image's non-root user
