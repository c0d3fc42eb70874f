"""A live progress line while a search runs: round (or the step after the rounds), evaluations
done of planned, feasible (and screened, spica/evaluation/screening.py) and failed, best so far
(or the front's size), elapsed, ETA. The best and the front count screening replays too: they
are the study's view until confirmed."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from spica.core.candidate import Candidate
from spica.core.console import tell
from spica.evaluation.score import pareto_front, signed_score


class Progress:
    """Rewrites one line on a terminal; prints a line per round elsewhere (logs, CI, SLURM)."""

    def __init__(self, target: list[str], enabled: bool, stream: TextIO | None = None, deadline: float | None = None, total: int = 1):
        """`deadline`: the time.monotonic() at which the search's time budget runs out, if it has one;
        `total`: the evaluations planned (set once the space is enumerated)."""
        self.total = max(total, 1)
        self.deadline = deadline
        self.target = target
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self.done = 0
        self.best: float | None = None
        self.feasible = 0
        self.screened = 0
        self.failed = 0
        self.front: list[list[float]] = []  # pareto: the signed objectives of the front so far
        self.round = 0
        self.step: str | None = None  # after the rounds: what the search does, in place of the round
        self._tty = self.stream.isatty()

    def update(self, round_number: int, candidate: Candidate) -> None:
        self.done += 1
        self.feasible += candidate.feasible
        self.screened += candidate.status == "screened"
        self.failed += candidate.status == "failed"
        if candidate.scored and candidate.score is not None and (self.best is None or candidate.score > self.best):
            self.best = candidate.score
        if len(self.target) > 1 and candidate.scored and all(name in candidate.objectives for name in self.target):
            point = [signed_score(name, candidate.objectives) for name in self.target]
            self.front = pareto_front([*self.front, point], lambda values: values)
        new_round = round_number > self.round  # branches run their rounds side by side
        self.round = max(self.round, round_number)
        if self.enabled and (self._tty or new_round or self.step):
            self._emit()

    def begin(self, step: str) -> None:
        """A step after the rounds (screening's confirmations): it names the line from now on, and
        piped output gets a line per evaluation in it, as no new round will come to print one."""
        self.step = step

    def phase(self, name: str) -> None:
        """What the search does before its first evaluation, on a terminal only (redrawn in place,
        the progress line then takes its place); piped output keeps its lines as they were."""
        if self.enabled and self._tty and not self.done:
            self.enabled = tell(self.stream, f"\r\x1b[Kspica: {name}...")

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        remaining = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        budget = ""
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            remaining = min(remaining, max(left, 0.0))
            budget = f" | budget {max(left, 0.0):,.0f}s left"
        if len(self.target) > 1:  # pareto: no single best
            best = f"front {len(self.front)}"
        else:
            shown = abs(self.best) if self.best is not None else None  # the score is signed; show the value
            best = f"best {shown:,.2f} {self.target[0]}" if shown is not None else "best -"
        screened = f", {self.screened} screened" if self.screened else ""
        return (
            f"{self.step or f'round {self.round}'} | {self.done}/{self.total} evaluations, {self.feasible} feasible{screened}, {self.failed} failed | {best} | "
            f"elapsed {elapsed:,.0f}s | ETA {max(remaining, 0):,.0f}s{budget}"
        )

    def _emit(self) -> None:
        if self._tty:  # the line redrawn in place, what was there before cleared
            self.enabled = tell(self.stream, f"\r\x1b[Kspica: {self.line()}")
        else:
            self.enabled = tell(self.stream, f"spica: {self.line()}\n")  # no reader left: the search goes on silently

    def close(self) -> None:
        """Ends the display (once): on a terminal the last progress line is kept, a phase line cleared."""
        if self.enabled and self._tty:
            tell(self.stream, "\n" if self.done else "\r\x1b[K")
        self.enabled = False
