"""Screening in a real search (sweep.screen_request_ratio): the study learns from short replays,
the screened candidates near the best are replayed in full, and only full replays are the answer."""

from __future__ import annotations

import json
import threading
from concurrent.futures import Future

import pytest
from results_checks import check_results_folder

from spica.evaluation import screening
from spica.results.table import format_results
from spica.search import clocks, run_smart_search
from spica.search.pool import InlinePool
from spica.search.unroll import candidate_key

from tests.search.test_search import CountingPool, small

pytestmark = pytest.mark.e2e


def test_screened_candidates_guide_the_study_and_only_full_replays_are_the_answer(tmp_path, monkeypatch):
    monkeypatch.setattr(screening, "MIN_SCREENED_REQUESTS", 1)  # the small search's 24-request replays count as costly
    config = small(workload={"num_request_ratio": 3}, sweep={"screen_request_ratio": 1, "max_rounds": 4})
    results = run_smart_search(config, results_dir=tmp_path)

    screened = [c for c in results.ledger if c.status == "screened"]
    full = {c.key: c for c in results.ledger if c.status != "screened"}
    assert len(screened) >= 4 and results.tallies["screened"] == len(screened)
    assert all(c.unrolled["screen_request_ratio"] == 1.0 and c.metrics["num_requests"] == 8 and c.score is not None for c in screened)
    confirmed = screening.to_confirm(config.goal.objectives, results.ledger)
    assert confirmed and [candidate_key(screening.full_candidate(c.unrolled)) in full for c in confirmed] == [True] * len(confirmed)
    for candidate in confirmed:
        twin = full[candidate_key(screening.full_candidate(candidate.unrolled))]
        assert twin.feasible and twin.metrics["num_requests"] == 24 and "screen_request_ratio" not in twin.unrolled
    assert list(results) and all(c.feasible and c.key in full for c in results)  # the answer: full replays only
    assert results[0].score == max(c.score for c in full.values() if c.feasible)
    check_results_folder(tmp_path)
    timings = json.loads((tmp_path / "summary.json").read_text())["timings"]
    assert f"{len(screened)} candidates were screened first: replayed at 1 requests per client instead of 3" in format_results(config, results, timings)

    again = CountingPool()
    resumed = run_smart_search(config, results_dir=tmp_path, pool=again)
    assert again.replayed == [] and [c.key for c in resumed.ledger] == [c.key for c in results.ledger]

    fresh = run_smart_search(config, results_dir=tmp_path / "again")  # a seeded search repeats its ledger
    assert [(c.key, c.status, c.objectives) for c in fresh.ledger] == [(c.key, c.status, c.objectives) for c in results.ledger]


class _HoldingPool(InlinePool):
    """The real in-process pool, except that every screening replay after the first `finishing` is
    held (a replay far longer than the budget); with `release`, only the first is, and it comes
    back when the first confirmation is handed out."""

    def __init__(self, finishing: int, release: bool = False):
        self.finishing, self.release, self.held, self.late = finishing, release, [], None

    def submit(self, fn, items):
        futures = []
        for item in items:
            screens = "screen_request_ratio" in item[1]
            if screens and self.finishing == 0 and not (self.release and self.held):
                self.held.append((Future(), fn, item))
                futures.append(self.held[-1][0])
                continue
            if not screens and self.release and self.held and self.late is None:  # a confirmation: the held replay returns
                future, held_fn, held_item = self.held[0]
                self.late = candidate_key(held_item[1])
                future.set_result(held_fn(held_item))
            self.finishing -= screens
            futures += super().submit(fn, [item])
        return futures


def _budgeted_search(tmp_path, monkeypatch, pool):
    monkeypatch.setattr(screening, "MIN_SCREENED_REQUESTS", 1)
    config = small(workload={"num_request_ratio": 3}, sweep={"screen_request_ratio": 1, "max_rounds": 6, "max_search_seconds": 20})
    return config, run_smart_search(config, results_dir=tmp_path, pool=pool)


def test_with_a_budget_confirmations_start_beside_round_replays_still_running(tmp_path, monkeypatch):
    pool = _HoldingPool(finishing=4)
    config, results = _budgeted_search(tmp_path, monkeypatch, pool)
    assert pool.held  # rounds' replays were still running when confirmation began
    screened = [c for c in results.ledger if c.status == "screened"]
    assert len(screened) == 4
    wanted = {candidate_key(screening.full_candidate(c.unrolled)) for c in screening.to_confirm(config.goal.objectives, results.ledger)}
    feasible = {c.key for c in results.ledger if c.feasible}
    assert wanted and wanted <= feasible  # every screened one near the answer was replayed in full, within the budget
    assert list(results) and {c.key for c in results} <= feasible


def test_with_a_budget_a_screened_row_back_during_confirmation_is_confirmed_too(tmp_path, monkeypatch):
    pool = _HoldingPool(finishing=5, release=True)
    config, results = _budgeted_search(tmp_path, monkeypatch, pool)
    late = next(c for c in results.ledger if c.key == pool.late)
    twin = candidate_key(screening.full_candidate(late.unrolled))
    others = [c for c in results.ledger if c.key != twin]
    assert late.status == "screened" and late in screening.to_confirm(config.goal.objectives, others)  # it came back near the answer
    assert twin in {c.key for c in results.ledger}  # and was replayed in full


class _OverlapPool(InlinePool):
    """The real in-process pool behind three workers that take items one at a time (so the
    search's feeder hands them out); each result comes back a little later, and the pool notes
    how many replays were running as each confirmation (an item not screened) was handed over."""

    workers = 3
    instant_handoff = True

    def __init__(self):
        self.running, self.at_confirmation = 0, []

    def submit(self, fn, items):
        late = []
        for item, done in zip(items, super().submit(fn, items)):
            if "screen_request_ratio" not in item[1]:
                self.at_confirmation.append(self.running)
            self.running += 1
            held: Future = Future()
            threading.Timer(0.05, self._back, args=(done, held)).start()
            late.append(held)
        return late

    def _back(self, done: Future, held: Future) -> None:
        self.running -= 1
        held.set_result(done.result())


def test_with_a_budget_confirmations_run_one_per_core(tmp_path, monkeypatch):
    """With more workers than cores, confirmations sharing the cores all come back late and the
    budget cuts them half done: they are handed out one per core."""
    monkeypatch.setattr(clocks, "_usable_cores", lambda: 1)
    monkeypatch.setattr(screening, "CONFIRM_MARGIN", 10.0)  # every screened candidate, in one wave
    pool = _OverlapPool()
    _, results = _budgeted_search(tmp_path, monkeypatch, pool)
    assert len(pool.at_confirmation) >= 2 and pool.at_confirmation == [0] * len(pool.at_confirmation)
    full = [c for c in results.ledger if c.status != "screened"]  # confirmations and replica steps, each drawn as one came back
    assert len(full) == len(pool.at_confirmation) == len({c.key for c in full}) and any(c.feasible for c in full)
