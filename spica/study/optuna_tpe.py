"""A Spica study backed by Optuna's TPE sampler (`sweep.algorithm: optuna_tpe`).

The study lives in memory for one run, like every study of a search: a resume asks the same
seeded questions again and gets its finished answers from the journal (docs/search.md step 5).
Choices (categorical and discrete) reach Optuna as indices, so any value works and discrete
ones stay ordered; infeasible trials are told as failed, so TPE learns only from measured
values and never reads a failure as a low score.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping, Sequence

import optuna

from spica.study.base import RecordedTrials, Trial, check_ask_count
from spica.study.params import Objective, Param, Suggestion, check_objectives, check_params

# Optuna logs every told trial at INFO on its own handler; the search reports progress itself.
optuna.logging.set_verbosity(optuna.logging.WARNING)

_DIRECTIONS = {"maximize": optuna.study.StudyDirection.MAXIMIZE, "minimize": optuna.study.StudyDirection.MINIMIZE}


class OptunaTpeStudy(RecordedTrials):
    """Multivariate TPE with the constant liar (a batch's pending points count as bad ones, so
    one ask of n spreads out); the first `startup_trials` points are Optuna's random sampling.
    Same seed and same answers give the same suggestions."""

    def __init__(
        self, params: Sequence[Param], objectives: Sequence[Objective], *, seed: int, startup_trials: int
    ) -> None:
        if params:  # none: every knob of the branch is pinned, each ask gives the one point
            check_params(params)
        check_objectives(objectives)
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32:
            raise ValueError(f"optuna_tpe: seed must be an integer in [0, 2**32), got {seed!r}")
        if not isinstance(startup_trials, int) or isinstance(startup_trials, bool) or startup_trials < 1:
            raise ValueError(f"optuna_tpe: startup_trials must be a positive integer, got {startup_trials!r}")
        self._params = tuple(params)
        self._objectives = tuple(objectives)
        self._distributions = {p.name: _distribution(p) for p in self._params}
        sampler = optuna.samplers.TPESampler(
            seed=seed, n_startup_trials=startup_trials, multivariate=True, constant_liar=True
        )
        self._study = optuna.create_study(directions=[_DIRECTIONS[o.goal] for o in self._objectives], sampler=sampler)
        self._trials: dict[int, Trial] = {}

    def ask(self, n: int) -> list[Suggestion]:
        check_ask_count(n)
        suggestions = []
        for _ in range(n):
            asked = self._study.ask(self._distributions)
            params = {p.name: _value(p, asked.params[p.name]) for p in self._params}
            trial_id = asked.number + 1
            self._trials[trial_id] = Trial(trial_id, params)
            suggestions.append(Suggestion(trial_id, dict(params)))
        return suggestions

    def tell(
        self, trial_id: int, metrics: Mapping[str, float] | None, infeasible_reason: str | None = None
    ) -> None:
        told = self._outcome(trial_id, metrics, infeasible_reason)
        if told.status == "completed":
            self._study.tell(trial_id - 1, [told.metrics[o.name] for o in self._objectives])
        else:
            self._study.tell(trial_id - 1, state=optuna.trial.TrialState.FAIL)
        self._trials[trial_id] = told


def _distribution(param: Param) -> optuna.distributions.BaseDistribution:
    if param.kind == "categorical":
        return optuna.distributions.CategoricalDistribution(tuple(range(len(param.choices))))
    if param.kind == "discrete":
        return optuna.distributions.IntDistribution(0, len(param.choices) - 1)
    if param.kind == "integer":
        return optuna.distributions.IntDistribution(int(param.low), int(param.high))
    return optuna.distributions.FloatDistribution(float(param.low), float(param.high))


def _value(param: Param, raw: Any) -> Any:
    """Optuna's value as the Param's own (choices come back as their index)."""
    if param.kind == "categorical":
        return param.choices[raw]
    if param.kind == "discrete":
        return sorted(param.choices)[raw]
    return param.coerce(raw)
