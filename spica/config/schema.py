"""SmartSearchConfig: upstream Spica's published contract (docs/config.md), as frozen pydantic models.

Names, defaults, choice sets and rules are upstream's, so a YAML written for upstream loads
unchanged and means the same thing, and a config upstream refuses is refused here. Explicit
null is accepted wherever upstream's default is null. Where Spica accepts more (a list of
concurrencies under pareto, any positive engine value, its own sweep fields) no upstream file
changes meaning. Unknown keys are refused and a valid config never changes after validation.
Numbers are strict: `true` is not 1, and infinity or NaN is never a valid bound.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ValidationError, model_validator

from spica.config.errors import ConfigError, format_validation_error
from spica.config.fields import Frozen
from spica.config.goal import OptimizationGoal, OptimizationTarget
from spica.config.loading import load_config
from spica.config.search_space import SearchSpace
from spica.config.sweep import SweepConfig
from spica.config.workload import LOAD_FIELDS, Workload
from spica.workloads.summary import warn_if_longer_than
from spica.workloads.trace import MAX_REPLAY_REQUESTS

class SmartSearchConfig(Frozen):
    """One search: what may move (search_space), the traffic, the goal and the sweep budget."""

    search_space: SearchSpace
    workload: Workload
    goal: OptimizationGoal = OptimizationGoal()
    sweep: SweepConfig = SweepConfig()

    @model_validator(mode="before")
    @classmethod
    def _default_pareto_load(cls, data: Any) -> Any:
        """docs/config.md: a synthetic pareto workload that sets no load sweeps kv_load_ratio [0, 1]."""
        if not isinstance(data, Mapping):
            return data
        goal, workload = data.get("goal"), data.get("workload")
        pareto = isinstance(goal, Mapping) and str(goal.get("target")) == OptimizationTarget.pareto
        if pareto and isinstance(workload, Mapping) and all(workload.get(name) is None for name in LOAD_FIELDS):
            data = {**data, "workload": {**workload, "kv_load_ratio": [0.0, 1.0]}}
        return data

    @model_validator(mode="after")
    def _cross_block_rules(self) -> "SmartSearchConfig":
        workload, context = self.workload, self.search_space.context_length
        if workload.is_synthetic and workload.kind != "kv_load_ratio":
            count = workload.resolved_request_count()
            if count > MAX_REPLAY_REQUESTS:
                raise ValueError(
                    f"workload: num_request_ratio × load = {count:,} requests per replay; at most {MAX_REPLAY_REQUESTS:,} fit in memory"
                )
        screen = self.sweep.screen_request_ratio if not isinstance(self.sweep.screen_request_ratio, str) else None  # auto, off: never refused
        if screen is not None and (not workload.is_synthetic or workload.request_rate is not None):
            raise ValueError("sweep.screen_request_ratio: screening shortens a synthetic closed loop (concurrency or kv_load_ratio); "
                             "this workload is a " + ("trace" if workload.is_trace_based else "request rate"))
        if screen is not None and screen >= workload.num_request_ratio:
            raise ValueError(f"sweep.screen_request_ratio: {screen:g} must be below workload.num_request_ratio "
                             f"({workload.num_request_ratio:g}), the requests per client of a full replay")
        if context is not None and workload.is_synthetic and workload.isl + workload.osl > context:
            raise ValueError(
                f"workload: isl + osl = {workload.isl + workload.osl} tokens does not fit search_space.context_length {context}"
            )
        if context is not None and workload.is_trace_based:  # null: the model's maximum, said at enumeration
            warn_if_longer_than(workload.trace_path, context, "search_space.context_length", workload.trace_format)
        if self.goal.target_constrained and workload.request_rate is not None and self.goal.min_goodput_rps is None:
            raise ValueError(
                f"goal.min_goodput_rps: required for target {self.goal.target} with request_rate traffic "
                "(the SLA-good requests/s the answer must serve)"
            )
        prices, systems = self.goal.gpu_hour_price, self.search_space.hardware_skus
        if prices is not None:
            stray = [sku for sku in prices if sku not in systems]
            if stray:
                raise ValueError(f"goal.gpu_hour_price: {stray[0]!r} is not a system this search uses ({', '.join(systems)})")
            unpriced = [sku for sku in systems if sku not in prices]
            if unpriced:
                raise ValueError(f"goal.gpu_hour_price: no price for {unpriced[0]}, a system this search may choose (give one for each of {', '.join(systems)})")
        if not self.goal.is_pareto:
            if len(self.workload.concurrency_levels()) > 1:
                raise ValueError("workload.concurrency: a list of levels is only allowed under goal.target pareto; give one value")
            if self.workload.kv_load_ratio_range is not None:
                raise ValueError("workload.kv_load_ratio: a [min, max] range is only allowed under goal.target pareto; give one value")
        return self

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "SmartSearchConfig":
        """Validate, raising ConfigError with one line per problem."""
        if not isinstance(data, Mapping):
            raise ConfigError([f"config: expected a mapping with search_space, workload, goal, sweep; got {type(data).__name__}"])
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise ConfigError(format_validation_error(exc, cls)) from None

    @classmethod
    def from_yaml(cls, path: str | Path) -> "SmartSearchConfig":
        return cls.from_mapping(load_config(path))

    def to_data(self) -> dict[str, Any]:
        """Plain data that validates back to an equal config: a null is left out where the field
        defaults to it, and kept where it overrides a default (sweep.max_eval_seconds: null, no
        time cap; left out, a plan would run with the 600 s cap under the same fingerprint)."""
        return _without_default_nulls(self, self.model_dump(mode="json"))


def _without_default_nulls(model: BaseModel, data: dict[str, Any]) -> dict[str, Any]:
    """`model`'s dump without the nulls its fields (at every depth) default to."""
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        if value is None and field.default is None:
            data.pop(name, None)
        elif isinstance(value, BaseModel):
            _without_default_nulls(value, data[name])
        elif isinstance(value, (list, tuple)):
            for item, dumped in zip(value, data[name]):
                if isinstance(item, BaseModel):
                    _without_default_nulls(item, dumped)
    return data
