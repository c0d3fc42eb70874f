"""Translation between Spica's study values (params.py) and Vizier's problem and parameters.

Vizier stores categoricals as strings and discrete values as floats, and its client
returns integers as floats; every value crossing back is coerced to the Param's domain.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from vizier import pyvizier as vz

from spica.study.params import Objective, Param

ORDERED_BY = "ordered_by"  # problem metadata (namespace "spica"): Objective.ordered_by of a single objective
_GOALS = {"maximize": vz.ObjectiveMetricGoal.MAXIMIZE, "minimize": vz.ObjectiveMetricGoal.MINIMIZE}


def problem_statement(params: Sequence[Param], objectives: Sequence[Objective]) -> vz.ProblemStatement:
    problem = vz.ProblemStatement()
    root = problem.search_space.root
    for p in params:
        if p.kind == "categorical":
            root.add_categorical_param(p.name, [str(c) for c in p.choices])
        elif p.kind == "discrete":
            root.add_discrete_param(p.name, sorted(float(c) for c in p.choices))
        elif p.kind == "integer":
            root.add_int_param(p.name, int(p.low), int(p.high))
        else:
            root.add_float_param(p.name, float(p.low), float(p.high))
    for o in objectives:
        problem.metric_information.append(vz.MetricInformation(o.name, goal=_GOALS[o.goal]))
    if len(objectives) == 1 and objectives[0].ordered_by in {p.name for p in params}:
        problem.metadata.ns("spica")[ORDERED_BY] = objectives[0].ordered_by
    return problem


def to_vizier(params: Sequence[Param], point: Mapping[str, Any]) -> dict[str, Any]:
    """A coerced point as the values Vizier stores for it."""
    values: dict[str, Any] = {}
    for p in params:
        value = point[p.name]
        if p.kind == "categorical":
            values[p.name] = str(value)
        elif p.kind == "integer":
            values[p.name] = int(value)
        else:
            values[p.name] = float(value)
    return values


def from_vizier(params: Sequence[Param], parameters: vz.ParameterDict | Mapping[str, Any]) -> dict[str, Any]:
    """Vizier's values for a trial, back in each Param's own type (integers as int)."""
    return {p.name: p.coerce(_raw(parameters[p.name])) for p in params}


def _raw(value: Any) -> Any:
    return value.value if isinstance(value, vz.ParameterValue) else value
