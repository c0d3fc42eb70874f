"""Where a search's time went: choosing time split into the part that overlaps replays and the
part that lengthens the search; idle worker time split by what the search was doing."""

from __future__ import annotations

import json
import time
from concurrent.futures import Future

import pytest

from spica.search import run_smart_search
from spica.search.clocks import OptimizerClock, WorkerClock

from tests.search.test_search import small


def test_choosing_with_nothing_running_is_exposed():
    clock = OptimizerClock()
    with clock.choosing([]):
        time.sleep(0.05)
    assert clock.seconds == pytest.approx(clock.exposed_seconds) and clock.seconds >= 0.05


def test_choosing_while_a_replay_runs_is_hidden_until_it_ends():
    clock = OptimizerClock()
    running: Future = Future()
    clock.watch(running)
    with clock.choosing([running]):
        time.sleep(0.05)
        running.set_result(None)  # the replay ends half way through the choosing
        time.sleep(0.05)
    assert clock.seconds >= 0.1
    assert 0.04 <= clock.exposed_seconds <= clock.seconds - 0.04


class Ticks:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_idle_workers_are_counted_by_what_the_search_was_doing_and_idle_cores_beside_them():
    ticks = Ticks()
    clock = WorkerClock(4, now=ticks, cores=2)
    ticks.now = 5.0  # before the first replay: nothing counts
    first, second, third = Future(), Future(), Future()
    clock.handed_out(first)
    clock.handed_out(second)
    ticks.now = 7.0
    clock.phase("asking")  # 2 s with 2 of 4 workers idle, waiting
    ticks.now = 8.0
    clock.handed_out(third)  # 1 s, 2 idle, asking
    clock.phase("waiting")
    ticks.now = 10.0
    first.set_result(None)  # 2 s, 1 idle
    clock.phase("finishing")
    ticks.now = 13.0
    second.set_result(None)  # 3 s, 2 idle
    ticks.now = 14.0
    third.set_result(None)  # 1 s, 3 idle; then the last replay is back: the window ends
    ticks.now = 50.0
    clock.phase("finishing")
    assert clock.idle == {"asking": 2.0, "waiting": 4.0 + 2.0, "finishing": 6.0 + 3.0}
    assert clock.idle_seconds == 17.0
    assert clock.idle_cores == 1.0  # 4 workers on 2 cores: only the last second, one replay out, left a core idle


def test_an_ask_keeps_a_core_busy_while_a_worker_is_idle():
    ticks = Ticks()
    clock = WorkerClock(2, now=ticks, cores=2)
    first, second = Future(), Future()
    clock.handed_out(first)
    clock.phase("asking")
    ticks.now = 1.0
    first.set_result(None)  # 1 s asking, 1 replay out: a worker idle, no core
    ticks.now = 3.0
    clock.handed_out(second)  # 2 s asking, none out: both workers idle, one core (the ask runs on the other)
    clock.phase("waiting")
    ticks.now = 4.0
    clock.phase("finishing")  # 1 s waiting, 1 out: a worker and a core idle
    second.set_result(None)
    assert clock.idle == {"asking": 1.0 + 4.0, "waiting": 1.0, "finishing": 0.0}
    assert clock.idle_cores == 2.0 + 1.0


def test_a_narrowed_clock_counts_only_the_workers_a_replay_may_be_handed_to():
    ticks = Ticks()
    clock = WorkerClock(8, now=ticks, cores=2)
    first = Future()
    clock.handed_out(first)
    ticks.now = 1.0
    clock.narrow(2)  # 1 s with 7 of 8 idle
    ticks.now = 4.0
    clock.phase("finishing")  # 3 s with 1 of 2 idle
    first.set_result(None)
    assert clock.idle_seconds == 7.0 + 3.0
    assert clock.left_empty == 6 * 3.0
    assert clock.idle_cores == 1.0 + 3.0


def test_a_queue_longer_than_the_pool_keeps_every_worker_busy():
    ticks = Ticks()
    clock = WorkerClock(2, now=ticks)
    queued = [Future() for _ in range(5)]
    for future in queued:
        clock.handed_out(future)
    for future in queued[:4]:
        ticks.now += 1.0
        future.set_result(None)  # 2 or more still out: no worker idle
    ticks.now += 1.0
    queued[4].set_result(None)  # the last one alone for a second: one worker idle
    assert clock.idle_seconds == 1.0


def test_a_search_reports_its_idle_workers_by_phase(tmp_path):
    """S1-like search on two real workers: the summary carries the split, and the phases add up
    to no more than the workers' time between the first replay and the last."""
    results = run_smart_search(small(sweep={"parallel_evals": 2}), results_dir=tmp_path, progress=False)
    timings = json.loads((tmp_path / "summary.json").read_text())["timings"]
    assert timings["workers"] == 2
    idle = timings["idle_worker_seconds"]
    assert set(idle) == {"asking", "waiting", "finishing"} and all(seconds >= 0 for seconds in idle.values())
    window = timings["evaluations_done_at"] - timings["first_evaluation_at"]
    assert 0 < sum(idle.values()) <= 2 * window + 1e-6
    assert results.ledger
