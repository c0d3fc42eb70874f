"""Acceptance tests on the real Replay: TP-aware timing, routing, KV transfer, goodput, failures."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import pytest

from spica.core.sla import SlaBounds
from spica.evaluation.deployment import ReplayCall, WorkloadSpec, build_replay_call
from spica.evaluation.replay import WALL_FACTOR, capped_worker, run_replay
from spica.evaluation.score import objective_values, provisioned_gpus

pytestmark = pytest.mark.e2e

CLOSED_LOOP_64 = WorkloadSpec(kind="synthetic", isl=2000, osl=200, request_count=256, concurrency=64)
SMALL = WorkloadSpec(kind="synthetic", isl=1000, osl=50, request_count=40, concurrency=8)


def replay_ok(candidate, workload, **options):
    outcome = run_replay(build_replay_call(candidate, workload, **options))
    assert outcome.status == "ok", outcome.message
    return outcome.summary


@pytest.mark.parametrize("timing", ["table", "ais"])
def test_mean_tpot_falls_strictly_as_tp_grows(agg_candidate, timing):
    tpot = [replay_ok(agg_candidate(tp=tp, replicas=2), CLOSED_LOOP_64, timing=timing)["mean_tpot_ms"] for tp in (1, 2, 4, 8)]
    assert tpot[0] > tpot[1] > tpot[2] > tpot[3], tpot


def test_kv_router_reuses_more_prefix_than_round_robin_on_mooncake(agg_candidate, shared_dir, tmp_path):
    source = shared_dir / "data" / "mooncake" / "conversation_trace_15min.jsonl"
    first_five_minutes = [line for line in source.read_text().splitlines() if json.loads(line)["timestamp"] < 300_000]
    trace = tmp_path / "mooncake_5min.jsonl"  # 918 requests: multi-turn reuse needs a few minutes
    trace.write_text("\n".join(first_five_minutes) + "\n")
    workload = WorkloadSpec(kind="trace", trace_path=str(trace))
    reuse = {
        mode: replay_ok(agg_candidate(tp=2, replicas=4, router_mode=mode), workload)["prefix_cache_reused_ratio"]
        for mode in ("round_robin", "kv_router")
    }
    assert reuse["kv_router"] > reuse["round_robin"], reuse


def test_disagg_ttft_rises_as_kv_transfer_bandwidth_drops(disagg_candidate):
    workload = WorkloadSpec(kind="synthetic", isl=4000, osl=50, request_count=60, request_rate=2.0)
    ttft = {
        bandwidth: replay_ok(
            disagg_candidate(kv_bytes_per_token=262144, kv_transfer_bandwidth_gbps=bandwidth), workload
        )["mean_ttft_ms"]
        for bandwidth in (100.0, 10.0, 1.0)
    }
    assert ttft[100.0] < ttft[10.0] < ttft[1.0], ttft


@pytest.mark.parametrize("sla", [SlaBounds(ttft_ms=2000, itl_ms=40), SlaBounds(e2e_ms=5000)])
def test_goodput_appears_with_an_sla(agg_candidate, sla):
    summary = replay_ok(agg_candidate(), SMALL, sla=sla)
    values = objective_values(summary)
    assert 0 < values["goodput"] <= values["throughput"]
    assert values["goodput_per_gpu"] == pytest.approx(values["goodput"] / 2, rel=1e-6)  # 2 workers × TP1


def test_no_sla_no_goodput(agg_candidate):
    assert "goodput" not in objective_values(replay_ok(agg_candidate(), SMALL))


def test_impossible_engine_arg_fails_with_its_reason(agg_candidate):
    outcome = run_replay(build_replay_call(agg_candidate(agg_max_num_seqs=0), SMALL))
    assert (outcome.status, outcome.reason) == ("failed", "invalid_input")
    assert outcome.message == "ValueError: max_num_seqs must be positive"


def test_shape_ais_cannot_time_fails_as_timing_model(agg_candidate):
    outcome = run_replay(build_replay_call(agg_candidate(hardware_sku="no_such_gpu"), SMALL))
    assert (outcome.status, outcome.reason) == ("failed", "timing_model")
    assert "no_such_gpu" in outcome.message


def test_requests_that_never_fit_give_no_samples(agg_candidate):
    tiny_kv = agg_candidate(agg_kv_capacity_tokens=640, agg_num_gpu_blocks=10)
    outcome = run_replay(build_replay_call(tiny_kv, SMALL))
    assert (outcome.status, outcome.reason) == ("no_samples", "no_completed_requests")
    assert outcome.message == "none of 40 requests completed"


def test_time_cap_kills_a_long_replay(agg_candidate):
    endless = WorkloadSpec(kind="synthetic", isl=1000, osl=100, request_count=200_000, concurrency=64)
    outcome = run_replay(build_replay_call(agg_candidate(), endless), timeout_s=1.0)
    assert (outcome.status, outcome.reason, outcome.message) == ("timeout", "time_cap", "replay exceeded the 1 s CPU-time cap")
    assert capped_worker._process is None  # killed, to be replaced on the next capped call


def _child_stopped_for(seconds: float | None, monkeypatch) -> list[str]:
    """The replay child gets no CPU for `seconds` after its call is sent (SIGSTOP, then SIGCONT;
    None: never again), as on a machine with more busy processes than cores. Returns what happened."""
    start, events = capped_worker._ensure_started, []

    def resume(pid: int) -> None:
        os.kill(pid, signal.SIGCONT)
        events.append("resumed")

    def started_then_stopped():
        connection = start()
        pid = capped_worker._process.pid
        os.kill(pid, signal.SIGSTOP)
        events.append("stopped")
        if seconds is not None:
            threading.Timer(seconds, resume, (pid,)).start()
        return connection

    monkeypatch.setattr(capped_worker, "_ensure_started", started_then_stopped)
    return events


def test_the_cap_counts_the_replays_cpu_time_not_the_time_it_waited_for_a_core(agg_candidate, monkeypatch):
    events = _child_stopped_for(2.5, monkeypatch)  # waiting longer than the cap, using none of it
    outcome = run_replay(build_replay_call(agg_candidate(), SMALL), timeout_s=1.0)
    assert events == ["stopped", "resumed"]  # a wall-clock cap of 1 s would have cut it while stopped
    assert outcome.status == "ok", outcome.message


def test_a_child_that_uses_no_cpu_is_cut_at_ten_times_the_cap(agg_candidate, monkeypatch):
    events = _child_stopped_for(None, monkeypatch)
    outcome = run_replay(build_replay_call(agg_candidate(), SMALL), timeout_s=0.2)
    assert events == ["stopped"] and WALL_FACTOR == 10
    assert (outcome.status, outcome.reason) == ("timeout", "time_cap") and capped_worker._process is None


def test_capped_replay_matches_in_process_replay(agg_candidate):
    call = build_replay_call(agg_candidate(), SMALL)
    capped = run_replay(call, timeout_s=120.0)
    assert capped.status == "ok"
    in_process = run_replay(call).summary
    simulated = {key: value for key, value in in_process.items() if "wall" not in key and "processed" not in key}
    assert simulated.items() <= capped.summary.items()  # round_robin replays are bit-identical


def test_a_kv_router_draw_repeats_wherever_it_is_replayed_and_another_draw_differs(agg_candidate):
    """Each draw reads a clock of its own, in a child forked for it alone (spica/evaluation/clock.py):
    the same in this process's children, capped or not, and in an evaluation worker's, after other
    replays; draw 1 is another draw. With the real clock, these replays differed every time."""
    import functools

    from spica.evaluation.evaluate import prepare_worker
    from spica.evaluation.replay import WORKER_IMPORTS
    from spica.search.pool import ProcessPool

    candidate = agg_candidate(replicas=4, router_mode="kv_router", router_temperature=1.0)
    call = build_replay_call(candidate, CLOSED_LOOP_64)
    simulated = lambda outcome: {key: value for key, value in outcome.summary.items() if "wall" not in key and "processed" not in key}
    here = [simulated(run_replay(call)), simulated(run_replay(call, timeout_s=120.0))]
    pool = ProcessPool(1, preload=prepare_worker, imports=WORKER_IMPORTS)
    try:
        other = build_replay_call(agg_candidate(replicas=4, router_mode="kv_router"), SMALL)
        in_a_worker = [simulated(future.result()) for future in pool.submit(functools.partial(run_replay, timeout_s=120.0), [other, call])]
    finally:
        pool.close()
    assert here[0] == here[1] == in_a_worker[1] and here[0]["completed_requests"] == 256
    assert simulated(run_replay(call, draw=1))["mean_ttft_ms"] != here[0]["mean_ttft_ms"]


def test_capped_worker_is_replaced_when_it_dies_between_calls(agg_candidate):
    call = build_replay_call(agg_candidate(), SMALL)
    assert run_replay(call, timeout_s=120.0).status == "ok"
    capped_worker._process.kill()
    capped_worker._process.join()
    assert run_replay(call, timeout_s=120.0).status == "ok"


def test_a_replay_child_killed_under_its_replay_is_replaced_and_the_replay_retried(agg_candidate, monkeypatch):
    """A scheduler signals every process of a job: a killed child costs a retry, not the candidate."""
    start, killed = capped_worker._ensure_started, []

    def started_then_killed():
        connection = start()
        if not killed:
            capped_worker._process.kill()  # a real SIGKILL before the child answers
            capped_worker._process.join()
            killed.append(True)
        return connection

    monkeypatch.setattr(capped_worker, "_ensure_started", started_then_killed)
    outcome = run_replay(build_replay_call(agg_candidate(), SMALL), timeout_s=120.0)
    assert killed and outcome.status == "ok", outcome.message


@pytest.mark.parametrize("failed_starts, status, reason", [(1, "ok", None), (2, "failed", "worker_crashed")])
def test_a_replay_child_that_cannot_start_costs_a_retry_then_is_a_transient_failure(agg_candidate, monkeypatch, failed_starts, status, reason):
    """A requeued SLURM job has its forkserver signalled too, so starting the replay child can
    fail (EOF from the dying forkserver): retried at once, then reported as worker_crashed
    (measured again on resume), and the next capped replay starts a child as usual."""
    import multiprocessing.context

    capped_worker._stop()
    real, failures = multiprocessing.context.ForkServerProcess._Popen, []

    def dying_forkserver(process):
        if len(failures) < failed_starts:
            failures.append(process)
            raise EOFError("unexpected EOF")
        return real(process)

    monkeypatch.setattr(multiprocessing.context.ForkServerProcess, "_Popen", staticmethod(dying_forkserver))
    call = build_replay_call(agg_candidate(), SMALL)
    outcome = run_replay(call, timeout_s=120.0)
    assert (outcome.status, outcome.reason) == (status, reason), outcome.message
    assert len(failures) == failed_starts
    if reason:
        assert outcome.message == "replay worker could not start: EOFError: unexpected EOF"
        assert run_replay(call, timeout_s=120.0).status == "ok"


def test_missing_trace_fails_as_invalid_input(agg_candidate, tmp_path: Path):
    outcome = run_replay(build_replay_call(agg_candidate(), WorkloadSpec(kind="trace", trace_path=str(tmp_path / "none.jsonl"))))
    assert (outcome.status, outcome.reason) == ("failed", "invalid_input")
    assert "No such file or directory" in outcome.message


@pytest.mark.parametrize("damage", ["removed", "torn"])
@pytest.mark.parametrize("timeout_s", [None, 120.0])
def test_a_timing_table_lost_under_the_replay_is_rebuilt(agg_candidate, monkeypatch, damage, timeout_s):
    """The cache removed mid-run ("Failed to open NPZ file") costs a rebuild, not the candidate."""
    from spica.evaluation import replay

    call = build_replay_call(agg_candidate(tp=2), SMALL)
    materialize, damaged = replay._with_timing, []

    def then_damage(*args):
        kwargs = materialize(*args)
        table = Path(kwargs["extra_engine_args"]["engine"]["timing_model"]["config"]["path"])
        if not damaged:
            table.unlink() if damage == "removed" else table.write_bytes(b"torn")
            damaged.append(table)
        return kwargs

    monkeypatch.setattr(replay, "_with_timing", then_damage)
    outcome = run_replay(call, timeout_s)
    assert outcome.status == "ok", outcome.message
    assert damaged and damaged[0].stat().st_size > 1000  # rebuilt whole


def test_a_timing_cache_that_cannot_be_written_fails_as_transient(agg_candidate, tmp_path: Path, monkeypatch):
    from spica.core.candidate import Candidate

    (tmp_path / "file").write_text("")
    monkeypatch.setenv("SPICA_CACHE_DIR", str(tmp_path / "file" / "cache"))  # a cache under a file
    outcome = run_replay(build_replay_call(agg_candidate(tp=2), SMALL))
    assert (outcome.status, outcome.reason) == ("failed", "timing_cache")
    assert Candidate("k", "b", 0, outcome.status, {}, reason=f"{outcome.reason}: {outcome.message}").transient


def test_capped_failure_is_reported_from_the_child(agg_candidate):
    outcome = run_replay(build_replay_call(agg_candidate(agg_max_num_seqs=0), SMALL), timeout_s=60.0)
    assert (outcome.status, outcome.reason, outcome.message) == ("failed", "invalid_input", "ValueError: max_num_seqs must be positive")


def test_saved_call_reproduces_the_score(agg_candidate, tmp_path: Path):
    call = build_replay_call(agg_candidate(tp=2), SMALL)
    saved = tmp_path / "replay_input.json"
    saved.write_text(json.dumps(call.to_dict()))
    again = run_replay(ReplayCall.from_dict(json.loads(saved.read_text())))
    assert objective_values(again.summary) == objective_values(run_replay(call).summary)


def test_planner_scale_down_is_credited_per_gpu(agg_candidate):
    planner = {
        "mode": "agg",  # a PlannerConfig field (the unrolled candidate says deployment_mode)
        "backend": "vllm",
        "optimization_target": "throughput",
        "model_name": "Qwen/Qwen3-32B",
        "decode_engine_num_gpu": 2,
        "max_gpu_budget": 8,
        "enable_throughput_scaling": False,
        "enable_load_scaling": True,
        "load_adjustment_interval_seconds": 5,
        "report_interval_hours": None,
        "live_dashboard_port": 0,
    }
    workload = WorkloadSpec(kind="synthetic", isl=2000, osl=200, request_count=300, request_rate=4.0)
    summary = replay_ok(agg_candidate(tp=2, replicas=4), workload, planner_config=planner)
    values = objective_values(summary)
    assert provisioned_gpus(summary) < 8  # 4 workers × TP2 at start; the load planner released some
    assert values["throughput_per_gpu"] == pytest.approx(values["throughput"] / provisioned_gpus(summary))


def test_host_offload_keeps_evicted_prefixes_reusable(agg_candidate):
    workload = WorkloadSpec(
        kind="synthetic", isl=1000, osl=20, request_count=300, request_rate=3.0, shared_prefix_ratio=0.75, num_prefix_groups=40
    )
    small_gpu_cache = {"agg_kv_capacity_tokens": 200 * 64, "agg_num_gpu_blocks": 200}
    offload = {"num_g2_blocks": 20_000, "kv_bytes_per_token": 262144, "bandwidth_g1_to_g2_gbps": 30.0, "bandwidth_g2_to_g1_gbps": 30.0}
    reuse = {
        name: replay_ok(agg_candidate(replicas=1, **small_gpu_cache, **extra), workload)["prefix_cache_reused_ratio"]
        for name, extra in (("gpu only", {}), ("with host", offload))
    }
    assert reuse["with host"] > reuse["gpu only"], reuse
