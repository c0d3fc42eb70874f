"""The feeder: one replay per free worker, the branch with the most replay time left first."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from spica.core.errors import DeadPoolError
from spica.search.feeder import Feeder


class _HandPool:
    """A pool whose items finish when the test says so (pure scheduling logic, no replays)."""

    instant_handoff = True

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.started: list[object] = []
        self._futures: dict[object, Future] = {}

    def submit(self, fn, items):
        futures = []
        for item in items:
            self.started.append(item)
            self._futures[item] = Future()
            futures.append(self._futures[item])
        return futures

    def finish(self, item) -> None:
        self._futures[item].set_result(f"done {item}")

    def close(self) -> None:
        pass


def test_a_free_worker_takes_the_branch_with_most_time_left_and_the_result_arrives():
    pool = _HandPool(workers=2)
    left = {"agg": 1.0, "disagg": 5.0}
    feeder = Feeder(pool, lambda tag: left[tag])
    agg = feeder.submit(str, ["a1", "a2", "a3"], "agg")
    assert pool.started == ["a1", "a2"]  # as many as there are workers, the rest held
    disagg = feeder.submit(str, ["d1", "d2"], "disagg")
    pool.finish("a1")
    assert pool.started[2] == "d1"  # disagg has more replay time left: it goes before a3
    assert agg[0].result(timeout=0) == "done a1"
    left["disagg"] = 0.5
    pool.finish("a2")
    assert pool.started[3] == "a3"  # now agg has more left
    pool.finish("d1")
    assert pool.started[4] == "d2" and disagg[0].result(timeout=0) == "done d1"


def test_closing_cancels_what_is_held_and_feeds_nothing_more():
    pool = _HandPool(workers=2)
    feeder = Feeder(pool, lambda tag: 0.0)
    first, _, held = feeder.submit(str, ["x", "y", "z"], "agg")
    feeder.close()
    assert held.cancelled()
    pool.finish("x")
    assert first.result(timeout=0) == "done x" and pool.started == ["x", "y"]


def test_dropping_what_is_held_cancels_it_and_keeps_feeding_what_comes_next():
    """A screened search's confirmations (docs/search.md step 5): the rounds' held replays are
    dropped, and the confirmations then go to the workers as they free up."""
    pool = _HandPool(workers=2)
    feeder = Feeder(pool, lambda tag: 0.0)
    first, _, held = feeder.submit(str, ["x", "y", "z"], "agg")
    feeder.drop_held()
    assert held.cancelled() and not first.cancelled()
    (confirmation,) = feeder.submit(str, ["c"], "confirmations")
    assert pool.started == ["x", "y"]  # both workers busy: held
    pool.finish("x")
    assert pool.started == ["x", "y", "c"] and first.result(timeout=0) == "done x"
    pool.finish("c")
    assert confirmation.result(timeout=0) == "done c"


def test_a_dead_pool_reaches_the_loop_through_the_future():
    class _Dead(_HandPool):
        def submit(self, fn, items):
            raise DeadPoolError("the evaluation worker pool died")

    (future,) = Feeder(_Dead(workers=2), lambda tag: 0.0).submit(str, ["x"], "agg")
    with pytest.raises(DeadPoolError):
        future.result(timeout=0)


def test_narrowed_it_hands_out_no_more_than_the_new_width_while_those_running_go_on():
    """A budgeted search's confirmations, one per core (spica/search/rounds.py)."""
    pool = _HandPool(workers=3)
    feeder = Feeder(pool, lambda tag: 0.0)
    feeder.submit(str, ["x", "y", "z"], "agg")
    assert feeder.narrow(8) == 3  # never wider than the pool
    assert feeder.narrow(1) == 1
    feeder.submit(str, ["c1", "c2"], "confirmations")
    pool.finish("x")
    pool.finish("y")
    assert pool.started == ["x", "y", "z"]  # z still runs: one at a time means none more yet
    pool.finish("z")
    assert pool.started == ["x", "y", "z", "c1"]
    pool.finish("c1")
    assert pool.started[-1] == "c2"


def test_it_hands_out_only_for_a_pool_of_several_workers_that_takes_items_at_once():
    """A SLURM array's tasks have cores of their own: a budgeted search does not narrow them."""
    assert Feeder(_HandPool(workers=2), lambda tag: 0.0).hands_out
    assert not Feeder(_HandPool(workers=1), lambda tag: 0.0).hands_out
    array = _HandPool(workers=8)
    array.instant_handoff = False
    assert not Feeder(array, lambda tag: 0.0).hands_out
