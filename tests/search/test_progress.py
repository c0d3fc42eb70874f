"""The progress line: one line per round off a terminal, and a search that loses its reader goes on."""

from __future__ import annotations

import io
import time

from spica.core.candidate import Candidate
from spica.core.console import tell
from spica.search.progress import Progress


class _ClosedPipe(io.StringIO):
    """A stream whose reader has gone: every flush fails as a pipe's does."""

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def _candidate(score: float, status: str = "feasible", **objectives: float) -> Candidate:
    return Candidate(key=str(score), branch="agg", round=1, status=status, unrolled={}, score=score, objectives=objectives)


def test_a_line_per_round_off_a_terminal_with_the_best_so_far():
    stream = io.StringIO()
    progress = Progress(target=["throughput"], enabled=True, stream=stream, total=4)
    progress.update(1, _candidate(10.0))
    progress.update(1, _candidate(12.5))
    progress.update(2, _candidate(11.0))
    lines = stream.getvalue().splitlines()
    assert [line.split(" | ")[:3] for line in lines] == [
        ["spica: round 1", "1/4 evaluations, 1 feasible, 0 failed", "best 10.00 throughput"],
        ["spica: round 2", "3/4 evaluations, 3 feasible, 0 failed", "best 12.50 throughput"],
    ]


def test_a_pareto_search_shows_the_size_of_its_front_so_far():
    stream = io.StringIO()
    progress = Progress(target=["throughput_per_gpu", "throughput_per_user"], enabled=True, stream=stream, total=5)
    progress.update(1, _candidate(100.0, throughput_per_gpu=100.0, throughput_per_user=10.0))
    progress.update(1, _candidate(50.0, throughput_per_gpu=50.0, throughput_per_user=30.0))
    progress.update(1, _candidate(40.0, throughput_per_gpu=40.0, throughput_per_user=20.0))  # dominated by the second
    progress.update(1, _candidate(0.0, "failed"))
    progress.update(2, _candidate(120.0, throughput_per_gpu=120.0, throughput_per_user=12.0))  # dominates the first
    fields = stream.getvalue().splitlines()[-1].split(" | ")
    assert fields[1:3] == ["5/5 evaluations, 4 feasible, 1 failed", "front 2"]


def test_a_stream_without_a_reader_stops_the_lines_not_the_search():
    stream = _ClosedPipe()
    progress = Progress(target=["throughput"], enabled=True, stream=stream, total=4)
    progress.update(1, _candidate(10.0))  # raised BrokenPipeError into the search before
    assert not progress.enabled
    progress.update(2, _candidate(12.0))
    progress.close()
    assert progress.done == 2 and progress.best == 12.0
    assert tell(stream, "x\n") is False and tell(io.StringIO(), "x\n") is True


def test_with_a_time_budget_the_line_says_what_is_left_and_the_eta_never_passes_it():
    stream = io.StringIO()
    progress = Progress(target=["throughput"], enabled=True, stream=stream, deadline=time.monotonic() + 100, total=1000)
    progress.started -= 50  # 50 s in, one evaluation of 1,000 done: at that pace the rounds need 14 hours
    progress.update(1, _candidate(10.0))
    fields = stream.getvalue().strip().split(" | ")
    eta, left = int(fields[-2].removeprefix("ETA ").removesuffix("s")), int(fields[-1].removeprefix("budget ").removesuffix("s left"))
    assert 98 <= left <= 100 and eta == left


def test_confirming_in_full_names_the_line_and_prints_each_evaluation_off_a_terminal():
    stream = io.StringIO()
    progress = Progress(target=["throughput"], enabled=True, stream=stream, total=3)
    progress.update(4, _candidate(10.0, "screened"))
    progress.begin("confirming in full")  # no new round comes now: a line per confirmation instead
    progress.update(4, _candidate(11.0))
    progress.update(4, _candidate(9.0))
    lines = stream.getvalue().splitlines()
    assert [line.split(" | ")[:2] for line in lines] == [
        ["spica: round 4", "1/3 evaluations, 0 feasible, 1 screened, 0 failed"],
        ["spica: confirming in full", "2/3 evaluations, 1 feasible, 1 screened, 0 failed"],
        ["spica: confirming in full", "3/3 evaluations, 2 feasible, 1 screened, 0 failed"],
    ]
