"""A Spica study backed by a real Vizier study (in-process service, SQLite on disk).

Resumable: opening the same study id again (in any process) loads every trial, and
trials that were asked but never told are handed out again by the next ask(). A study that
lives for one run resumes through its AskRecord instead: its designer's answers are taken
back at the same moments of the same asks and tells.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Mapping, Sequence

from vizier import pyvizier as vz
from vizier.service import clients
from vizier.service import pyvizier as svz

from spica.study import engine, fast_designer, vizier_space
from spica.study.base import AskPlan, AskRecord, RecordedTrials, Trial, check_ask_count
from spica.study.params import Objective, Param, Suggestion, check_objectives, check_params, coerce_point, point_key
from spica.study.points import PointSet


class VizierStudy(RecordedTrials):
    """One Vizier study; `algorithm` is "fast" (Spica's designer), "default" (Vizier's
    GP-UCB-PE), "random" or "quasi_random".

    `fingerprint` (the caller's plan fingerprint) is part of the Vizier study id, with a
    digest of this study's own definition: Vizier silently keeps an existing study's
    config when an id is reused, so a changed plan or space must never map to an old id.
    `candidates` (optional) is the finite set of valid points; pool-aware algorithms
    pick only from it, each point once, and ask() returns fewer once it is used up.
    `storage_dir` None keeps the study in memory (Vizier's RAM datastore), for a study that
    lives for one run. `asks` (optional): the asks the caller plans; the fast designer then traces
    its JAX functions for them in the background from the start. `record` (optional) keeps every
    answer of the designer and gives back one it kept for the same moment instead of asking again.
    """

    def __init__(
        self,
        study_id: str,
        params: Sequence[Param],
        objectives: Sequence[Objective],
        *,
        seed: int,
        storage_dir: Path | None,
        fingerprint: str,
        algorithm: str = "fast",
        candidates: Sequence[Mapping[str, Any]] | None = None,
        asks: AskPlan | None = None,
        record: AskRecord | None = None,
    ) -> None:
        check_params(params)
        check_objectives(objectives)
        for label, value in (("study_id", study_id), ("fingerprint", fingerprint)):
            if not value or "/" in value:
                raise ValueError(f"{label}: {value!r} must be a non-empty string without '/'")
        if algorithm not in engine.DESIGNERS:
            raise ValueError(f"algorithm: {algorithm!r} is not one of {list(engine.DESIGNERS)}")
        self._params = tuple(params)
        self._objectives = tuple(objectives)
        self._algorithm = algorithm
        unique = _unique_points(self._params, candidates) if candidates is not None else None
        if unique is not None and not unique:
            raise ValueError("candidates: empty; pass None to search the whole space")
        self._pool = list(unique.values()) if unique is not None else None
        self._pool_keys = tuple(unique or ())
        definition = self._definition_digest(seed)
        self._vizier_id = f"{study_id}.{fingerprint}.{definition}"
        self._record = record
        # not the plan's fingerprint: a time budget or a worker count does not change an answer
        self._moment = _next_moment("", [study_id, definition])
        self._study = self._open(seed, Path(storage_dir) if storage_dir is not None else None, asks)
        self._trials = {t.id: self._trial(t) for t in self._study.trials().get()}
        self._undelivered = [i for i, t in sorted(self._trials.items()) if t.status == "pending"]

    def _open(self, seed: int, storage_dir: Path | None, asks: AskPlan | None) -> clients.Study:
        problem = vizier_space.problem_statement(self._params, self._objectives)
        config = svz.StudyConfig.from_problem(problem)
        config.algorithm = engine.DESIGNERS[self._algorithm].stored_as
        pool = None
        if self._pool is not None and engine.DESIGNERS[self._algorithm].pool_aware:
            pool = PointSet.build(problem, [vizier_space.to_vizier(self._params, p) for p in self._pool])
        spec = engine.DesignerSpec(self._algorithm, seed, pool, fast_designer.FastSettings())
        study = engine.engine_for(storage_dir).open_study(config, self._vizier_id, spec)
        warm_up = engine.DESIGNERS[self._algorithm].warm_up
        self._warming: Future | None = None
        if warm_up is not None and asks is not None:  # from the start: it runs while the other studies open
            self._warming = warm_up(problem, pool, asks=asks, seed=seed, settings=spec.settings)
        return study

    @property
    def vizier_study_id(self) -> str:
        """The id of the underlying Vizier study (owner "spica")."""
        return self._vizier_id

    def ask(self, n: int) -> list[Suggestion]:
        check_ask_count(n)
        resumed, self._undelivered = self._undelivered[:n], self._undelivered[n:]
        wanted = n - len(resumed)
        if self._pool is not None and engine.DESIGNERS[self._algorithm].pool_aware:
            wanted = min(wanted, self._unused_candidates())
        fresh = []
        if wanted > 0:
            for trial in self._designed(wanted):
                record = self._trial(trial)
                self._trials[record.trial_id] = record
                fresh.append(record.trial_id)
        suggestions = [Suggestion(i, dict(self._trials[i].params)) for i in resumed + sorted(fresh)]
        self._moment = _next_moment(self._moment, ["ask", n, [[s.trial_id, s.params] for s in suggestions]])
        return suggestions

    def _designed(self, wanted: int) -> list[vz.Trial]:
        """Up to `wanted` new trials from the designer, or as it answered at this moment before."""
        # A fresh client id per call: Vizier first re-serves a client's still-active trials.
        client_id = f"ask-{max(self._trials, default=0)}"
        moment = _next_moment(self._moment, ["designer", wanted])
        recalled = self._record.recall(moment) if self._record is not None else None
        if recalled is not None:  # requested trials are handed out by the service without a designer call
            for point in recalled:
                self._study.request(vz.TrialSuggestion(vizier_space.to_vizier(self._params, coerce_point(self._params, point))))
            return [trial.materialize() for trial in self._study.suggest(count=len(recalled), client_id=client_id)] if recalled else []
        if self._warming is not None and any(t.status != "pending" for t in self._trials.values()):
            self._warming.result()  # a model-based ask: let the warm-up finish rather than trace twice
            self._warming = None
        try:
            suggested = [trial.materialize() for trial in self._study.suggest(count=wanted, client_id=client_id)]
        except IndexError:
            # The designer had fewer picks than asked (min_gpus, min_cost: nothing left can beat the best
            # feasible one) and Vizier's service popped past them: the trials it made before stand.
            suggested = [trial for trial in self._study.trials().get() if trial.id not in self._trials]
        if self._record is not None:
            self._record.keep(moment, [dict(self._trial(trial).params) for trial in sorted(suggested, key=lambda t: t.id)])
        return suggested

    def tell(
        self, trial_id: int, metrics: Mapping[str, float] | None, infeasible_reason: str | None = None
    ) -> None:
        told = self._outcome(trial_id, metrics, infeasible_reason)
        trial = self._study.get_trial(trial_id)
        if told.status == "completed":
            trial.complete(vz.Measurement(metrics=dict(told.metrics)))
        else:
            trial.complete(infeasible_reason=told.infeasible_reason)
        self._trials[trial_id] = told
        self._moment = _next_moment(self._moment, ["tell", trial_id, told.status, dict(told.metrics), told.infeasible_reason])
        if trial_id in self._undelivered:
            self._undelivered.remove(trial_id)

    def _unused_candidates(self) -> int:
        """How many candidates no trial has used yet (pool-aware designers pick only these)."""
        used = {point_key(self._params, t.params) for t in self._trials.values()}
        return sum(key not in used for key in self._pool_keys)

    def _trial(self, trial: vz.Trial) -> Trial:
        """A Vizier trial as a Spica Trial record."""
        params = vizier_space.from_vizier(self._params, trial.parameters)
        if trial.status.name != "COMPLETED":
            return Trial(trial.id, params)
        if trial.infeasible:
            return Trial(trial.id, params, "infeasible", {}, trial.infeasibility_reason or "infeasible")
        metrics = {name: m.value for name, m in trial.final_measurement.metrics.items()}
        return Trial(trial.id, params, "completed", metrics, None)

    def _definition_digest(self, seed: int) -> str:
        definition = {
            "params": [repr(p) for p in self._params],
            "objectives": [repr(o) for o in self._objectives],
            "algorithm": self._algorithm,
            "seed": seed,
            "candidates": [repr(key) for key in self._pool_keys],
        }
        return hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()[:12]


def _next_moment(moment: str, event: Any) -> str:
    """The study's moment after `event`: a digest of the one before it and the event (floats
    exactly, as JSON writes them)."""
    return hashlib.sha256(json.dumps([moment, event], sort_keys=True, default=str).encode()).hexdigest()


def _unique_points(params: Sequence[Param], candidates: Sequence[Mapping[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The candidates, coerced, by key (first occurrence kept, in order)."""
    points: dict[tuple[Any, ...], dict[str, Any]] = {}
    for candidate in candidates:
        point = coerce_point(params, candidate)
        points.setdefault(point_key(params, point), point)
    return points
