"""Study algorithms by name: the choices of `sweep.algorithm`, and how each builds a branch's study.

Everything that needs to know the algorithms reads this table (the config's choices, the
search's studies and round budget), so adding one is an entry here plus its own module.
Factories import their module when called: Vizier and JAX take seconds to import, which a
grid search, or a spawned evaluation worker re-importing its caller, should not pay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from spica.study.base import AskPlan, AskRecord, Study
from spica.study.grid import GridStudy
from spica.study.params import Objective, Param

VIZIER_DESIGNERS = ("fast", "default", "random", "quasi_random")
"""The choices of `sweep.designer`, read by the vizier algorithm only (spica/study/engine.py)."""


@dataclass(frozen=True)
class StudyRequest:
    """What one branch's study is built from (docs/search.md step 5)."""

    study_id: str
    params: tuple[Param, ...]  # may be empty: every knob of the branch is pinned
    objectives: tuple[Objective, ...]
    seed: int
    fingerprint: str  # the plan's: a study kept anywhere must never be confused with another plan's
    points: list[Mapping[str, Any]] | None  # every valid point where the space can be listed, else a seeded sample of them
    asks: AskPlan  # the asks the search plans to make of the study
    designer: str  # sweep.designer
    record: AskRecord | None = None  # where a model-based study keeps its designer's answers, for a resume


@dataclass(frozen=True)
class Algorithm:
    """One entry: `exhaustive` algorithms measure every listed point once, whatever max_rounds says;
    `packages` are the distributions beyond Spica's stack whose versions decide its suggestions,
    recorded in a plan (spica/plan.py) so that a plan runs with exactly them."""

    name: str
    build: Callable[[StudyRequest], Study]
    exhaustive: bool = False
    packages: tuple[str, ...] = ()


_PINNED = (Param("pinned", "categorical", choices=("only",)),)  # a Vizier study needs a dimension


def _vizier(request: StudyRequest) -> Study:
    from spica.study import exported

    # the GP executables a study like this one used last (the fast designer's) load while Vizier
    # imports; the name leaves out the seed and the plan, which do not change their shapes
    exported.preload(repr((request.designer, request.params, request.objectives, request.asks)))
    from spica.study.vizier_study import VizierStudy

    return VizierStudy(
        request.study_id,
        request.params or _PINNED,
        request.objectives,
        seed=request.seed,
        storage_dir=None,  # one run's study: a resume replays it from the journal and the record
        fingerprint=request.fingerprint,
        algorithm=request.designer,
        candidates=request.points if request.params else None,
        asks=request.asks,
        record=request.record,
    )


def _grid(request: StudyRequest) -> Study:
    return GridStudy(request.points or [], request.objectives)


def _optuna_tpe(request: StudyRequest) -> Study:
    """TPE's own start-up default (10 random trials) would leave small budgets random
    throughout; the first ask of random points, then TPE."""
    from spica.study.optuna_tpe import OptunaTpeStudy

    return OptunaTpeStudy(request.params, request.objectives, seed=request.seed, startup_trials=request.asks.sizes[0])


ALGORITHMS: dict[str, Algorithm] = {
    entry.name: entry
    for entry in (
        Algorithm("vizier", _vizier),
        Algorithm("grid", _grid, exhaustive=True),
        Algorithm("optuna_tpe", _optuna_tpe, packages=("optuna",)),
    )
}
