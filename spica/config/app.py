"""Spica's own blocks beside the SmartSearchConfig, and every default as one Hydra node.

The `spica` command composes `conf/` on top of `schema_defaults()`: the pydantic models here
and in the contract's modules (schema.py and the blocks it holds) own every default, and
`conf/` holds only what the embedded default search (or a group option) deliberately sets
otherwise. The app blocks are validated like the rest:
a typo such as `evaluation.max_paralel=3` is an error, never ignored.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ValidationError, create_model, model_validator

from spica.config.deploy import DeploySettings
from spica.config.errors import ConfigError, format_validation_error
from spica.config.executors import EXECUTORS, NAMES, settings_fields
from spica.config.fields import Frozen
from spica.config.goal import OptimizationGoal
from spica.config.schema import SmartSearchConfig
from spica.config.search_space import SearchSpace
from spica.config.sweep import SweepConfig
from spica.config.workload import LOAD_FIELDS, Workload


class _Evaluation(Frozen):
    """Where candidate replays run, and the timing calibration they score with. The executor is
    not part of a plan (it never changes a score): `executor` names a record of
    spica/config/executors.py; the other keys are every executor's own, flat. `calibration` (a
    file `spica calibrate` wrote; null: none) changes every score, so the plan records its
    factors."""

    executor: str
    calibration: str | None = None

    @model_validator(mode="after")
    def _checked_by_its_executor(self) -> _Evaluation:
        self.executor_settings()  # the chosen executor's own rules, its errors under `evaluation.`
        return self

    def executor_settings(self) -> BaseModel:
        """The chosen executor's keys, validated by its own settings model."""
        model = EXECUTORS[self.executor].settings
        return model.model_validate({name: getattr(self, name) for name in model.model_fields if name != "calibration"})


EvaluationSettings = create_model(
    "EvaluationSettings", __base__=_Evaluation, __module__=__name__,
    executor=(Literal[NAMES], "local"), **settings_fields(),
)


class AppSettings(Frozen):
    """The command's own keys: where results go, how evaluations are executed, how manifests deploy."""

    results_dir: str | None = None  # null: Hydra's run directory
    evaluation: EvaluationSettings = EvaluationSettings()
    deploy: DeploySettings = DeploySettings()  # the manifests' cluster side (spica/config/deploy.py)


APP_KEYS = tuple(AppSettings.model_fields)


def split_app_settings(data: Mapping[str, Any]) -> tuple[SmartSearchConfig, AppSettings]:
    """Validate a composed config: the SmartSearchConfig blocks and the app's own, every
    problem as one line (both halves are checked before either error is raised)."""
    data = dict(data)
    app_data = {key: data.pop(key) for key in APP_KEYS if key in data}
    lines: list[str] = []
    app = None
    try:
        app = AppSettings.model_validate(app_data)
    except ValidationError as exc:
        lines += format_validation_error(exc, AppSettings)
    try:
        config = SmartSearchConfig.from_mapping(data)
    except ConfigError as exc:
        raise ConfigError(exc.lines + lines) from None
    if app is None:
        raise ConfigError(lines)
    return config, app


def _defaults(model: type[BaseModel]) -> dict[str, Any]:
    values = {name: field.get_default(call_default_factory=True) for name, field in model.model_fields.items() if not field.is_required()}
    return json.loads(json.dumps(values, default=lambda value: value.model_dump(mode="json")))


def schema_defaults() -> dict[str, Any]:
    """Every default of the schema as plain data (Hydra's base node; nulls included). The fields
    that choose the kind of traffic are left to the `workload` group, which sets exactly one."""
    workload = {name: value for name, value in _defaults(Workload).items() if name not in LOAD_FIELDS}
    return {
        "search_space": _defaults(SearchSpace),
        "workload": workload,
        "goal": _defaults(OptimizationGoal),
        "sweep": _defaults(SweepConfig),
        **_defaults(AppSettings),
    }
