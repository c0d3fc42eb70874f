"""submit_plan / collect: a compiled plan run as a submitit job."""

from __future__ import annotations

from pathlib import Path

import pytest

import spica.plan
from runner.launch import PlanJobFailed, _trace_of, collect, submit_plan


def test_missing_plan_is_one_line(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^plan_path='nope.yaml': no such file$"):
        submit_plan("nope.yaml", tmp_path / "out")


def test_a_failing_plan_job_names_the_job_the_error_and_its_log(tmp_path):
    not_a_plan = tmp_path / "plan.yaml"
    not_a_plan.write_text("hello: world\n")
    job = submit_plan(not_a_plan, tmp_path / "out", cluster="local", timeout_min=5)
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
def test_a_compiled_plan_runs_as_a_local_job_and_returns_its_results_folder(tmp_path):
    results = collect(submit_plan(_tiny_plan(tmp_path), tmp_path / "out", cluster="local", timeout_min=10))
    assert results == tmp_path / "out"
    assert (results / "ledger.json").is_file()


@pytest.mark.e2e
def test_a_compiled_plan_runs_in_the_self_contained_image_as_its_user(runtime_image, tmp_path):
    plan = _tiny_plan(tmp_path)
    job = submit_plan(plan, tmp_path / "out", cluster="local", timeout_min=10, container_image=runtime_image)
    results = collect(job)
    assert (results / "ledger.json").is_file()
    assert (results / "ledger.json").stat().st_uid == 10001  # written by the image's non-root user
