"""The per-branch round loop: branches do not wait for each other; choosing time is split
into the part that overlaps replays and the part that lengthens the search."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest

from spica.search import run_smart_search
from spica.search.pool import InlinePool
from spica.search.rounds import OptimizerClock

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


class HoldingPool(InlinePool):
    """Evaluates for real, but keeps the disagg branch's results back until the agg branch has
    submitted `release_after` rounds; a timer releases them anyway so a wrong loop fails, not hangs."""

    def __init__(self, release_after: int):
        self.release_after = release_after
        self.agg_rounds = 0
        self.held: list[tuple[Future, Future]] = []
        self.released_by: str | None = None
        self._timer = threading.Timer(60, self.release, args=("timer",))
        self._timer.start()

    def submit(self, fn, items):
        done = super().submit(fn, items)
        if items[0][1]["deployment_mode"] == "agg":
            self.agg_rounds += 1
            if self.agg_rounds == self.release_after:
                self.release("agg rounds")
            return done
        if self.released_by is not None:
            return done
        held = [Future() for _ in done]
        self.held += list(zip(held, done))
        return held

    def release(self, by: str) -> None:
        if self.released_by is None:
            self.released_by = by
            for held, done in self.held:
                held.set_result(done.result())
        self._timer.cancel()


def test_a_branch_runs_its_rounds_while_another_branch_replays(tmp_path):
    config = small(
        search_space={"deployment_mode": ["agg", "disagg"], "prefill_max_num_seqs": [4], "decode_max_num_seqs": [64]},
        sweep={"max_rounds": 3},
    )
    pool = HoldingPool(release_after=3)
    results = run_smart_search(config, results_dir=tmp_path, pool=pool)
    assert pool.released_by == "agg rounds"  # agg reached its third round with disagg's first still out
    rounds = [(c.round, c.branch) for c in results.ledger]
    assert rounds == sorted(rounds, key=lambda r: (r[0], r[1] != "agg"))  # ledger in (round, branch) order
    assert {branch for _, branch in rounds} == {"agg", "disagg"}
