"""A plan job on the real SLURM cluster, requeued twice mid-search: first by its time limit
(submitit's signal before the limit, then its own requeue), then, a few evaluations into the
resumed run, by `scontrol requeue` (what preemption with PreemptMode=REQUEUE does; the job
runs on for SLURM's KillWait, 30 s, before it is killed). The search (42 distinct candidates:
the grid merges the max_num_seqs values that hold all 32 requests in flight; 2-4 s each)
outlasts the first: with half the requests (1-2 s each) a quiet machine finished it in about
40 s, sometimes before the time limit's signal, and with 28 candidates a fast first run once
left fewer than the three the test waits for before it requeues. It must finish with every evaluation in the journal
exactly once (a replay killed with its job is measured again) and the same ledger as an
uninterrupted run of the same plan.

SLURM holds a requeued job for about two minutes (BeginTime); the test releases it after a
few seconds with `scontrol update StartTime=now`, as an operator would."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.launch import collect, submit_plan
from spica.config import SmartSearchConfig
from spica.core.candidate import TRANSIENT_REASONS
import spica.plan

pytestmark = pytest.mark.e2e

# A job started in the same second its previous run was revoked is refused by slurmd
# ("Job credential revoked"; SLURM's own hold avoids it by waiting out the credential).
RELEASE_AFTER_S = 3
SIGNAL_AFTER_S = 45  # a 2-minute limit with the signal 75 s before it (SLURM sends it 0-30 s early)
CONFIG = {
    "search_space": {"model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm", "gpu_budget": 4,
                     "context_length": 4096, "deployment_mode": ["agg"], "backend": ["vllm"],
                     "agg_max_num_batched_tokens": [4096, 8192, 16384], "agg_max_num_seqs": [16, 32, 64, 128, 256, 512],
                     "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"]},
    "workload": {"isl": 1024, "osl": 128, "concurrency": 32, "num_request_ratio": 1600},
    "goal": {"target": "throughput_per_gpu"},
    # every replay long enough to be preempted under: not screened (51,200 requests would be)
    "sweep": {"algorithm": "grid", "parallel_evals": 1, "candidates_per_round": 8, "max_rounds": 11, "random_seed": 5,
              "screen_request_ratio": "off"},
}


def _journal(folder: Path) -> list[dict]:
    path = folder / "evaluations.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.strip().endswith("}")]


def _interrupted(record: dict) -> bool:
    """A replay killed with its job (SLURM signals every process of a requeued job): journaled
    as a transient failure and measured again by the next run, like any resume does."""
    return record["status"] == "failed" and (record["reason"] or "").split(":", 1)[0] in TRANSIENT_REASONS


def _measured(folder: Path) -> list[dict]:
    """The ledger without wall-clock figures (how long a replay took, how fast it simulated)."""
    rows = json.loads((folder / "ledger.json").read_text())
    keep = ("key", "branch", "round", "status", "reason", "score", "objectives", "unrolled")
    wall_clock = {"wall_time_ms", "processed_tokens_per_s", "processed_output_tokens_per_s"}
    measured = [{k: row[k] for k in keep} | {"metrics": {k: v for k, v in (row["metrics"] or {}).items() if k not in wall_clock}}
                for row in rows]
    return sorted(measured, key=lambda row: row["key"])


def _scontrol(*args: str) -> str:
    return subprocess.run(["scontrol", *args], capture_output=True, text=True, check=True, timeout=60).stdout


def _job_field(job_id: str, field: str) -> str:
    return _scontrol("show", "job", job_id).split(f"{field}=", 1)[1].split()[0]


def _held(job_id: str) -> bool:
    return _job_field(job_id, "JobState") == "PENDING" and _job_field(job_id, "Reason") == "BeginTime"


def test_a_plan_job_requeued_by_scontrol_and_by_its_time_limit_does_each_evaluation_once(slurm_partition, tmp_path):
    plan = spica.plan.compile_plan(SmartSearchConfig.from_mapping(CONFIG)).write(tmp_path / "plan.yaml")
    reference = subprocess.Popen([sys.executable, "-m", "spica", "run-plan", str(plan), "-o", str(tmp_path / "reference")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    out = tmp_path / "out"
    job = submit_plan(plan, out, cluster="slurm", slurm_partition=slurm_partition, timeout_min=2,
                      signal_delay_s=120 - SIGNAL_AFTER_S, max_num_timeout=10, cpus_per_task=1, container_image=None)
    deadline, requeued, held_since, resumed_at = time.monotonic() + 600, False, None, None
    try:
        while not job.done():
            assert time.monotonic() < deadline, "the plan job did not finish in 10 minutes"
            running_again = _job_field(job.job_id, "JobState") == "RUNNING" and int(_job_field(job.job_id, "Restarts")) >= 1
            if resumed_at is None and running_again:  # requeued by its time limit, running again
                resumed_at = len(_journal(out))
            if not requeued and resumed_at is not None and len(_journal(out)) >= resumed_at + 3:  # preempted
                _scontrol("requeue", job.job_id)
                requeued = True
            held_since = (held_since or time.monotonic()) if _held(job.job_id) else None
            if held_since and time.monotonic() - held_since > RELEASE_AFTER_S:
                _scontrol("update", f"JobId={job.job_id}", "StartTime=now")
            time.sleep(0.5)
    except BaseException:
        reference.kill()
        raise
    finally:
        job.cancel(check=False)  # nothing left in the queue, whatever happened
    results = collect(job)
    assert reference.wait(timeout=600) == 0, reference.stderr.read()[-2000:]

    assert requeued, "the search ended before it could be requeued"
    assert int(_job_field(job.job_id, "Restarts")) >= 2  # scontrol's requeue and the time limit's
    assert "this job is timed-out" in Path(job.paths.stderr).read_text()
    keys = [record["key"] for record in _journal(results) if not _interrupted(record)]
    assert [key for key, n in collections.Counter(keys).items() if n > 1] == []  # none measured twice
    assert sorted(keys) == sorted(row["key"] for row in _measured(results))  # none lost
    assert _measured(results) == _measured(tmp_path / "reference")
