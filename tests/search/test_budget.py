"""The time budget (sweep.max_search_seconds): the search stops asking when it runs out, ends
what still replays within a tenth of the budget, writes its results as usual from everything
measured, and the same command resumes it with a fresh budget."""

from __future__ import annotations

import json
from concurrent.futures import Future

import pytest

from spica.results.table import format_results
from spica.search import run_smart_search
from spica.search.pool import InlinePool

from tests.search.test_search import CountingPool, small

pytestmark = pytest.mark.e2e

BUDGET = 20.0  # seconds: room for start-up and the first replays on a busy machine; the rest never finish


class StallingPool(InlinePool):
    """The real in-process pool for its first `finishing` replays; every later one stays running
    (a replay far longer than the budget), so the budget, not the rounds, ends the search."""

    def __init__(self, finishing: int):
        self.finishing = finishing
        self.finished: list[str] = []
        self.stalled: list[Future] = []

    def submit(self, fn, items):
        futures = []
        for item in items:
            if len(self.finished) < self.finishing:
                self.finished.append(json.dumps(item[1], sort_keys=True))
                futures += super().submit(fn, [item])
            else:
                self.stalled.append(Future())
                futures.append(self.stalled[-1])
        return futures


def test_a_search_out_of_time_writes_what_it_measured_and_resumes_with_a_fresh_budget(tmp_path):
    config = small(sweep={"max_rounds": 4, "parallel_evals": 1, "max_search_seconds": BUDGET})
    whole = run_smart_search(small(sweep={"max_rounds": 4, "parallel_evals": 1}), results_dir=tmp_path / "whole")

    pool = StallingPool(finishing=3)
    stopped = run_smart_search(config, results_dir=tmp_path / "out", pool=pool)
    assert len(stopped.ledger) == 3 and {json.dumps(c.unrolled, sort_keys=True) for c in stopped.ledger} == set(pool.finished)
    assert [c.key for c in stopped.ledger] == [c.key for c in whole.ledger[:3]]  # what it measured, in the ledger's order
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    budget = summary["timings"]["budget"]
    assert budget == {"max_search_seconds": BUDGET, "ran_out": True, "replays_ended": len(pool.stalled)} and pool.stalled
    assert BUDGET <= summary["timings"]["wall_seconds"] <= BUDGET * 1.1 + 5  # the grace is a tenth of the budget
    assert (tmp_path / "out" / "deploy").is_dir() and len((tmp_path / "out" / "evaluations.jsonl").read_text().splitlines()) == 3
    assert "stopped on the time budget (sweep.max_search_seconds=20)" in format_results(config, stopped, summary["timings"])

    resumed_pool = CountingPool()
    resumed = run_smart_search(config, results_dir=tmp_path / "out", pool=resumed_pool)
    assert [c.key for c in resumed.ledger] == [c.key for c in whole.ledger]  # as if never stopped
    assert len(resumed_pool.replayed) == len(whole.ledger) - 3  # every finished replay reused
    assert "budget" in json.loads((tmp_path / "out" / "summary.json").read_text())["timings"]
    # the designers' answers before the stop were taken back, not worked out again: the record holds
    # each of them once, at the moments of the search that never stopped (a budget changes no answer)
    moments = [json.loads(line)["moment"] for line in (tmp_path / "out" / "asks.jsonl").read_text().splitlines()]
    whole_moments = [json.loads(line)["moment"] for line in (tmp_path / "whole" / "asks.jsonl").read_text().splitlines()]
    assert len(set(moments)) == len(moments) > 1 and sorted(moments) == sorted(whole_moments)
    assert not json.loads((tmp_path / "out" / "summary.json").read_text())["timings"]["budget"]["ran_out"]
