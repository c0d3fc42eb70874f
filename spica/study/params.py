"""The values a study speaks in: search parameters, objectives and suggestions.

Kept free of Vizier so that callers (and GridStudy) can build a study space without
importing JAX. Conversion to and from Vizier's types lives in `vizier_space`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence

ParamKind = Literal["categorical", "integer", "double", "discrete"]
Goal = Literal["maximize", "minimize"]

_KINDS: tuple[str, ...] = ("categorical", "integer", "double", "discrete")
_GOALS: tuple[str, ...] = ("maximize", "minimize")


@dataclass(frozen=True)
class Param:
    """One study dimension.

    categorical/discrete take `choices` (discrete: numbers, modelled as ordered);
    integer/double take inclusive `low`/`high`.
    """

    name: str
    kind: ParamKind
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("Param.name: must be a non-empty string")
        if self.kind not in _KINDS:
            raise ValueError(f"Param {self.name!r}: kind {self.kind!r} is not one of {list(_KINDS)}")
        object.__setattr__(self, "choices", tuple(self.choices))
        if self.kind in ("categorical", "discrete"):
            self._check_choices()
        else:
            self._check_range()

    def _check_choices(self) -> None:
        if not self.choices:
            raise ValueError(f"Param {self.name!r}: {self.kind} needs at least one choice")
        if self.low is not None or self.high is not None:
            raise ValueError(f"Param {self.name!r}: {self.kind} takes choices, not low/high")
        if self.kind == "discrete" and not all(_is_number(c) for c in self.choices):
            raise ValueError(f"Param {self.name!r}: discrete choices must be numbers, got {list(self.choices)}")
        labels = [str(c) for c in self.choices]
        if len(set(labels)) != len(labels):
            raise ValueError(f"Param {self.name!r}: choices must be distinct, got {list(self.choices)}")

    def _check_range(self) -> None:
        if self.choices:
            raise ValueError(f"Param {self.name!r}: {self.kind} takes low/high, not choices")
        if not (_is_number(self.low) and _is_number(self.high)):
            raise ValueError(f"Param {self.name!r}: {self.kind} needs numeric low and high")
        if self.kind == "integer" and not (float(self.low).is_integer() and float(self.high).is_integer()):
            raise ValueError(f"Param {self.name!r}: integer bounds must be whole numbers, got {self.low}..{self.high}")
        if not self.low <= self.high:
            raise ValueError(f"Param {self.name!r}: low {self.low} must be <= high {self.high}")

    def coerce(self, value: Any) -> Any:
        """Returns `value` as this parameter's own Python value (ints as int), or raises.

        Vizier hands integers back as floats and categoricals as strings; this maps
        them back onto the declared domain so callers never see 3.0 for 3.
        """
        if self.kind == "categorical":
            for choice in self.choices:
                if value == choice or str(value) == str(choice):
                    return choice
        elif self.kind == "discrete":
            if _is_number(value):
                for choice in self.choices:
                    if math.isclose(float(value), float(choice), rel_tol=1e-9, abs_tol=1e-12):
                        return choice
        elif _is_number(value) and self.low <= float(value) <= self.high:
            if self.kind == "double":
                return float(value)
            if float(value).is_integer():
                return int(value)
        raise ValueError(f"Param {self.name!r}: value {value!r} is outside {self.domain()}")

    def domain(self) -> str:
        """Human-readable allowed values, for error messages."""
        if self.kind in ("categorical", "discrete"):
            return f"{list(self.choices)}"
        return f"{self.kind} in [{self.low}, {self.high}]"


@dataclass(frozen=True)
class Objective:
    """A metric the study optimises, by name, in the given direction. `ordered_by`: the study
    dimension whose value orders this objective before any trial is measured (min_gpus: the GPUs
    used), so a designer may search for feasibility alone (spica/study/feasibility.py)."""

    name: str
    goal: Goal = "maximize"
    ordered_by: str | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("Objective.name: must be a non-empty string")
        if self.goal not in _GOALS:
            raise ValueError(f"Objective {self.name!r}: goal {self.goal!r} is not one of {list(_GOALS)}")

    def signed(self, value: float) -> float:
        """Higher-is-better form of `value`."""
        return value if self.goal == "maximize" else -value


@dataclass(frozen=True)
class Suggestion:
    """A point to evaluate: tell its result back under `trial_id`."""

    trial_id: int
    params: Mapping[str, Any]


def check_params(params: Sequence[Param]) -> None:
    """Rejects an empty or duplicate-named parameter list."""
    if not params:
        raise ValueError("params: a study needs at least one parameter")
    _check_unique("params", [p.name for p in params])


def check_objectives(objectives: Sequence[Objective]) -> None:
    """Rejects an empty or duplicate-named objective list."""
    if not objectives:
        raise ValueError("objectives: a study needs at least one objective")
    _check_unique("objectives", [o.name for o in objectives])


def _check_unique(label: str, names: list[str]) -> None:
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"{label}: duplicate names {duplicates}")


def coerce_point(params: Sequence[Param], point: Mapping[str, Any]) -> dict[str, Any]:
    """Returns `point` with exactly the study's parameters, each coerced to its domain."""
    names = [p.name for p in params]
    missing = [n for n in names if n not in point]
    extra = sorted(set(point) - set(names))
    if missing or extra:
        raise ValueError(f"candidate {dict(point)}: missing params {missing}, unknown params {extra}; expected {names}")
    return {p.name: p.coerce(point[p.name]) for p in params}


def point_key(params: Sequence[Param], point: Mapping[str, Any]) -> tuple[Any, ...]:
    """Hashable identity of a coerced point, in parameter order."""
    return tuple(point[p.name] for p in params)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
