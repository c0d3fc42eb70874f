"""Workload: the traffic a search replays (a trace, or synthetic open loop, closed loop or KV load)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from spica.config.fields import Fraction, Frozen, NonNegative, NonNegativeInt, PositiveInt, PositiveNumber, unique
from spica.workloads import rules
from spica.workloads.registry import SHAPES, TRACE_FORMATS
from spica.workloads.rules import EXTRAS, LOAD_FIELDS
from spica.workloads.summary import TraceSummary, check_trace
from spica.workloads.trace import TraceError
KV_LOAD_RATIO_RULE = "a number ≥ 0, or [min, max] under a pareto goal"
CONCURRENCY_RULE = "a positive integer, or a list of them under a pareto goal"


def _finite_non_negative(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _kv_load_ratio(value: Any) -> float | list[float] | None:
    """One rule for both forms, so an error names the rule and not pydantic's union branches."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        if len(value) != 2 or not all(map(_finite_non_negative, value)):
            raise ValueError(f"{list(value)!r} must be {KV_LOAD_RATIO_RULE}")
        low, high = float(value[0]), float(value[1])
        if not low < high:
            raise ValueError(f"range {[low, high]} must be [min, max] with min < max")
        return [low, high]
    if not _finite_non_negative(value):
        raise ValueError(f"{value!r} must be {KV_LOAD_RATIO_RULE}")
    return float(value)


def _concurrency(value: Any) -> int | list[int] | None:
    def level(item: Any) -> bool:
        return isinstance(item, int) and not isinstance(item, bool) and item > 0

    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        if not value or not all(map(level, value)):
            raise ValueError(f"{list(value)!r} must be {CONCURRENCY_RULE}")
        return unique(list(value))
    if not level(value):
        raise ValueError(f"{value!r} must be {CONCURRENCY_RULE}")
    return value


class Workload(Frozen):
    """The traffic: a trace, or synthetic open loop (rate), closed loop (concurrency) or KV load."""

    trace_path: str | None = None
    trace_format: str = "mooncake"  # *superset*: any trace format of spica/workloads/registry.py
    arrival_speedup_ratio: PositiveNumber = 1.0
    replay_concurrency: PositiveInt | None = None
    request_rate: PositiveNumber | None = None
    concurrency: Annotated[Any, BeforeValidator(_concurrency)] = None
    kv_load_ratio: Annotated[Any, BeforeValidator(_kv_load_ratio)] = None
    isl: PositiveInt | None = None
    osl: PositiveInt | None = None
    num_request_ratio: PositiveNumber | None = None
    shared_prefix_ratio: Fraction = 0.0
    num_prefix_groups: NonNegativeInt = 0
    turns_per_session: PositiveInt = 1
    inter_turn_delay_ms: NonNegative = 0.0
    length_spread: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.0  # Spica's own: each request's isl and osl uniform in L·[1−s, 1+s]
    client_start: Literal["staggered"] | None = None  # Spica's own: null, every client at once (upstream); staggered

    @field_validator("trace_path")
    @classmethod
    def _trace_exists(cls, value: str | None) -> str | None:
        """Relative paths resolve against the directory the user ran from; the content is checked
        with the format, once every field is read (`_one_load`)."""
        if value is None:
            return None
        path = Path(value).expanduser()
        path = path if path.is_absolute() else Path.cwd() / path
        if not path.is_file():
            raise ValueError(f"trace file not found: {value} (looked at {path})")
        return str(path.resolve())

    @field_validator("trace_format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value not in TRACE_FORMATS:
            raise ValueError(f"{value!r} is not one of {', '.join(TRACE_FORMATS)}")
        return value

    @model_validator(mode="after")
    def _one_load(self) -> "Workload":
        """The rules of spica/workloads/rules.py, over the fields of the chosen shape's record."""
        trace = self._checked_trace()
        loads = [name for name in LOAD_FIELDS if getattr(self, name) is not None]
        rules.one_load(loads)
        shape = SHAPES[self.trace_format if self.trace_path is not None else loads[0]]
        fields = type(self).model_fields
        explicit = {name for name in self.model_fields_set if getattr(self, name) not in (None, fields[name].default)}
        rules.stray(shape.kind, sorted(explicit - set(shape.fields) - set(EXTRAS) - set(LOAD_FIELDS)))
        if self.trace_path is not None:
            if self.replay_concurrency is not None:
                rules.closed_loop_rule(self.trace_format, shape.closed_loop, bool(trace and trace.agentic))
            return self
        rules.required("synthetic", [name for name in ("isl", "osl", "num_request_ratio") if getattr(self, name) is None])
        rules.length_spread_rule(self.length_spread, self.turns_per_session)
        rules.client_start_rule(self.client_start, self.request_rate is None, self.turns_per_session)
        return self

    def _checked_trace(self) -> TraceSummary | None:
        """The trace read once in its format, before any other rule (a bad file is the news)."""
        if self.trace_path is None:
            return None
        try:
            return check_trace(self.trace_path, self.trace_format)
        except TraceError as exc:  # names the first bad line and its field
            raise ValueError(f"trace_path: {exc}") from None

    @property
    def kind(self) -> Literal["trace", "request_rate", "concurrency", "kv_load_ratio"]:
        return next(name for name in LOAD_FIELDS if getattr(self, name) is not None)  # type: ignore[return-value]

    @property
    def is_trace_based(self) -> bool:
        return self.trace_path is not None

    @property
    def is_synthetic(self) -> bool:
        return self.trace_path is None

    @property
    def kv_load_ratio_range(self) -> tuple[float, float] | None:
        """The (min, max) of a ranged kv_load_ratio (a study dimension), else None."""
        ratio = self.kv_load_ratio
        return (ratio[0], ratio[1]) if isinstance(ratio, list) else None

    def concurrency_levels(self) -> list[int]:
        if self.concurrency is None:
            return []
        return list(self.concurrency) if isinstance(self.concurrency, list) else [self.concurrency]

    def effective_in_flight_cap(self, concurrency_override: int | None = None) -> int | None:
        """Requests in flight at most: the candidate's (override) or the configured closed-loop
        concurrency; None for open-loop traffic, which has no cap."""
        if concurrency_override is not None:
            return int(concurrency_override)
        if self.is_trace_based:
            return self.replay_concurrency
        levels = self.concurrency_levels()
        return max(levels) if levels else None

    def resolved_request_count(self, concurrency_override: int | None = None, ratio: float | None = None) -> int | None:
        """docs/config.md: max(1, round(num_request_ratio × load)), load = concurrency (the
        candidate's own, or the configured one) or request rate; None for a trace (its rows
        are the requests) and for a KV-relative load before a candidate derives it. `ratio`:
        another number of requests per unit of load (a screening replay's)."""
        if self.is_trace_based:
            return None
        load = self.request_rate if self.request_rate is not None else self.effective_in_flight_cap(concurrency_override)
        if load is None:
            return None
        return max(1, round(float(ratio if ratio is not None else self.num_request_ratio) * load))
