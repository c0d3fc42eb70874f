"""Finite point sets (Vizier's "candidates"), and the space-filling designers that use them.

Spica's projected pool of valid configurations is finite (and often small). A designer
that picks from it directly never wastes a trial on a point that projects onto one
already measured, and knows when the space is exhausted.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
from vizier import algorithms as vza
from vizier import pyvizier as vz
from vizier.pyvizier.converters import jnp_converters

from spica.study.vizier_internals import quasi_random, random_designer

ParameterKey = tuple[Any, ...]
Converter = jnp_converters.TrialToContinuousAndCategoricalConverter

_HALTON_SKIP = 1000  # Vizier's own default: skips the correlated head of the sequence


@dataclass(frozen=True)
class Features:
    """GP inputs in NumPy: continuous features scaled to [0, 1], categorical as indices."""

    continuous: np.ndarray
    categorical: np.ndarray

    def __len__(self) -> int:
        return len(self.continuous)

    def take(self, rows: Sequence[int]) -> Features:
        rows = np.asarray(rows, dtype=int)
        return Features(self.continuous[rows], self.categorical[rows])

    def stack(self, other: Features) -> Features:
        return Features(
            np.vstack([self.continuous, other.continuous]), np.vstack([self.categorical, other.categorical])
        )


def feature_converter(problem: vz.ProblemStatement) -> Converter:
    """Vizier's GP encoding (the one its GP designers use), in its NumPy-only form."""
    return Converter.from_study_config(
        problem, scale=True, max_discrete_indices=0, flip_sign_for_minimization_metrics=True
    )


def features_of(converter: Converter, trials: Sequence[vz.TrialSuggestion]) -> Features:
    raw = converter.to_features(trials)
    return Features(np.asarray(raw.continuous), np.asarray(raw.categorical))


def _pool_features(converter: Converter, names: Sequence[str], points: Sequence[Mapping[str, Any]]) -> Features:
    """features_of every point, with Vizier's converter run once per distinct value of each
    parameter: a parameter's feature depends on its own value only. Probe trial k holds each
    parameter's k-th distinct value (its last one past the end); each point's feature column is
    then read from the probe holding its value."""
    if not points:
        return features_of(converter, [])
    distinct = {name: list(dict.fromkeys(point[name] for point in points)) for name in names}
    probes = [
        vz.TrialSuggestion({name: values[min(k, len(values) - 1)] for name, values in distinct.items()})
        for k in range(max(len(values) for values in distinct.values()))
    ]
    probed = features_of(converter, probes)
    probe_of = {name: {value: k for k, value in enumerate(values)} for name, values in distinct.items()}

    def columns(specs: Sequence[Any], of_probes: np.ndarray) -> np.ndarray:
        gathered = [of_probes[[probe_of[spec.name][point[spec.name]] for point in points], j] for j, spec in enumerate(specs)]
        return np.stack(gathered, axis=1) if gathered else np.zeros((len(points), 0), dtype=of_probes.dtype)

    specs = converter.output_specs
    return Features(columns(specs.continuous, probed.continuous), columns(specs.categorical, probed.categorical))


def parameter_key(parameters: vz.ParameterDict, names: Sequence[str]) -> ParameterKey:
    """Identity of a point in Vizier's terms (numbers as float: the client returns ints as floats)."""
    return tuple(_value_key(parameters[name].value) for name in names)


def _value_key(value: Any) -> Any:
    return value if isinstance(value, str) else float(value)


def used_keys(trials: Sequence[vz.Trial], names: Sequence[str]) -> set[ParameterKey]:
    return {parameter_key(t.parameters, names) for t in trials}


@dataclass(frozen=True)
class PointSet:
    """A finite set of points in Vizier's parameters, with their GP features computed once.

    Built as a study opens, before its first round: the points stay plain mappings until one
    is picked (`parameters_at`), and the features come from Vizier's converter run on each
    parameter's distinct values, not on every point (benchmarks/peer/s1.yaml's 5,112 disagg points: 0.3 s → 0.02 s).
    """

    names: tuple[str, ...]
    points: tuple[Mapping[str, Any], ...]
    features: Features
    keys: tuple[ParameterKey, ...]

    @classmethod
    def build(cls, problem: vz.ProblemStatement, points: Sequence[Mapping[str, Any]]) -> PointSet:
        names = tuple(pc.name for pc in problem.search_space.parameters)
        keys = tuple(tuple(_value_key(point[name]) for name in names) for point in points)
        return cls(names, tuple(points), _pool_features(feature_converter(problem), names, points), keys)

    def parameters_at(self, row: int) -> vz.ParameterDict:
        return vz.ParameterDict(self.points[row])

    def __len__(self) -> int:
        return len(self.keys)

    def features_of(self, converter: Converter, trials: Sequence[vz.TrialSuggestion]) -> Features:
        """The trials' GP features, read from the set where a trial is one of its points
        (Vizier's converter costs milliseconds per trial)."""
        rows = self.rows_of(trials)
        if not trials or None in rows:
            return features_of(converter, trials)
        return self.features.take(rows)

    def rows_of(self, trials: Sequence[vz.TrialSuggestion]) -> list[int | None]:
        """Each trial's row in the set (None: not one of its points)."""
        return [self._row.get(parameter_key(t.parameters, self.names)) for t in trials]

    @functools.cached_property
    def _row(self) -> dict[ParameterKey, int]:
        return {key: row for row, key in enumerate(self.keys)}

    def first(self, n: int) -> PointSet:
        """The first n points: a smaller set whose features have the same columns and types."""
        return PointSet(self.names, self.points[:n], self.features.take(range(min(n, len(self)))), self.keys[:n])

    def unused_mask(self, used: set[ParameterKey]) -> np.ndarray:
        return np.array([key not in used for key in self.keys], dtype=bool)


def quasi_random_suggestions(
    problem: vz.ProblemStatement,
    candidates: PointSet | None,
    used: set[ParameterKey],
    count: int,
    *,
    seed: int,
    offset: int,
) -> list[vz.TrialSuggestion]:
    """Halton points (continuing the sequence after `offset` points); with candidates, each
    snapped to the nearest unused candidate so the points cover the valid set evenly."""
    halton = quasi_random.QuasiRandomDesigner(
        problem.search_space, seed=seed, skip_points=_HALTON_SKIP + offset
    ).suggest(count)
    if candidates is None:
        return list(halton)
    available = candidates.unused_mask(used)
    points = features_of(feature_converter(problem), halton)
    pool = candidates.features
    picks = []
    for continuous, categorical in zip(points.continuous, points.categorical):
        if not available.any():
            break
        distance = np.sum((pool.continuous - continuous) ** 2, axis=1) + np.sum(pool.categorical != categorical, axis=1)
        index = int(np.argmin(np.where(available, distance, np.inf)))
        available[index] = False
        picks.append(vz.TrialSuggestion(candidates.parameters_at(index)))
    return picks


class SpaceFillingDesigner(vza.Designer):
    """Vizier's random / quasi-random search, restricted to the unused candidates when given.

    Stateless between calls like every designer here: `salt` (the study's trial count)
    continues the random stream / Halton sequence reproducibly.
    """

    def __init__(
        self, problem: vz.ProblemStatement, candidates: PointSet | None, *, quasi: bool, seed: int, salt: int
    ) -> None:
        self._problem = problem
        self._candidates = candidates
        self._quasi = quasi
        self._seed = seed
        self._salt = salt
        self._trials: list[vz.Trial] = []

    def update(self, completed: vza.CompletedTrials, all_active: vza.ActiveTrials) -> None:
        self._trials.extend(completed.trials)
        self._trials.extend(all_active.trials)

    def suggest(self, count: int | None = None) -> Sequence[vz.TrialSuggestion]:
        count = count or 1
        names = tuple(pc.name for pc in self._problem.search_space.parameters)
        used = used_keys(self._trials, names)
        if self._quasi:
            return quasi_random_suggestions(
                self._problem, self._candidates, used, count, seed=self._seed, offset=self._salt
            )
        stream = _stream_seed(self._seed, self._salt)
        if self._candidates is None:
            return random_designer.RandomDesigner(self._problem.search_space, seed=stream).suggest(count)
        unused = np.flatnonzero(self._candidates.unused_mask(used))
        chosen = np.random.default_rng(stream).choice(unused, size=min(count, unused.size), replace=False)
        return [vz.TrialSuggestion(self._candidates.parameters_at(int(i))) for i in chosen]


def _stream_seed(seed: int, salt: int) -> int:
    """A 32-bit seed for call number `salt` of a study seeded `seed` (RandomState needs < 2**32)."""
    digest = hashlib.sha256(f"{seed}:{salt}".encode()).digest()
    return int.from_bytes(digest[:4], "little")
