"""Screening (spica/evaluation/screening.py): which candidates are screened, and which screened
ones a search replays in full. Pure logic on hand-made results."""

from __future__ import annotations

import pytest

from spica.config import ConfigError, SmartSearchConfig
from spica.core.candidate import Candidate
from spica.evaluation import screening

OBJECTIVES = ["throughput_per_user", "throughput_per_gpu"]


def config(**sweep) -> SmartSearchConfig:
    return SmartSearchConfig.from_mapping({
        "search_space": {"model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm", "gpu_budget": 8},
        "workload": {"isl": 1024, "osl": 1024, "kv_load_ratio": [0.0, 1.0], "num_request_ratio": 10},
        "goal": {"target": "pareto"},
        "sweep": sweep,
    })


def row(key: str, status: str, user: float, gpu: float) -> Candidate:
    return Candidate(key, "disagg", 0, status, {}, objectives={"throughput_per_user": user, "throughput_per_gpu": gpu})


@pytest.mark.parametrize("point, others, needed", [
    ((10.0, 100.0), [(10.0, 100.0)], 1.0),  # a twin does not dominate
    ((10.0, 100.0), [(5.0, 200.0)], 1.0),  # on the front
    ((10.0, 100.0), [(12.0, 110.0)], 1.1),  # the cheapest escape: tok/s/GPU 10 % better
    ((10.0, 100.0), [(12.0, 110.0), (11.0, 130.0)], 1.1),  # 1.1 beats (11, 130) on the first objective too
    ((10.0, -50.0), [(12.0, -40.0)], 1.2),  # a minimised objective improves by dividing: 50 / 1.2 < 40 ... escapes at 1.2 on the first
])
def test_the_lift_a_point_needs_to_leave_every_dominating_point_behind(point, others, needed):
    assert screening.lift_needed(point, others) == pytest.approx(needed)


def test_screened_candidates_near_the_front_are_confirmed_closest_first():
    ledger = [
        row("full-a", "feasible", 20.0, 1000.0),
        row("far", "screened", 15.0, 700.0),  # needs 1.33: left out
        row("near", "screened", 18.0, 900.0),  # needs 1.11
        row("front", "screened", 30.0, 500.0),  # on the front
        row("failed", "failed", 0.0, 0.0),
    ]
    chosen = screening.to_confirm(OBJECTIVES, ledger)
    assert [candidate.key for candidate in chosen] == ["front", "near"]


def test_only_costly_closed_loop_replays_are_screened():
    on = config(screen_request_ratio=2)
    big = {"concurrency": 4000, "router_mode": "round_robin"}  # 40,000 requests in full
    assert screening.screen_fields(on, big) == {"screen_request_ratio": 2.0}
    assert screening.screen_fields(on, {**big, "concurrency": 1000}) == {}  # 10,000: cheap in full
    assert screening.screen_fields(on, {**big, "router_mode": "kv_router"}) == {}  # its replays vary run to run
    assert screening.screen_fields(on, {**big, "enable_throughput_scaling": True}) == {}  # a Planner reacts to the length
    assert screening.screen_fields(config(), big) == {"screen_request_ratio": 2.0}  # auto: 2 per client
    assert screening.screen_fields(config(screen_request_ratio="off"), big) == {}
    assert config(screen_request_ratio=False).sweep.screen_request_ratio == "off"  # YAML reads a bare `off` as false
    screened = {**big, "screen_request_ratio": 2.0}
    assert screening.full_candidate(screened) == big and screening.request_ratio(on, screened) == 2.0
    assert screening.request_ratio(on, big) == 10.0


@pytest.mark.parametrize("sweep, workload, message", [
    ({"screen_request_ratio": 10}, {}, "sweep.screen_request_ratio: 10 must be below workload.num_request_ratio (10)"),
    ({"screen_request_ratio": 2}, {"kv_load_ratio": None, "request_rate": 5.0},
     "sweep.screen_request_ratio: screening shortens a synthetic closed loop (concurrency or kv_load_ratio); this workload is a request rate"),
])
def test_a_screen_that_cannot_shorten_the_replay_is_refused(sweep, workload, message):
    data = config().model_dump(mode="json")
    data["workload"] = {**{k: v for k, v in data["workload"].items() if v is not None}, **workload}
    data["workload"] = {k: v for k, v in data["workload"].items() if v is not None}
    data["sweep"] |= sweep
    data["goal"] = {"target": "pareto"}
    with pytest.raises(ConfigError) as caught:
        SmartSearchConfig.from_mapping(data)
    assert any(message in line for line in caught.value.lines)


def test_nothing_is_screened_where_latencies_judge_the_answer():
    big = {"concurrency": 4000, "router_mode": "round_robin"}
    data = config().model_dump(mode="json")
    for goal in ({"target": "ttft"}, {"target": "throughput_per_gpu", "sla": {"ttft_ms": 500.0}},
                 {"target": "pareto", "pareto_objectives": ["throughput_per_gpu", "e2e_latency"]}):
        workload = {k: v for k, v in data["workload"].items() if v is not None} | ({"kv_load_ratio": 0.5} if goal["target"] != "pareto" else {})
        searched = SmartSearchConfig.from_mapping({**data, "workload": workload, "goal": goal})
        assert screening.judges_latency(searched) and screening.screen_fields(searched, big) == {}
    assert not screening.judges_latency(config())
