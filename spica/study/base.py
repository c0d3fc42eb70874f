"""The Study protocol (ask / tell) and the trial record every study keeps.

Optuna-like on purpose: Spica's loop only needs ask(n), tell(id, metrics), best()
and trials(), so the search engine behind it (Vizier, a plain grid) is swappable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Protocol, Sequence

from spica.core.pareto import dominates
from spica.study.params import Objective, Suggestion

TrialStatus = Literal["pending", "completed", "infeasible"]


@dataclass(frozen=True)
class AskPlan:
    """The asks a search plans to make of one study: each one's size, in order, and how many of
    its earlier suggestions are still untold (pending) at each ask after the first. A designer
    that compiles per array size (the fast designer) prepares them from it ahead of the asks."""

    sizes: tuple[int, ...]
    pending: int


class AskRecord(Protocol):
    """Where a study keeps what its designer answered, by the moment it was asked (a digest of
    the study and of every ask and tell before it), so that a resumed search takes each answer
    back instead of having its designer work it out again: a designer's answer is a function of
    that moment, and a long study's asks cost more than reading them (spica/results/ledger.py)."""

    def recall(self, moment: str) -> list[dict[str, Any]] | None:
        """The points answered at `moment`, in trial order; None if it was never asked."""
        ...

    def keep(self, moment: str, points: list[dict[str, Any]]) -> None: ...


@dataclass(frozen=True)
class Trial:
    """A suggestion and, once told, its outcome. Infeasible trials carry a reason, no metrics."""

    trial_id: int
    params: Mapping[str, Any]
    status: TrialStatus = "pending"
    metrics: Mapping[str, float] = field(default_factory=dict)
    infeasible_reason: str | None = None


class Study(Protocol):
    """One search over a fixed space; every method is synchronous and cheap to call."""

    @property
    def objectives(self) -> tuple[Objective, ...]: ...

    def ask(self, n: int) -> list[Suggestion]:
        """Up to `n` new suggestions; fewer (or none) once a finite space is exhausted."""
        ...

    def tell(
        self, trial_id: int, metrics: Mapping[str, float] | None, infeasible_reason: str | None = None
    ) -> None:
        """Records a result. `metrics=None` marks the trial infeasible (never a low score)."""
        ...

    def best(self) -> list[Trial]:
        """The best completed trial (single objective) or the Pareto-optimal ones."""
        ...

    def trials(self) -> list[Trial]:
        """Every trial so far, by trial id."""
        ...


class RecordedTrials:
    """What every study answers from its own records, kept by trial id in `_trials` beside its
    `_objectives`: the objectives, best(), trials(), and the checks of a tell()."""

    _objectives: tuple[Objective, ...]
    _trials: dict[int, Trial]

    @property
    def objectives(self) -> tuple[Objective, ...]:
        return self._objectives

    def best(self) -> list[Trial]:
        return best_trials(self.trials(), self._objectives)

    def trials(self) -> list[Trial]:
        return [self._trials[i] for i in sorted(self._trials)]

    def _outcome(self, trial_id: int, metrics: Mapping[str, float] | None, infeasible_reason: str | None) -> Trial:
        """Asked trial `trial_id` with this tell's outcome, validated; the caller records it."""
        if trial_id not in self._trials:
            raise KeyError(f"tell: unknown trial id {trial_id}; asked ids are 1..{max(self._trials, default=0)}")
        return told_outcome(self._trials[trial_id], self._objectives, metrics, infeasible_reason)


def check_ask_count(n: int) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"ask: n must be a positive integer, got {n!r}")


def told_outcome(
    trial: Trial,
    objectives: Sequence[Objective],
    metrics: Mapping[str, float] | None,
    infeasible_reason: str | None,
) -> Trial:
    """Validates a tell() against `trial` and returns the trial with its outcome recorded."""
    if trial.status != "pending":
        raise ValueError(f"tell: trial {trial.trial_id} was already told ({trial.status})")
    if metrics is None:
        reason = infeasible_reason or "infeasible"
        return Trial(trial.trial_id, trial.params, "infeasible", {}, reason)
    if infeasible_reason is not None:
        raise ValueError(f"tell: trial {trial.trial_id} got both metrics and infeasible_reason; give one")
    missing = [o.name for o in objectives if o.name not in metrics]
    if missing:
        raise ValueError(f"tell: trial {trial.trial_id} metrics lack objectives {missing}")
    values = {name: float(value) for name, value in metrics.items()}
    bad = sorted(name for name, value in values.items() if not math.isfinite(value))
    if bad:
        raise ValueError(f"tell: trial {trial.trial_id} metrics {bad} are not finite; tell it as infeasible instead")
    return Trial(trial.trial_id, trial.params, "completed", values, None)


def best_trials(trials: Sequence[Trial], objectives: Sequence[Objective]) -> list[Trial]:
    """Single objective: the top trial (ties to the lowest id). Several: the non-dominated set, by id."""
    done = [t for t in trials if t.status == "completed"]
    scores = {t.trial_id: tuple(o.signed(t.metrics[o.name]) for o in objectives) for t in done}
    if len(objectives) == 1:
        return [max(done, key=lambda t: (scores[t.trial_id][0], -t.trial_id))] if done else []
    return [t for t in done if not any(dominates(scores[o.trial_id], scores[t.trial_id]) for o in done)]
