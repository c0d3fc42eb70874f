"""SearchSpace: which deployments may be built (upstream's names and defaults, docs/config.md)."""

from __future__ import annotations

import itertools
import logging
from typing import Annotated, Any, Literal, Mapping

from pydantic import BeforeValidator, Field, Strict, field_validator, model_validator

from spica import backends
from spica.config import composites, presets
from spica.config.fields import Flag, Fraction, Frozen, NonNegative, NonNegativeInt, PositiveInt, PositiveNumber, unique
from spica.config.parallel import parallel_config_entry, parallel_config_mode
from spica.core.quant import QUANT_NAMES, known_modes
from spica.core.unrolled import Mode

log = logging.getLogger("spica.config")

Backend = Literal[backends.NAMES]  # type: ignore[valid-type]  # the registry's names, in its order
RouterMode = Literal["kv_router", "round_robin"]


def _as_list(value: Any) -> Any:
    """A single value for a list knob pins it: `backend: vllm` means `[vllm]`."""
    return value if isinstance(value, (list, tuple)) else [value]



def _knob(item: Any) -> Any:
    """A list knob: one value or a non-empty list of distinct values."""
    return Annotated[list[item], BeforeValidator(_as_list), Field(min_length=1)]


def _composite(validator: composites.Validator) -> Any:
    return Annotated[list[Annotated[Any, BeforeValidator(validator)]], BeforeValidator(_as_list), Field(min_length=1)]


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


class SearchSpace(Frozen):
    """Which deployments may be built: deployment shape, engine, KV manager, router, planner."""

    # Deployment
    deployment_mode: _knob(Mode) = ["disagg", "agg"]
    backend: _knob(Backend) = ["vllm"]
    parallel_configs: list[Annotated[dict[str, Any], BeforeValidator(parallel_config_entry)]] = []
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
    # Quantization (`aisimulate recommend` pins each to one value; a list is searched; null = what the checkpoint uses)
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
        return unique(values)

    @field_validator("hardware_sku", *(f"{role}_hardware_sku" for role in ROLE_HARDWARE))
    @classmethod
    def _system_choices(cls, value: str | list[str] | None) -> str | list[str] | None:
        """A list of systems is searched; one system, listed or not, is the pinned scalar it always was."""
        if not isinstance(value, list):
            return value
        if not value:
            raise ValueError("needs at least one system")
        return value[0] if len(unique(value)) == 1 else value

    @field_validator(*QUANT_NAMES)
    @classmethod
    def _known_quant_modes(cls, values: list[str] | None, info: Any) -> list[str] | None:
        if values is None:
            return None
        known = known_modes(info.field_name)
        for value in values:
            if value not in known:
                raise ValueError(f"{value!r} is not a mode AI Configurator knows; one of {', '.join(known)}")
        return unique(values)

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
        if self.kv_transfer_bandwidth_gbps is not None and self.kv_bytes_per_token is None:
            raise ValueError("kv_bytes_per_token is required when kv_transfer_bandwidth_gbps is set (a disagg KV transfer is timed by its bytes)")
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
