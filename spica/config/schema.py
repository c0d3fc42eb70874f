"""SmartSearchConfig: upstream Spica's published contract (docs/config.md), as frozen pydantic models.

Names, defaults, choice sets and rules are upstream's, so a YAML written for upstream loads
unchanged and means the same thing, and a config upstream refuses is refused here. Explicit
null is accepted wherever upstream's default is null. Where Spica accepts more (a list of
concurrencies under pareto, any positive engine value, its own sweep fields) no upstream file
changes meaning. Unknown keys are refused and a valid config never changes after validation.
Numbers are strict: `true` is not 1, and infinity or NaN is never a valid bound.
"""

from __future__ import annotations

import itertools
import logging
import math
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    field_validator,
    model_validator,
)

from spica import backends
from spica.config import composites, presets
from spica.config.errors import ConfigError, format_validation_error
from spica.config.trace import MAX_REPLAY_REQUESTS, check_trace, warn_if_longer_than
from spica.core.goals import GOALS, PARETO, Goal, PlannerTarget
from spica.core.quant import QUANT_NAMES, known_modes
from spica.core.unrolled import SHAPE_KEYS, Mode
from spica.study.algorithms import ALGORITHMS, VIZIER_DESIGNERS

log = logging.getLogger("spica.config")

Backend = Literal[backends.NAMES]  # type: ignore[valid-type]  # the registry's names, in its order
RouterMode = Literal["kv_router", "round_robin"]

PINNED_POOL_KEYS = (*SHAPE_KEYS, "replicas")
"""What a `parallel_configs` entry may set for one pool: its workers' shape and how many."""
DERIVED_SHAPE_KEYS = ("strategy", "used_gpus")

Int = Annotated[int, Strict()]
PositiveInt = Annotated[int, Strict(), Field(gt=0)]
NonNegativeInt = Annotated[int, Strict(), Field(ge=0)]
PositiveNumber = Annotated[float, Field(gt=0.0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Flag = Annotated[bool, Strict()]


class _Target(StrEnum):
    """What `goal.target` aims at: a goal of spica/core/goals.py, or pareto, which trades several."""

    @property
    def goal(self) -> Goal:
        if self.value == PARETO:
            raise ValueError("pareto has no scalar direction; each of goal.resolved_pareto_objectives has its own")
        return GOALS[self.value]

    @property
    def maximize(self) -> bool:
        return self.goal.maximize

    @property
    def needs_sla(self) -> bool:
        return self.value != PARETO and self.goal.needs_sla != "none"

    @property
    def planner_optimization_target(self) -> PlannerTarget:
        """The Dynamo Planner's target under this goal (a front aims at throughput)."""
        return "throughput" if self.value == PARETO else self.goal.planner_target


OptimizationTarget = _Target(
    "OptimizationTarget", {name: name for name in (*GOALS, PARETO)}, module=__name__, qualname="OptimizationTarget"
)
OBJECTIVES = tuple(name for name, goal in GOALS.items() if goal.pareto_objective)
DEFAULT_PARETO_OBJECTIVES = (OptimizationTarget.throughput_per_gpu, OptimizationTarget.throughput_per_user)


def _as_list(value: Any) -> Any:
    """A single value for a list knob pins it: `backend: vllm` means `[vllm]`."""
    return value if isinstance(value, (list, tuple)) else [value]


def _unique(values: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for value in values:
        if value in seen:
            raise ValueError(f"{str(value) if isinstance(value, StrEnum) else value!r} is listed twice")
        seen.append(value)
    return values


def _knob(item: Any) -> Any:
    """A list knob: one value or a non-empty list of distinct values."""
    return Annotated[list[item], BeforeValidator(_as_list), Field(min_length=1)]


def _composite(validator: composites.Validator) -> Any:
    return Annotated[list[Annotated[Any, BeforeValidator(validator)]], BeforeValidator(_as_list), Field(min_length=1)]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _shape_entry(entry: Any, where: str = "") -> dict[str, int]:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}{entry!r} must be a dict of {', '.join(PINNED_POOL_KEYS)}")
    for key, value in entry.items():
        if key in DERIVED_SHAPE_KEYS:
            raise ValueError(f"{where}{key} is derived and cannot be set")
        if key not in PINNED_POOL_KEYS:
            raise ValueError(f"{where}unknown key {key!r}; allowed: {', '.join(PINNED_POOL_KEYS)}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{where}{key}: {value!r} must be a positive integer")
    if "tp" not in entry:
        raise ValueError(f"{where}tp is required (pp, attention_dp, moe_tp, moe_ep and replicas default to 1)")
    return dict(entry)


def _backend_version(value: Any) -> str | dict[str, str] | None:
    """One perf-data version for every backend, or one per backend ({vllm: 0.24.0, ...})."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        for name, version in value.items():
            if name not in backends.NAMES:
                raise ValueError(f"{name!r} is not a backend; keys are among {', '.join(backends.NAMES)}")
            if not isinstance(version, str) or not version:
                raise ValueError(f"{name}: {version!r} must be a version string, e.g. 0.24.0")
        return dict(value)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{value!r} must be a version string, or a dict of one per backend")
    return value


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


MAX_ENUMERATED_GPU_BUDGET = 1024
"""Measured here: enumerating a dense model's agg and disagg pools takes 12 s and 0.9 GB at
1,024 GPUs and 46 s and 3.2 GB at 2,048; a pinned parallel_configs list needs no enumeration."""

ROLE_HARDWARE = ("prefill", "decode")
ROLE_HARDWARE_FIELDS = tuple(f"{role}_hardware_sku" for role in ROLE_HARDWARE)
ADMISSION_THRESHOLDS = ("active_decode_blocks_threshold", "active_prefill_tokens_threshold", "active_prefill_tokens_threshold_frac")
ENGINE_LIST_KNOBS = (
    "agg_max_num_batched_tokens", "prefill_max_num_batched_tokens", "decode_max_num_batched_tokens",
    "agg_max_num_seqs", "prefill_max_num_seqs", "decode_max_num_seqs",
)
ROUTER_LIST_KNOBS = ("overlap_score_credit", "prefill_load_scale", "router_temperature", "host_cache_hit_weight", "disk_cache_hit_weight")


class SearchSpace(_Frozen):
    """Which deployments may be built: deployment shape, engine, KV manager, router, planner."""

    # Deployment
    deployment_mode: _knob(Mode) = ["disagg", "agg"]
    backend: _knob(Backend) = ["vllm"]
    parallel_configs: list[Annotated[dict[str, Any], BeforeValidator(_parallel_config_entry)]] = []
    # Pinned
    model_name: str
    hardware_sku: str | list[str]  # superset: a list of systems is searched (one branch per system)
    prefill_hardware_sku: str | list[str] | None = None  # disagg only: the prefill pool's system(s) (null: hardware_sku)
    decode_hardware_sku: str | list[str] | None = None  # disagg only: the decode pool's system(s) (null: hardware_sku)
    gpu_budget: PositiveInt = 32
    gpu_budget_per_sku: dict[str, PositiveInt] | None = None  # Spica's own: GPUs of each system at most; gpu_budget stays the total
    min_gpu_budget: PositiveInt | None = None
    min_endpoint: PositiveInt | None = None
    context_length: PositiveInt | None = None
    startup_time: NonNegative | None = None
    aic_nextn: Annotated[int, Strict(), Field(ge=0, le=5)] | None = None
    nextn_accepted: NonNegative | None = None  # draft tokens accepted per decode step (0..aic_nextn); null: Replay's default
    backend_version: Annotated[Any, BeforeValidator(_backend_version)] = None  # Spica's own: null = the latest perf data
    # Quantization (the peer's pinned scalars; a list is searched; null = what the checkpoint uses)
    gemm_quant_mode: _knob(str) | None = None
    moe_quant_mode: _knob(str) | None = None
    kvcache_quant_mode: _knob(str) | None = None
    fmha_quant_mode: _knob(str) | None = None
    comm_quant_mode: _knob(str) | None = None
    # Engine, per role (superset: any positive integer)
    agg_max_num_batched_tokens: _knob(PositiveInt) = [8192, 16384, 32768]
    prefill_max_num_batched_tokens: _knob(PositiveInt) = [8192, 16384, 32768]
    decode_max_num_batched_tokens: _knob(PositiveInt) = [8192]
    agg_max_num_seqs: _knob(PositiveInt) = [256, 512, 1024]
    prefill_max_num_seqs: _knob(PositiveInt) = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    decode_max_num_seqs: _knob(PositiveInt) = [256, 512, 1024]
    agg_block_size: PositiveInt = 64
    prefill_block_size: PositiveInt = 64
    decode_block_size: PositiveInt = 64
    agg_gpu_memory_utilization: Annotated[float, Field(gt=0.0, le=1.0)] = 0.9
    prefill_gpu_memory_utilization: Annotated[float, Field(gt=0.0, le=1.0)] = 0.9
    decode_gpu_memory_utilization: Annotated[float, Field(gt=0.0, le=1.0)] = 0.9
    agg_enable_prefix_caching: Flag = True
    prefill_enable_prefix_caching: Flag = True
    decode_enable_prefix_caching: Flag = False
    # KV manager (host offload; num_g2_blocks null or 0 = off)
    num_g2_blocks: NonNegativeInt | None = None
    kv_bytes_per_token: PositiveInt | None = None
    bandwidth_g1_to_g2_gbps: PositiveNumber | None = None
    bandwidth_g2_to_g1_gbps: PositiveNumber | None = None
    offload_batch_size: PositiveInt | None = None
    kv_transfer_bandwidth_gbps: PositiveNumber | None = None  # Spica's own: disagg KV transfer
    # Router
    router_mode: _knob(RouterMode) = ["kv_router", "round_robin"]
    overlap_score_credit: _knob(Fraction) = [0.0, 0.5, 1.0]
    prefill_load_scale: _knob(NonNegative) = [0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    router_temperature: _knob(NonNegative) = [0.0, 0.2, 0.5, 1.0]
    host_cache_hit_weight: _knob(NonNegative) = [0.5, 0.75, 1.0]
    disk_cache_hit_weight: _knob(NonNegative) = [0.0, 0.25, 0.5]
    router_queue_threshold: PositiveNumber | None = None  # Spica's own: KvRouterConfig's queue threshold
    active_decode_blocks_threshold: Fraction | None = None
    active_prefill_tokens_threshold: NonNegativeInt | None = None
    active_prefill_tokens_threshold_frac: NonNegative | None = None
    no_admission_control: Flag = False
    # Planner
    planner_scaling_policy: _composite(composites.scaling_policy_entry) = list(presets.PLANNER_SCALING_POLICIES)
    planner_fpm_sampling: _composite(composites.fpm_sampling_entry) = list(presets.PLANNER_FPM_SAMPLING)
    planner_load_sensitivity: _composite(composites.load_sensitivity_entry) = list(presets.PLANNER_LOAD_SENSITIVITY)
    load_predictor_candidates: _composite(composites.load_predictor_entry) = list(presets.LOAD_PREDICTORS)

    @field_validator("deployment_mode", "backend", "router_mode", *ENGINE_LIST_KNOBS, *ROUTER_LIST_KNOBS)
    @classmethod
    def _distinct(cls, values: list[Any]) -> list[Any]:
        return _unique(values)

    @field_validator("hardware_sku", *(f"{role}_hardware_sku" for role in ROLE_HARDWARE))
    @classmethod
    def _system_choices(cls, value: str | list[str] | None) -> str | list[str] | None:
        """A list of systems is searched; one system, listed or not, is the pinned scalar it always was."""
        if not isinstance(value, list):
            return value
        if not value:
            raise ValueError("needs at least one system")
        return value[0] if len(_unique(value)) == 1 else value

    @field_validator(*QUANT_NAMES)
    @classmethod
    def _known_quant_modes(cls, values: list[str] | None, info: Any) -> list[str] | None:
        if values is None:
            return None
        known = known_modes(info.field_name)
        for value in values:
            if value not in known:
                raise ValueError(f"{value!r} is not a mode AI Configurator knows; one of {', '.join(known)}")
        return _unique(values)

    @model_validator(mode="before")
    @classmethod
    def _per_sku_budgets_keep_the_planner_still(cls, data: Any) -> Any:
        """Dynamo's Planner scales against one total budget and could take a system past its own:
        with per-system budgets, the default planner_scaling_policy narrows to [disabled] (said)
        and an explicit scaling policy is refused (_role_hardware_rules)."""
        if isinstance(data, Mapping) and data.get("gpu_budget_per_sku") and "planner_scaling_policy" not in data:
            log.warning("planner_scaling_policy: [disabled] with gpu_budget_per_sku (the Planner scales against the total budget only)")
            data = {**data, "planner_scaling_policy": ["disabled"]}
        return data

    @model_validator(mode="after")
    def _cross_field_rules(self) -> "SearchSpace":
        if self.min_gpu_budget is not None and self.min_gpu_budget > self.gpu_budget:
            raise ValueError(f"min_gpu_budget ({self.min_gpu_budget}) must be <= gpu_budget ({self.gpu_budget})")
        if not self.parallel_configs and self.gpu_budget > MAX_ENUMERATED_GPU_BUDGET:
            raise ValueError(
                f"gpu_budget: {self.gpu_budget} is above the {MAX_ENUMERATED_GPU_BUDGET} GPUs Spica enumerates "
                "(disagg pools pair up with the square of the budget); search a smaller budget or pin parallel_configs"
            )
        self._role_hardware_rules()
        if self.min_endpoint is not None and self.min_endpoint > self.gpu_budget:
            raise ValueError(f"min_endpoint ({self.min_endpoint}) must be <= gpu_budget ({self.gpu_budget}): each endpoint needs a GPU")
        if self.offload_enabled and self.kv_bytes_per_token is None:
            raise ValueError("kv_bytes_per_token is required when host offload is on (num_g2_blocks > 0)")
        if self.parallel_configs and len(self.deployment_mode) != 1:
            raise ValueError(
                "parallel_configs needs deployment_mode to hold exactly one mode, got " + ", ".join(self.deployment_mode)
            )
        for index, entry in enumerate(self.parallel_configs):
            mode = parallel_config_mode(entry)
            if mode == "agg" and self.deployment_mode == ["disagg"]:
                raise ValueError(
                    f"parallel_configs[{index}] lacks prefill and decode, which a disagg entry needs "
                    "(deployment_mode is disagg; a flat shape is an agg entry)"
                )
            if mode not in self.deployment_mode:
                raise ValueError(f"parallel_configs[{index}] is a disagg config but deployment_mode is agg")
        strict = [backends.BACKENDS[name] for name in self.backend if backends.BACKENDS[name].disagg_tokens_per_block]
        if strict and "disagg" in self.deployment_mode:
            for role in ("prefill", "decode"):
                block = getattr(self, f"{role}_block_size")
                odd = [value for value in getattr(self, f"{role}_max_num_batched_tokens") if value % block]
                if odd:
                    raise ValueError(
                        f"{role}_max_num_batched_tokens: {odd[0]} is not a multiple of {role}_block_size {block}; "
                        f"{strict[0].label}'s disagg KV cache transceiver requires it (drop {strict[0].name} or disagg, "
                        "or pick multiples)"
                    )
        if self.nextn_accepted is not None and not 0 <= self.nextn_accepted <= (self.aic_nextn or 0):
            raise ValueError(
                f"nextn_accepted: {self.nextn_accepted} draft tokens accepted per step needs aic_nextn >= it "
                f"(aic_nextn is {self.aic_nextn}); speculative decoding accepts at most aic_nextn drafts per step"
            )
        if isinstance(self.backend_version, dict):
            stray = [name for name in self.backend_version if name not in self.backend]
            if stray:
                raise ValueError(
                    f"backend_version: {stray[0]} is not among backend ({', '.join(self.backend)}); give versions for those only"
                )
        admission = [name for name in ADMISSION_THRESHOLDS if getattr(self, name) is not None]
        admission += ["no_admission_control"] if self.no_admission_control else []
        if admission and "kv_router" in self.router_mode:
            unset = "false" if admission[0] == "no_admission_control" else "null"
            raise ValueError(
                f"{admission[0]}: Dynamo's Replay cannot model admission control, on or off, so a search that may "
                f"choose kv_router could not score what it deploys; leave it {unset} or set router_mode: [round_robin]"
            )
        if admission:
            log.warning("%s: has no effect under round_robin and is not deployed", ", ".join(admission))
        return self

    def _role_hardware_rules(self) -> None:
        """Per-role systems only where each role is a pool of its own (disagg), and per-system
        budgets only for systems the search uses, within the total."""
        for role in ROLE_HARDWARE:
            if getattr(self, f"{role}_hardware_sku") is not None and self.deployment_mode != ["disagg"]:
                raise ValueError(
                    f"{role}_hardware_sku: per-role hardware needs disagg pools only (deployment_mode: [disagg]); "
                    f"deployment_mode is {', '.join(self.deployment_mode)}, whose agg workers run on hardware_sku"
                )
        if not self.gpu_budget_per_sku:
            return
        used = self.hardware_skus
        for sku in self.gpu_budget_per_sku:
            if sku not in used:
                raise ValueError(f"gpu_budget_per_sku: {sku!r} is not a system this search uses ({', '.join(used)})")
        total = sum(self.gpu_budget_per_sku.values())
        if total > self.gpu_budget:
            shares = " + ".join(str(value) for value in self.gpu_budget_per_sku.values())
            raise ValueError(f"gpu_budget_per_sku: {shares} = {total} GPUs exceed gpu_budget {self.gpu_budget} (the total)")
        scaling = [name for name, _ in self.scaling_policies() if name != "disabled"]
        if scaling:  # Dynamo's Planner takes one GPU budget: it could scale a role past its system's
            raise ValueError(
                f"gpu_budget_per_sku: the Planner scales against the total GPU budget only; planner_scaling_policy "
                f"{', '.join(scaling)} could take a system past its budget (use planner_scaling_policy: [disabled])"
            )

    def system_choices(self, name: str) -> tuple[str, ...]:
        """The systems a hardware field offers (a scalar: one; an unset role: hardware_sku's)."""
        value = getattr(self, name)
        if value is None:
            return self.system_choices("hardware_sku")
        return tuple(value) if isinstance(value, list) else (value,)

    def system_assignments(self) -> list[tuple[str, str | None, str | None]]:
        """Each (hardware_sku, prefill_hardware_sku, decode_hardware_sku) one branch per mode runs on:
        every listed system alone, or with per-role systems every prefill × decode pair."""
        roles = [name for name in (f"{role}_hardware_sku" for role in ROLE_HARDWARE) if getattr(self, name) is not None]
        found: dict[tuple[str, str], tuple[str, str | None, str | None]] = {}
        for sku in self.system_choices("hardware_sku"):
            pairs = itertools.product(*(self.system_choices(name) if name in roles else (sku,) for name in ROLE_HARDWARE_FIELDS))
            for prefill, decode in pairs:
                own = (prefill if ROLE_HARDWARE_FIELDS[0] in roles else None, decode if ROLE_HARDWARE_FIELDS[1] in roles else None)
                found.setdefault((prefill, decode), (sku, *own))
        return list(found.values())

    @property
    def hardware_skus(self) -> tuple[str, ...]:
        """Every system a candidate of this search can run on, each once."""
        if self.deployment_mode != ["disagg"]:
            return self.system_choices("hardware_sku")
        return tuple(dict.fromkeys(role or sku for sku, *roles in self.system_assignments() for role in roles))

    @property
    def offload_enabled(self) -> bool:
        return bool(self.num_g2_blocks)

    def quant_modes(self) -> dict[str, tuple[str, ...]]:
        """The quant choices of each quant field that is set (an unset one follows the checkpoint)."""
        return {name: tuple(getattr(self, name)) for name in QUANT_NAMES if getattr(self, name) is not None}

    def backend_versions(self) -> dict[str, str]:
        """The pinned perf-data version of each backend that has one."""
        if isinstance(self.backend_version, str):
            return {name: self.backend_version for name in self.backend}
        return dict(self.backend_version or {})

    @property
    def effective_min_gpu_budget(self) -> int:
        return self.min_gpu_budget or 1

    def scaling_policies(self) -> list[tuple[str, dict[str, Any]]]:
        return composites.resolve(self.planner_scaling_policy, presets.PLANNER_SCALING_POLICIES)

    def fpm_samplings(self) -> list[tuple[str, dict[str, Any]]]:
        return composites.resolve(self.planner_fpm_sampling, presets.PLANNER_FPM_SAMPLING)

    def load_sensitivities(self) -> list[tuple[str, dict[str, Any]]]:
        return composites.resolve(self.planner_load_sensitivity, presets.PLANNER_LOAD_SENSITIVITY)

    def load_predictors(self) -> list[tuple[str, dict[str, Any]]]:
        return composites.resolve(self.load_predictor_candidates, presets.LOAD_PREDICTORS)


LOAD_FIELDS = ("trace_path", "request_rate", "concurrency", "kv_load_ratio")
TRACE_ONLY = ("arrival_speedup_ratio", "replay_concurrency")
SYNTHETIC_ONLY = ("isl", "osl", "num_request_ratio", "turns_per_session", "inter_turn_delay_ms", "length_spread", "client_start")
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
        return _unique(list(value))
    if not level(value):
        raise ValueError(f"{value!r} must be {CONCURRENCY_RULE}")
    return value


class Workload(_Frozen):
    """The traffic: a trace, or synthetic open loop (rate), closed loop (concurrency) or KV load."""

    trace_path: str | None = None
    trace_format: Literal["mooncake"] = "mooncake"
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
        """Relative paths resolve against the directory the user ran from."""
        if value is None:
            return None
        path = Path(value).expanduser()
        path = path if path.is_absolute() else Path.cwd() / path
        if not path.is_file():
            raise ValueError(f"trace file not found: {value} (looked at {path})")
        check_trace(path)  # TraceError (a ValueError) names the first bad line and its field
        return str(path.resolve())

    @model_validator(mode="after")
    def _one_load(self) -> "Workload":
        loads = [name for name in LOAD_FIELDS if getattr(self, name) is not None]
        if len(loads) != 1:
            got = ", ".join(loads) if loads else "none"
            raise ValueError(f"set exactly one of {', '.join(LOAD_FIELDS)} (got: {got})")
        fields = type(self).model_fields
        explicit = {name for name in self.model_fields_set if getattr(self, name) not in (None, fields[name].default)}
        if self.trace_path is not None:
            stray = sorted(explicit & set(SYNTHETIC_ONLY))
            if stray:
                raise ValueError(f"{stray[0]} is a synthetic-workload field and cannot be used with trace_path")
            return self
        stray = sorted(explicit & set(TRACE_ONLY))
        if stray:
            raise ValueError(f"{stray[0]} applies only to a trace workload (set trace_path)")
        missing = [name for name in ("isl", "osl", "num_request_ratio") if getattr(self, name) is None]
        if missing:
            raise ValueError(f"{missing[0]} is required for a synthetic workload")
        if self.length_spread > 0 and self.turns_per_session > 1:
            raise ValueError("length_spread applies to single-turn traffic; with turns_per_session > 1 leave it 0")
        if self.client_start is not None and (self.request_rate is not None or self.turns_per_session > 1):
            raise ValueError("client_start applies to a single-turn closed loop (concurrency or kv_load_ratio); leave it null here")
        return self

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

    def resolved_request_count(self, concurrency_override: int | None = None) -> int | None:
        """docs/config.md: max(1, round(num_request_ratio × load)), load = concurrency (the
        candidate's own, or the configured one) or request rate; None for a trace (its rows
        are the requests) and for a KV-relative load before a candidate derives it."""
        if self.is_trace_based:
            return None
        load = self.request_rate if self.request_rate is not None else self.effective_in_flight_cap(concurrency_override)
        if load is None:
            return None
        return max(1, round(float(self.num_request_ratio) * load))


SLA_TARGETS = tuple(name for name, goal in GOALS.items() if goal.sla_constrained)
PRICED = tuple(name for name, goal in GOALS.items() if goal.priced)


def _prices(value: Any) -> Any:
    """{system: price per GPU-hour}: each a finite number > 0 (any currency, the same for all)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"must be a mapping {{system: price per GPU-hour}}, got {value!r}")
    for sku, price in value.items():
        number = isinstance(price, (int, float)) and not isinstance(price, bool)
        if not number or not math.isfinite(price) or price <= 0:
            raise ValueError(f"{sku}: {price!r} is not a price; give a finite number > 0 per GPU-hour")
    return {str(sku): float(price) for sku, price in value.items()}


def _needs_sla_text(what: str) -> str:
    return f"{what} needs sla.e2e_ms, or both sla.ttft_ms and sla.itl_ms"


class SLATarget(_Frozen):
    """Per-request bounds in ms; goodput counts only the requests that meet every bound set."""

    ttft_ms: PositiveNumber | None = None
    itl_ms: PositiveNumber | None = None
    e2e_ms: PositiveNumber | None = None

    @property
    def bounds_goodput(self) -> bool:
        return self.e2e_ms is not None or (self.ttft_ms is not None and self.itl_ms is not None)


SlaAggregate = Literal["mean", "median", "p75", "p90", "p95", "p99"]
SLA_METRICS = {"ttft_ms": "ttft_ms", "itl_ms": "itl_ms", "e2e_ms": "e2e_latency_ms"}
"""Each SLA bound and the Replay summary metric it bounds (as `<aggregate>_<metric>`)."""
_ANY_SLA_BOUND = f"an sla with at least one of {', '.join(SLA_METRICS)}"


class OptimizationGoal(_Frozen):
    """What 'best' means. goodput targets carry an SLA; pareto trades two or more objectives;
    min_gpus (and any target with strict_sla) keeps only the candidates that meet the SLA."""

    target: OptimizationTarget = OptimizationTarget.throughput
    sla: SLATarget | None = None
    pareto_objectives: Annotated[list[OptimizationTarget], Field(min_length=2)] | None = None
    sla_aggregate: SlaAggregate = "mean"  # what a replay's latencies are held to the SLA as
    strict_sla: Flag = False  # every target: a candidate whose replay misses the SLA is infeasible
    min_goodput_rps: PositiveNumber | None = None  # min_gpus: SLA-good requests/s the answer must serve
    gpu_hour_price: Annotated[dict[str, Any], BeforeValidator(_prices)] | None = None  # Spica's own: {system: price per GPU-hour}

    @field_validator("pareto_objectives")
    @classmethod
    def _objectives(cls, values: list[OptimizationTarget] | None) -> list[OptimizationTarget] | None:
        if values is None:
            return None
        if OptimizationTarget.pareto in values:
            raise ValueError(f"pareto is not an objective; choose from {', '.join(OBJECTIVES)}")
        constrained = [value for value in values if value not in OBJECTIVES]
        if constrained:
            raise ValueError(f"{constrained[0]} is not a pareto objective (it is defined under the SLA); choose from {', '.join(OBJECTIVES)}")
        return _unique(values)

    @model_validator(mode="after")
    def _rules(self) -> "OptimizationGoal":
        if self.pareto_objectives is not None and not self.is_pareto:
            raise ValueError(f"pareto_objectives is only allowed when target is pareto (target is {self.target})")
        goals = [name.goal for name in self.resolved_pareto_objectives] if self.is_pareto else [self.target.goal]
        for goal in goals:
            what = f"pareto objective {goal.name}" if self.is_pareto else f"target {goal.name}"
            if goal.needs_sla == "goodput" and not (self.sla is not None and self.sla.bounds_goodput):
                raise ValueError(_needs_sla_text(what))
            if goal.needs_sla == "any" and not self.sla_bounds:
                raise ValueError(f"{what} needs {_ANY_SLA_BOUND}")
        if self.strict_sla and not self.sla_bounds:
            raise ValueError(f"strict_sla needs {_ANY_SLA_BOUND}")
        if self.min_goodput_rps is not None and not self.target_constrained:
            raise ValueError(f"min_goodput_rps is only allowed with target {' or '.join(SLA_TARGETS)} (target is {self.target})")
        priced = [goal.name for goal in goals if goal.priced]
        if priced and self.gpu_hour_price is None:
            raise ValueError(f"gpu_hour_price: required by {priced[0]}; give {{system: price per GPU-hour}} for each system searched")
        if self.gpu_hour_price is not None and not priced:
            raise ValueError(f"gpu_hour_price: only the cost goals use it ({', '.join(PRICED)}); the goal here does not (target {self.target})")
        return self

    @property
    def is_pareto(self) -> bool:
        return self.target is OptimizationTarget.pareto

    @property
    def resolved_pareto_objectives(self) -> list[OptimizationTarget]:
        return list(self.pareto_objectives or DEFAULT_PARETO_OBJECTIVES)

    @property
    def objectives(self) -> list[str]:
        """The objective names a candidate is measured by: the target, or the Pareto objectives."""
        return [str(name) for name in self.resolved_pareto_objectives] if self.is_pareto else [str(self.target)]

    @property
    def target_constrained(self) -> bool:
        """Whether the target itself is defined under the SLA (min_gpus)."""
        return not self.is_pareto and self.target.goal.sla_constrained

    @property
    def sla_constrained(self) -> bool:
        """Whether only candidates that meet the SLA count (min_gpus, or strict_sla)."""
        return self.strict_sla or self.target_constrained

    @property
    def sla_bounds(self) -> dict[str, float]:
        """Each SLA bound that is set, keyed by the summary metric it bounds, e.g. mean_ttft_ms."""
        if self.sla is None:
            return {}
        return {f"{self.sla_aggregate}_{metric}": float(getattr(self.sla, field))
                for field, metric in SLA_METRICS.items() if getattr(self.sla, field) is not None}


SWEEP_ALIASES = {"seed": "random_seed", "candidate_timeout_s": "max_eval_seconds"}
"""Spica's earlier names, kept so plans and files written with them still load (with a warning)."""


class SweepConfig(_Frozen):
    """How hard to search: rounds, batch size, parallelism, seed, time cap; Spica's algorithm,
    designer and timing mode beside upstream's fields."""

    max_rounds: PositiveInt = 20
    parallel_evals: PositiveInt = 16
    candidates_per_round: PositiveInt | None = None
    random_seed: Int = 1
    max_eval_seconds: PositiveNumber | None = 600.0
    max_search_seconds: PositiveNumber | None = None  # Spica's own: the search's time budget (spica/search/rounds.py)
    algorithm: Literal[tuple(ALGORITHMS)] = "vizier"  # type: ignore[valid-type]  # spica/study/algorithms.py
    designer: Literal[VIZIER_DESIGNERS] = "fast"  # type: ignore[valid-type]
    timing: Literal["table", "ais"] = "table"

    @model_validator(mode="before")
    @classmethod
    def _earlier_names(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        for old, new in SWEEP_ALIASES.items():
            if old not in data:
                continue
            if new in data:
                raise ValueError(f"{old} is the earlier name of {new}; give only {new}")
            log.warning("sweep.%s is deprecated: call it sweep.%s", old, new)
            data[new] = data.pop(old)
        return data

    @property
    def per_round(self) -> int:
        return self.candidates_per_round or self.parallel_evals

    @property
    def seed(self) -> int:
        """random_seed as the non-negative 32-bit seed the designers and Replay take."""
        return self.random_seed % 2**32


class SmartSearchConfig(_Frozen):
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
        if context is not None and workload.is_synthetic and workload.isl + workload.osl > context:
            raise ValueError(
                f"workload: isl + osl = {workload.isl + workload.osl} tokens does not fit search_space.context_length {context}"
            )
        if context is not None and workload.is_trace_based:  # null: the model's maximum, said at enumeration
            warn_if_longer_than(workload.trace_path, context, "search_space.context_length")
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


class _UniqueKeyLoader(yaml.SafeLoader):
    """Safe YAML that refuses a key given twice in one mapping (last-wins would hide a typo)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                mark = key_node.start_mark
                raise ConfigError([f"{key}: given twice in one mapping (line {mark.line + 1}); keep one"])
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _UniqueKeyLoader.construct_mapping)

MAX_YAML_NODES = 100_000
"""Far more values than a config holds, once aliases are expanded: a 'billion laughs' file,
whose few lines expand to 10^9 values, is refused before anything walks it."""


def load_yaml(path: str | Path) -> Any:
    """Safe-load a YAML file; a missing, unreadable or malformed file is a one-line ConfigError."""
    path = Path(path)
    if not path.is_file():
        what = "a directory" if path.is_dir() else "not a regular file" if path.exists() else "not found"
        raise ConfigError([f"config file {path}: {what}"])
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{path}: not UTF-8 text (byte {exc.start}); save the config as UTF-8"]) from None
    except OSError as exc:
        raise ConfigError([f"{path}: cannot be read: {exc.strerror}"]) from None
    try:
        if "*" in text and _expanded_size(yaml.compose(text, Loader=yaml.SafeLoader)) > MAX_YAML_NODES:
            raise ConfigError([f"{path}: its aliases expand to more than {MAX_YAML_NODES:,} values; a config needs far fewer"])
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ConfigError([f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}"]) from None


def load_config(path: str | Path) -> dict[str, Any]:
    """A config file's top level: a mapping. An empty file, a list or a scalar is refused in one
    line saying what the file holds instead (validating it as a config would only say its type)."""
    data = load_yaml(path)
    if isinstance(data, Mapping):
        return dict(data)
    held = "nothing (it is empty)" if data is None else "a list" if isinstance(data, list) else f"the {type(data).__name__} {data!r}"
    raise ConfigError([f"{path}: holds {held}; a config is a mapping with search_space and workload (goal, sweep optional)"])


def _expanded_size(root: yaml.Node | None) -> int:
    """How many values the document holds with every alias expanded (aliases share nodes)."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        if id(node) not in sizes:
            sizes[id(node)] = 1  # a node that (recursively) holds itself counts once
            if isinstance(node, yaml.MappingNode):
                children = [child for pair in node.value for child in pair]
            elif isinstance(node, yaml.SequenceNode):
                children = node.value
            else:
                children = []
            sizes[id(node)] = min(MAX_YAML_NODES + 1, 1 + sum(size(child) for child in children))
        return sizes[id(node)]

    return size(root) if root is not None else 0
