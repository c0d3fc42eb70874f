"""The per-branch round loop: branches do not wait for each other, and every ask knows exactly
the results due by it."""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import Future

import pytest

from spica.search import run_smart_search
from spica.search.pool import InlinePool
from spica.evaluation.evaluate import request_count
from spica.search.rounds import RoundLoop
from spica.search.schedule import LATEST_DUE, later_rounds
from spica.search.unroll import candidate_key

from tests.search.test_search import small


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


class LatePool(InlinePool):
    """Evaluates for real, then hands each result back after its own delay (from `delays`,
    in turn), so replays finish in another order than they were asked in."""

    def __init__(self, delays: list[float]):
        self.delays = itertools.cycle(delays)
        self.submitted: list[str] = []

    def submit(self, fn, items):
        late = []
        for item, done in zip(items, super().submit(fn, items)):
            self.submitted.append(candidate_key(item[1]))
            held: Future = Future()
            threading.Timer(next(self.delays), _copy, args=(done, held)).start()
            late.append(held)
        return late


class LateFedPool(LatePool):
    """A LatePool of two workers that takes items one per free worker, so the search holds its
    replays and hands them out in its own order (spica/search/feeder.py)."""

    workers = 2
    instant_handoff = True


def _copy(done: Future, held: Future) -> None:
    if done.exception() is not None:
        held.set_exception(done.exception())
    else:
        held.set_result(done.result())


def _ledger(results) -> list[tuple]:
    return [(c.key, c.round, c.status, c.score) for c in results.ledger]


def test_the_ledger_is_the_same_whatever_order_the_replays_finish_in(tmp_path):
    """The fast designer asks ahead with pending trials: what each ask knows must not depend on
    which replay came back first."""
    config = small(
        search_space={"deployment_mode": ["agg", "disagg"], "agg_max_num_seqs": [1, 2, 4, 6], "decode_max_num_seqs": [64],
                      "prefill_max_num_seqs": [4]},
        sweep={"max_rounds": 4, "candidates_per_round": 3, "designer": "fast"},
    )
    runs = [
        run_smart_search(config, results_dir=tmp_path / str(n), pool=pool(delays))
        for n, (pool, delays) in enumerate(((LatePool, [0.0]), (LatePool, [0.3, 0.0, 0.1]), (LatePool, [0.0, 0.1, 0.3, 0.2, 0.0]),
                                            (LateFedPool, [0.2, 0.0, 0.1])))
    ]
    assert _ledger(runs[0]) == _ledger(runs[1]) == _ledger(runs[2]) == _ledger(runs[3])
    assert len(runs[0].ledger) == 2 * 4 * 3


class HoldingFirstPool(InlinePool):
    """Evaluates for real, but keeps the first replay of submission `hold_at` back until
    submission `release_at` (a timer releases it anyway, so a loop that waits for it fails, not hangs)."""

    def __init__(self, hold_at: int = 2, release_at: int = 3, timeout: float = 60):
        self.hold_at, self.release_at = hold_at, release_at
        self.rounds = 0
        self.held: tuple[Future, Future] | None = None
        self.released_by: str | None = None
        self._timer = threading.Timer(timeout, self.release, args=("timer",))
        self._timer.start()

    def submit(self, fn, items):
        futures = super().submit(fn, items)
        self.rounds += 1
        if self.rounds == self.hold_at:
            self.held = (Future(), futures[0])
            futures[0] = self.held[0]
        elif self.rounds >= self.release_at:
            self.release(f"submission {self.rounds}")
        return futures

    def release(self, by: str) -> None:
        if self.released_by is None and self.held is not None:
            self.released_by = by
            _copy(self.held[1], self.held[0])
        self._timer.cancel()


def test_a_branch_replays_its_next_round_while_one_replay_is_slow(tmp_path):
    config = small(search_space={"agg_max_num_seqs": [16, 32, 64, 128]}, sweep={"max_rounds": 4, "designer": "fast"})
    pool = HoldingFirstPool()
    run_smart_search(config, results_dir=tmp_path, pool=pool)
    assert pool.released_by == "submission 3"  # round 2 went out while round 1's first replay was held


def test_a_suggestion_is_due_a_round_later_for_each_cheapest_cost_it_takes_beyond_the_first():
    glm5_round = [6090, 99010, 51340, 1290, 26120, 2510, 9470, 9020]  # requests, upstream's GLM-5 study; cheapest 1290
    assert later_rounds(glm5_round) == [4, LATEST_DUE - 2, LATEST_DUE - 2, 0, LATEST_DUE - 2, 1, LATEST_DUE - 2, LATEST_DUE - 2]  # 99010: 77 units, capped
    assert later_rounds([128, 128, 128, 128]) == [0, 0, 0, 0]  # one fixed load: nothing is costlier
    assert later_rounds([10, 10, 10, 50]) == [0, 0, 0, 4]
    assert later_rounds([10, 10, 14, 15]) == [0, 0, 0, 1]  # 1.5 units rounds up
    assert later_rounds([10, None, 10, 50]) == [0, 0, 0, 0]  # a trace: costs unknown


KV_LOAD = {"isl": 512, "osl": 32, "concurrency": None, "kv_load_ratio": 0.3, "num_request_ratio": 1}
EXTENSIVE = {"target": "throughput"}  # replica counts matter (not scale-free): their loads, and costs, differ


class HoldingCostliestPool(HoldingFirstPool):
    """Keeps the first round's costliest replay back until submission `release_at`, and
    checks that each round is handed out costliest first."""

    def __init__(self, config, release_at):
        super().__init__(hold_at=1, release_at=release_at, timeout=300)
        self.config = config
        self.first_costs: list[int] | None = None

    def submit(self, fn, items):
        costs = [request_count(self.config, unrolled) for _, unrolled in items]
        assert costs == sorted(costs, reverse=True)  # handed out costliest first
        self.first_costs = self.first_costs or costs
        return super().submit(fn, items)


def test_a_rounds_costliest_replay_holds_back_no_ask_before_it_is_due(tmp_path):
    config = small(workload=KV_LOAD, search_space={"agg_max_num_seqs": [16, 32, 64, 128]}, goal=EXTENSIVE,
                   sweep={"max_rounds": 5, "candidates_per_round": 4, "parallel_evals": 4, "designer": "fast"})
    pool = HoldingCostliestPool(config, release_at=3)
    run_smart_search(config, results_dir=tmp_path, pool=pool)
    assert pool.first_costs == [1676, 989, 989, 989]  # 1.7 units: due one round after the rest, by the 4th ask
    assert pool.released_by == "submission 3"  # rounds 1 and 2 went out while round 0's costliest replay was held


def test_with_deferred_replays_the_ledger_is_the_same_whatever_order_they_finish_in(tmp_path):
    config = small(workload=KV_LOAD, search_space={"agg_max_num_seqs": [16, 32, 64, 128]}, goal=EXTENSIVE,
                   sweep={"max_rounds": 5, "candidates_per_round": 4, "parallel_evals": 4, "designer": "fast"})
    runs = [
        run_smart_search(config, results_dir=tmp_path / str(n), pool=LatePool(delays))
        for n, delays in enumerate(([0.0], [0.4, 0.0, 0.1], [0.0, 0.1, 0.4, 0.2, 0.0]))
    ]
    assert _ledger(runs[0]) == _ledger(runs[1]) == _ledger(runs[2])
    assert len(runs[0].ledger) == 5 * 4


class SizesPool(InlinePool):
    """Evaluates for real, noting how many replays each submission holds."""

    def __init__(self):
        self.sizes: list[int] = []

    def submit(self, fn, items):
        self.sizes.append(len(items))
        return super().submit(fn, items)


def test_a_round_wider_than_the_pool_is_asked_in_parts_as_wide_as_the_pool_the_last_round_whole(tmp_path, monkeypatch):
    config = small(search_space={"agg_max_num_seqs": [1, 2, 3, 4, 6]},
                   sweep={"max_rounds": 3, "candidates_per_round": 4, "parallel_evals": 2})
    untold_at_ask = []
    ask = RoundLoop._ask

    def counting_ask(self, branch, slot):
        untold_at_ask.append(sum(item.position is not None for item in branch.untold))
        return ask(self, branch, slot)

    monkeypatch.setattr(RoundLoop, "_ask", counting_ask)
    pool = SizesPool()
    results = run_smart_search(config, results_dir=tmp_path, pool=pool)
    assert pool.sizes[:5] == [2, 2, 2, 2, 4]  # the last round's replays reach the pool at once (the replica steps after)
    assert untold_at_ask == [0, 2, 2, 2, 2]  # each ask knows all but the one before it
    assert [c.round for c in results.ledger[:12]] == [0] * 4 + [1] * 4 + [2] * 4  # the rounds are the config's
    assert len(results.ledger) == 12 + sum(pool.sizes[5:])
