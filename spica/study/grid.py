"""Exhaustive study: every candidate exactly once, in the order given.

For small spaces a model-based search wastes rounds re-learning what a full sweep
measures directly; a grid also makes a run trivially comparable across seeds.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from spica.study.base import RecordedTrials, Trial, check_ask_count
from spica.study.params import Objective, Suggestion, check_objectives


class GridStudy(RecordedTrials):
    """Hands out `candidates` in their given order (duplicates dropped), ids from 1."""

    def __init__(self, candidates: Sequence[Mapping[str, Any]], objectives: Sequence[Objective]) -> None:
        check_objectives(objectives)
        self._objectives = tuple(objectives)
        self._candidates = _unique(candidates)
        self._trials: dict[int, Trial] = {}

    def ask(self, n: int) -> list[Suggestion]:
        check_ask_count(n)
        start = len(self._trials)
        batch = self._candidates[start : start + n]
        suggestions = [Suggestion(start + i + 1, dict(point)) for i, point in enumerate(batch)]
        for s in suggestions:
            self._trials[s.trial_id] = Trial(s.trial_id, s.params)
        return suggestions

    def tell(
        self, trial_id: int, metrics: Mapping[str, float] | None, infeasible_reason: str | None = None
    ) -> None:
        self._trials[trial_id] = self._outcome(trial_id, metrics, infeasible_reason)

    @property
    def remaining(self) -> int:
        """Candidates not yet handed out."""
        return len(self._candidates) - len(self._trials)


def _unique(candidates: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    seen: set[tuple[tuple[str, Any], ...]] = set()
    unique = []
    for point in candidates:
        key = tuple(sorted((name, repr(value)) for name, value in point.items()))
        if key not in seen:
            seen.add(key)
            unique.append(dict(point))
    return unique
