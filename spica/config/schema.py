"""SmartSearchConfig: the published contract of SPEC §2, as frozen pydantic models.

Unknown keys are rejected, every rule of SPEC §2.5 is checked here, and a valid config
never changes after validation. Field names are the upstream ones: YAML written for
upstream Spica loads unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)

from spica.config import composites, presets
from spica.config.errors import ConfigError, format_validation_error

Mode = Literal["agg", "disagg"]
Backend = Literal["vllm", "sglang", "trtllm"]
RouterMode = Literal["kv_router", "round_robin"]
Target = Literal[
    "throughput", "throughput_per_gpu", "throughput_per_user", "e2e_latency", "goodput", "goodput_per_gpu", "pareto"
]
Objective = Literal["throughput", "throughput_per_gpu", "throughput_per_user", "e2e_latency", "goodput", "goodput_per_gpu"]

SHAPE_KEYS = ("tp", "pp", "attention_dp", "moe_tp", "moe_ep", "replicas")
DERIVED_SHAPE_KEYS = ("strategy", "used_gpus")
GOODPUT_TARGETS = ("goodput", "goodput_per_gpu")
MINIMISED_OBJECTIVES = ("e2e_latency",)


def _as_list(value: Any) -> Any:
    """A single value for a list knob pins it: `backend: vllm` means `[vllm]`."""
    return value if isinstance(value, (list, tuple)) else [value]


def _unique(values: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for value in values:
        if value in seen:
            raise ValueError(f"{value!r} is listed twice")
        seen.append(value)
    return values


def _knob(item: Any) -> Any:
    """A list knob: one value or a non-empty list of distinct values."""
    return Annotated[list[item], BeforeValidator(_as_list), Field(min_length=1)]


def _composite(validator: composites.Validator) -> Any:
    return Annotated[list[Annotated[Any, BeforeValidator(validator)]], BeforeValidator(_as_list), Field(min_length=1)]


Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
NonNegative = Annotated[float, Field(ge=0.0)]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _shape_entry(entry: Any, where: str = "") -> dict[str, int]:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}{entry!r} must be a dict of {', '.join(SHAPE_KEYS)}")
    for key, value in entry.items():
        if key in DERIVED_SHAPE_KEYS:
            raise ValueError(f"{where}{key} is derived and cannot be set")
        if key not in SHAPE_KEYS:
            raise ValueError(f"{where}unknown key {key!r}; allowed: {', '.join(SHAPE_KEYS)}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{where}{key}: {value!r} must be a positive integer")
    return dict(entry)


def _parallel_config_entry(entry: Any) -> dict[str, Any]:
    """Agg entries are a shape; disagg entries hold a `prefill` and a `decode` shape."""
    if isinstance(entry, Mapping) and ("prefill" in entry or "decode" in entry):
        unknown = sorted(set(entry) - {"prefill", "decode"})
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r}; a disagg entry holds exactly prefill and decode")
        for role in ("prefill", "decode"):
            if role not in entry:
                raise ValueError(f"a disagg entry needs both prefill and decode; {role} is missing")
        return {role: _shape_entry(entry[role], f"{role}.") for role in ("prefill", "decode")}
    return _shape_entry(entry)


def parallel_config_mode(entry: Mapping[str, Any]) -> Mode:
    return "disagg" if "prefill" in entry else "agg"


class SearchSpace(_Frozen):
    """Which deployments may be built: deployment shape, engine, KV manager, router, planner."""

    # Deployment
    deployment_mode: Annotated[_knob(Mode), BeforeValidator(_as_list)] = ["agg", "disagg"]
    backend: _knob(Backend) = ["vllm"]
    parallel_configs: list[Annotated[dict[str, Any], BeforeValidator(_parallel_config_entry)]] = []
    # Pinned
    model_name: str
    hardware_sku: str
    gpu_budget: PositiveInt = 32
    min_gpu_budget: PositiveInt = 1
    min_endpoint: PositiveInt = 1
    context_length: PositiveInt | None = None
    startup_time: NonNegative = 0.0
    aic_nextn: Annotated[int, Field(ge=0)] = 0
    # Engine, per role
    agg_max_num_batched_tokens: _knob(PositiveInt) = [8192, 16384, 32768]
    prefill_max_num_batched_tokens: _knob(PositiveInt) = [8192, 16384, 32768]
    decode_max_num_batched_tokens: _knob(PositiveInt) = [8192]
    agg_max_num_seqs: _knob(PositiveInt) = [256, 512, 1024]
    prefill_max_num_seqs: _knob(PositiveInt) = [1, 2, 4, 8]
    decode_max_num_seqs: _knob(PositiveInt) = [256, 512, 1024]
    agg_block_size: PositiveInt = 64
    prefill_block_size: PositiveInt = 64
    decode_block_size: PositiveInt = 64
    agg_gpu_memory_utilization: Annotated[float, Field(gt=0.0, le=1.0)] = 0.9
    prefill_gpu_memory_utilization: Annotated[float, Field(gt=0.0, le=1.0)] = 0.9
    decode_gpu_memory_utilization: Annotated[float, Field(gt=0.0, le=1.0)] = 0.9
    agg_enable_prefix_caching: bool = True
    prefill_enable_prefix_caching: bool = True
    decode_enable_prefix_caching: bool = False
    # KV manager (host offload)
    num_g2_blocks: Annotated[int, Field(ge=0)] = 0
    kv_bytes_per_token: PositiveInt | None = None
    bandwidth_g1_to_g2_gbps: PositiveFloat | None = None
    bandwidth_g2_to_g1_gbps: PositiveFloat | None = None
    offload_batch_size: PositiveInt | None = None
    kv_transfer_bandwidth_gbps: PositiveFloat | None = None
    # Router
    router_mode: _knob(RouterMode) = ["round_robin"]
    overlap_score_credit: _knob(NonNegative) = [0.0, 0.5, 1.0]
    prefill_load_scale: _knob(NonNegative) = [0.0, 0.25, 0.5, 1.0, 2.0, 4.0]
    router_temperature: _knob(NonNegative) = [0.0, 0.2, 0.5, 1.0]
    host_cache_hit_weight: _knob(NonNegative) = [0.5, 1.0]
    disk_cache_hit_weight: _knob(NonNegative) = [0.25, 0.5]
    router_queue_threshold: PositiveFloat | None = None
    # Planner
    planner_scaling_policy: _composite(composites.scaling_policy_entry) = ["disabled"]
    planner_fpm_sampling: _composite(composites.fpm_sampling_entry) = ["default"]
    planner_load_sensitivity: _composite(composites.load_sensitivity_entry) = ["default"]
    load_predictor_candidates: _composite(composites.load_predictor_entry) = list(presets.LOAD_PREDICTORS)

    @field_validator(
        "deployment_mode", "backend", "router_mode", "agg_max_num_batched_tokens", "prefill_max_num_batched_tokens",
        "decode_max_num_batched_tokens", "agg_max_num_seqs", "prefill_max_num_seqs", "decode_max_num_seqs",
        "overlap_score_credit", "prefill_load_scale", "router_temperature", "host_cache_hit_weight",
        "disk_cache_hit_weight",
    )
    @classmethod
    def _distinct(cls, values: list[Any]) -> list[Any]:
        return _unique(values)

    @field_validator("decode_enable_prefix_caching")
    @classmethod
    def _decode_never_caches(cls, value: bool) -> bool:
        if value:
            raise ValueError("decode workers never cache prefixes; only false is allowed")
        return value

    @model_validator(mode="after")
    def _cross_field_rules(self) -> "SearchSpace":
        if self.min_gpu_budget > self.gpu_budget:
            raise ValueError(f"min_gpu_budget ({self.min_gpu_budget}) must be <= gpu_budget ({self.gpu_budget})")
        if self.num_g2_blocks > 0 and self.kv_bytes_per_token is None:
            raise ValueError("kv_bytes_per_token is required when host offload is on (num_g2_blocks > 0)")
        if len(self.parallel_configs) == 1 and len(self.deployment_mode) != 1:
            raise ValueError(
                "a pinned parallel_configs entry needs deployment_mode to hold exactly one mode, got "
                + ", ".join(self.deployment_mode)
            )
        for index, entry in enumerate(self.parallel_configs):
            mode = parallel_config_mode(entry)
            if mode not in self.deployment_mode:
                raise ValueError(
                    f"parallel_configs[{index}] is a {mode} config but deployment_mode is {', '.join(self.deployment_mode)}"
                )
        return self

    @property
    def offload_enabled(self) -> bool:
        return self.num_g2_blocks > 0

    def scaling_policies(self) -> list[tuple[str, dict[str, Any]]]:
        return composites.resolve(self.planner_scaling_policy, presets.PLANNER_SCALING_POLICIES)

    def fpm_samplings(self) -> list[tuple[str, dict[str, Any]]]:
        return composites.resolve(self.planner_fpm_sampling, presets.PLANNER_FPM_SAMPLING)

    def load_sensitivities(self) -> list[tuple[str, dict[str, Any]]]:
        return composites.resolve(self.planner_load_sensitivity, presets.PLANNER_LOAD_SENSITIVITY)

    def load_predictors(self) -> list[tuple[str, dict[str, Any]]]:
        return composites.resolve(self.load_predictor_candidates, presets.LOAD_PREDICTORS)


TRACE_ONLY = ("trace_format", "arrival_speedup_ratio", "replay_concurrency")
SYNTHETIC_ONLY = ("isl", "osl", "num_request_ratio", "turns_per_session", "inter_turn_delay_ms")
SHAPE_FIELDS = ("trace_path", "request_rate", "concurrency", "kv_load_ratio")


class Workload(_Frozen):
    """The traffic: a trace, or synthetic open loop (rate), closed loop (concurrency) or KV load."""

    trace_path: str | None = None
    trace_format: Literal["mooncake"] = "mooncake"
    arrival_speedup_ratio: PositiveFloat = 1.0
    replay_concurrency: PositiveInt | None = None
    request_rate: PositiveFloat | None = None
    concurrency: PositiveInt | Annotated[list[PositiveInt], Field(min_length=1)] | None = None
    kv_load_ratio: PositiveFloat | Annotated[list[PositiveFloat], Field(min_length=2, max_length=2)] | None = None
    isl: PositiveInt | None = None
    osl: PositiveInt | None = None
    num_request_ratio: PositiveFloat = 10.0
    shared_prefix_ratio: Fraction = 0.0
    num_prefix_groups: Annotated[int, Field(ge=0)] = 0
    turns_per_session: PositiveInt = 1
    inter_turn_delay_ms: NonNegative = 0.0

    @field_validator("trace_path")
    @classmethod
    def _trace_exists(cls, value: str | None) -> str | None:
        """Relative paths resolve against the directory the user ran from."""
        if value is None:
            return None
        path = Path(value).expanduser()
        path = path if path.is_absolute() else Path.cwd() / path
        if not path.is_file():
            raise ValueError(f"trace file not found: {value} (looked at {path})")
        return str(path.resolve())

    @model_validator(mode="after")
    def _one_shape(self) -> "Workload":
        shapes = [name for name in SHAPE_FIELDS if getattr(self, name) is not None]
        if len(shapes) != 1:
            got = ", ".join(shapes) if shapes else "none"
            raise ValueError(f"set exactly one of {', '.join(SHAPE_FIELDS)} (got: {got})")
        fields = type(self).model_fields
        explicit = {name for name in self.model_fields_set if getattr(self, name) not in (None, fields[name].default)}
        if self.trace_path is not None:
            stray = sorted(explicit & set(SYNTHETIC_ONLY))
            if stray:
                raise ValueError(f"{stray[0]} is a synthetic-workload field and cannot be used with trace_path")
        else:
            stray = sorted(explicit & set(TRACE_ONLY) - {"trace_format"})
            if stray:
                raise ValueError(f"{stray[0]} applies only to a trace workload (set trace_path)")
            missing = [name for name in ("isl", "osl") if getattr(self, name) is None]
            if missing:
                raise ValueError(f"{missing[0]} is required for a synthetic workload")
        if isinstance(self.kv_load_ratio, list) and not self.kv_load_ratio[0] < self.kv_load_ratio[1]:
            raise ValueError(f"kv_load_ratio range {self.kv_load_ratio} must be [min, max] with min < max")
        return self

    @property
    def kind(self) -> Literal["trace", "request_rate", "concurrency", "kv_load_ratio"]:
        return next(name for name in SHAPE_FIELDS if getattr(self, name) is not None)  # type: ignore[return-value]

    @property
    def is_trace(self) -> bool:
        return self.trace_path is not None

    def concurrency_levels(self) -> list[int]:
        if self.concurrency is None:
            return []
        return list(self.concurrency) if isinstance(self.concurrency, list) else [self.concurrency]

    def request_count(self, per_second_or_concurrency: float) -> int:
        """SPEC §2.2: request count = round(num_request_ratio × rate-or-concurrency)."""
        return max(1, round(self.num_request_ratio * per_second_or_concurrency))


class Sla(_Frozen):
    ttft_ms: PositiveFloat | None = None
    itl_ms: PositiveFloat | None = None
    e2e_ms: PositiveFloat | None = None


class Goal(_Frozen):
    """What 'best' means. goodput targets carry an SLA; pareto trades two or more objectives."""

    target: Target = "throughput"
    sla: Sla = Sla()
    pareto_objectives: Annotated[list[Objective], Field(min_length=2)] = ["throughput_per_gpu", "throughput_per_user"]

    @field_validator("pareto_objectives")
    @classmethod
    def _distinct_objectives(cls, values: list[str]) -> list[str]:
        return _unique(values)

    @model_validator(mode="after")
    def _sla_for_goodput(self) -> "Goal":
        if self.target in GOODPUT_TARGETS:
            sla = self.sla
            if sla.e2e_ms is None and (sla.ttft_ms is None or sla.itl_ms is None):
                raise ValueError(f"target {self.target} needs sla.e2e_ms, or both sla.ttft_ms and sla.itl_ms")
        return self

    @property
    def objectives(self) -> list[str]:
        return list(self.pareto_objectives) if self.target == "pareto" else [self.target]


class Sweep(_Frozen):
    """How hard to search: rounds, batch size, parallelism, seed, algorithm, time cap, timing model."""

    max_rounds: PositiveInt = 20
    parallel_evals: PositiveInt = 16
    candidates_per_round: PositiveInt | None = None
    seed: Annotated[int, Field(ge=0)] = 0
    algorithm: Literal["vizier", "grid"] = "vizier"
    designer: Literal["fast", "default", "random", "quasi_random"] = "fast"
    candidate_timeout_s: PositiveFloat | None = 600.0
    timing: Literal["table", "ais"] = "table"

    @property
    def per_round(self) -> int:
        return self.candidates_per_round or self.parallel_evals


class SmartSearchConfig(_Frozen):
    """One search: what may move (search_space), the traffic, the goal and the sweep budget."""

    search_space: SearchSpace
    workload: Workload
    goal: Goal = Goal()
    sweep: Sweep = Sweep()

    @model_validator(mode="after")
    def _cross_block_rules(self) -> "SmartSearchConfig":
        pareto = self.goal.target == "pareto"
        if isinstance(self.workload.concurrency, list) and len(self.workload.concurrency) > 1 and not pareto:
            raise ValueError("workload.concurrency: a list of levels is only allowed under goal.target pareto; give one value")
        if isinstance(self.workload.kv_load_ratio, list) and not pareto:
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
        return cls.from_mapping(load_yaml(path))

    def to_data(self) -> dict[str, Any]:
        """Plain data that validates back to an equal config."""
        return self.model_dump(mode="json", exclude_none=True)


def load_yaml(path: str | Path) -> Any:
    """Safe-load a YAML file; a missing or malformed file is a one-line ConfigError."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError([f"config file not found: {path}"])
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ConfigError([f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}"]) from None
