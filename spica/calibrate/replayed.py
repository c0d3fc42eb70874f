"""A measured configuration replayed by Spica's own evaluation path, as a careful user would pin it.

Each `Measurement` becomes a SmartSearchConfig that pins exactly what was measured — model,
system, backend, the perf-data version nearest the measured engine, mode, shape and worker
counts, the measured quant modes where the perf data holds them (the KV cache's and context
attention's as the row's precision implies), round-robin routing, no Planner, a closed loop at
the measured concurrency with the measured isl/osl — and the one candidate that config allows is
unrolled (`spica.search.unroll`) and scored by `spica.evaluation.evaluate`, exactly as a search
would score it.

The engine settings a silicon row does not record are each engine's own serving defaults
(`engine_defaults`): 8,192 batched tokens (vLLM's V1 server default on these GPUs, TensorRT-LLM's
max_num_tokens; SGLang's chunked prefill size below 160 GiB of GPU memory, 16,384 at or above it,
shared by its attention-DP ranks), 1,024 sequences, 0.9 of GPU memory. A measured point from an AIPerf export
carries the candidate it measured and is replayed with that candidate's own settings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from packaging.version import InvalidVersion, Version

from spica.calibrate.measurements import Measurement
from spica.config import ConfigError, SmartSearchConfig
from spica.core.errors import UserError
from spica.core.quant import QUANT_NAMES
from spica.core.quiet import quieted
from spica.core.unrolled import ROLES
from spica.evaluation.evaluate import Evaluation, evaluate
from spica.search.branches import branches_for
from spica.search.unroll import unroll
from spica.space import capacity
from spica.space.branches import RolePool
from spica.space.shapes import bundled_models, load_model_info

ENGINE_DEFAULTS = {"max_num_batched_tokens": 8192, "max_num_seqs": 1024}
SGLANG_LARGE_GPU_GIB = 160.0
SGLANG_LARGE_GPU_BATCHED_TOKENS = 16384
"""SGLang sizes its chunked prefill by the GPU's memory when none is given: 8,192 tokens below
160 GiB (h100, h200), 16,384 at or above (b200, b300, gb200, gb300); its server_args' memory
tiers. With attention DP it divides that by the DP size: each rank's share (Spica's batched tokens
are a rank's, spica/deploy/engines.py)."""
QUANT_OF_PRECISION = {
    "fp8": {"kvcache_quant_mode": "fp8", "fmha_quant_mode": "fp8"},
    "fp4": {"kvcache_quant_mode": "fp8", "fmha_quant_mode": "fp8"},
    "bf16": {"kvcache_quant_mode": "bfloat16", "fmha_quant_mode": "bfloat16"},
}
"""The KV cache and context attention a silicon row's `precision` implies (the CSV has no column
for either): AI Configurator reads an fp8 or nvfp4 checkpoint as one with an fp8 KV cache and fp8
context attention (its precision profiles, and its reading of a checkpoint's quantization config),
and the measurements agree. On Qwen3-32B / h100_sxm / TensorRT-LLM, rows at 64-128 requests of
2-4k tokens on one or two GPUs measured 1.4-6.4 s TTFT; replayed with a bfloat16 pool (half the
tokens) they queued for 6-26 s, with an fp8 pool 1.4-2.4 s. AIS times an fp8 KV cache on SGLang
only beside fp8 context attention (docs/fidelity.md, "The KV cache behind the pool")."""
REQUESTS_PER_CONCURRENCY = 10
"""Requests replayed per request in flight: enough waves that the start and end of the run
(the ramp a benchmark client's warm-up hides) weigh little in the means."""
MIN_REQUESTS = 200


@dataclass(frozen=True)
class Predicted:
    """What Spica predicts for one measured point (or why it cannot)."""

    measurement: Measurement
    status: str  # feasible | failed | unexpressible
    reason: str | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    tokens_per_s_per_gpu: float | None = None
    tokens_per_s_per_user: float | None = None
    backend_version: str | None = None
    seconds: float = 0.0


def nearest_version(measured: str | None, available: tuple[str, ...]) -> str | None:
    """The perf-data version nearest the measured engine: the newest at or below it, else the
    oldest above it; an unparseable version (nightly builds) takes the newest."""
    if not available:
        return None
    ordered = sorted(available, key=_version_key)
    parsed = _parse(measured)
    if parsed is None:
        return ordered[-1]
    below = [version for version in ordered if (_parse(version) or Version("0")) <= parsed]
    return below[-1] if below else ordered[0]


def _parse(text: str | None) -> Version | None:
    if not text:
        return None
    match = re.match(r"v?(\d+(?:\.\d+)*(?:(?:rc|\.post|\.dev)\d+)*)", text.strip())
    try:
        return Version(match.group(1)) if match else None
    except InvalidVersion:
        return None


def _version_key(text: str) -> Version:
    return _parse(text) or Version("0")


def bundled_name(model: str) -> str:
    """The model as AI Configurator names it: measurements may spell a checkpoint its own way
    (meta-llama/Llama-3.1-70B for AIC's meta-llama/Meta-Llama-3.1-70B)."""
    bundled = bundled_models()
    if bundled is None or model in bundled:
        return model

    def plain(name: str) -> str:
        return re.sub(r"^meta-|-instruct$", "", name.split("/")[-1].lower())

    same_name = [name for name in bundled if plain(name) == plain(model)]
    same_org = [name for name in same_name if name.split("/")[0] == model.split("/")[0]]
    matches = same_org or same_name  # an organisation renamed (zhipuai/GLM-5 is zai-org/GLM-5) when only one matches
    return matches[0] if len(matches) == 1 else model


def measured_config(
    point: Measurement, *, length_spread: float | None = None, client_start: str | None = None,
    unmeasured: Mapping[str, Any] | None = None, implied: Mapping[str, str] | None = None,
) -> SmartSearchConfig:
    """The SmartSearchConfig that pins `point` (UserError with the reason when it cannot).
    `unmeasured` sets search_space fields the point does not record (what it records wins): e.g.
    {"fmha_quant_mode": "bfloat16"} where AIS holds context attention in that mode only, or a disagg
    KV transfer rate (`kv_transfer_bandwidth_gbps` with `kv_bytes_per_token`). `implied`: the quant
    modes its precision implies that AIS can time (`measured_candidate` chooses them), below both."""
    versions = capacity.perf_data_versions(point.system, point.backend)
    version = nearest_version(point.backend_version, versions)
    if version is None:
        raise UserError(f"no_perf_data: AI Configurator and AIS hold no {point.backend} data for {point.system}")
    space: dict[str, Any] = {
        "model_name": bundled_name(point.model),
        "hardware_sku": point.system,
        "backend": [point.backend],
        "backend_version": version,
        "deployment_mode": [point.mode],
        "gpu_budget": point.gpus,
        "parallel_configs": [_pin(point, _is_moe(point.model))],
        "router_mode": ["round_robin"],
        "planner_scaling_policy": ["disabled"],
        "context_length": point.isl + point.osl,
    }
    shapes = {pool.role: pool.shape for pool in point.pools}
    for role in ROLES[point.mode]:
        engine = engine_defaults(point.backend, point.system, shapes[role].attention_dp)
        space[f"{role}_max_num_batched_tokens"] = [engine["max_num_batched_tokens"]]
        space[f"{role}_max_num_seqs"] = [max(engine["max_num_seqs"], point.concurrency if role != "prefill" else 1)]
    supported = capacity.supported_quant_modes(point.system, point.backend, version)
    unmeasured = dict(unmeasured or {})
    defaults = [(name, unmeasured.pop(name)) for name in QUANT_NAMES if name in unmeasured]
    for name, mode in (*(implied or {}).items(), *defaults, *point.quant):  # what the point records comes last, and wins
        if mode in supported.get(name, []):
            space[name] = mode
    space.update({name: value for name, value in unmeasured.items() if name not in space})
    count = max(MIN_REQUESTS, REQUESTS_PER_CONCURRENCY * point.concurrency)
    workload: dict[str, Any] = {"isl": point.isl, "osl": point.osl, "concurrency": point.concurrency,
                                "num_request_ratio": count / point.concurrency}
    if length_spread is not None:
        workload["length_spread"] = length_spread
    if client_start is not None:
        workload["client_start"] = client_start
    data = {"search_space": space, "workload": workload, "goal": {"target": "throughput_per_gpu"}}
    try:
        return SmartSearchConfig.from_mapping(data)
    except ConfigError as exc:
        raise UserError(f"{_category(exc.lines[0])}: {exc.lines[0]}") from None


def engine_defaults(backend: str, system: str, attention_dp: int = 1) -> dict[str, int]:
    """The batching a row's engine ran with when its launch set none (the module docstring)."""
    if backend != "sglang":
        return ENGINE_DEFAULTS
    memory = capacity.gpu_memory_gib(system)
    large = memory is not None and memory >= SGLANG_LARGE_GPU_GIB
    batched = SGLANG_LARGE_GPU_BATCHED_TOKENS if large else ENGINE_DEFAULTS["max_num_batched_tokens"]
    return {**ENGINE_DEFAULTS, "max_num_batched_tokens": batched // max(1, attention_dp)}


def _is_moe(model: str) -> bool:
    try:
        return load_model_info(bundled_name(model)).is_moe
    except UserError:
        return False  # the config built from it names the unknown model


CATEGORIES = (
    ("is not among AI Configurator's", "unknown_model"),
    ("gpus_per_worker", "worker_too_wide"),
    ("beyond_nvlink_domain", "worker_too_wide"),
    ("kv_below_context", "no_kv_room"),
    ("no_kv_room", "no_kv_room"),
)
"""Why a measured configuration cannot be pinned, as a category the benchmark counts."""


def _category(line: str) -> str:
    return next((category for text, category in CATEGORIES if text in line), "unexpressible")


def _pin(point: Measurement, moe: bool) -> dict[str, Any]:
    """The measured shapes as parallel_configs; a dense model's rows may record moe_tp = tp."""

    def shape(pool: RolePool) -> dict[str, int]:
        values = pool.shape.to_dict()
        if not moe:
            values.update(moe_tp=1, moe_ep=1)
        return {**values, "replicas": pool.replicas}

    if point.mode == "agg":
        return shape(point.pools[0])
    return {pool.role: shape(pool) for pool in point.pools}


def measured_candidate(point: Measurement, **options: Any) -> tuple[SmartSearchConfig, dict[str, Any]]:
    """(the pinning config, its one unrolled candidate); UserError / LookupError with the reason.
    Of the quant modes the point's precision implies, as many as AIS can time its shape with: both,
    else the KV cache's alone, else neither (AIS holds no fp8 context MLA for DeepSeek on h200_sxm
    SGLang, and an fp8 KV cache on SGLang only beside fp8 context attention)."""
    implied = QUANT_OF_PRECISION.get(point.precision or "", {})
    kv_cache_only = {name: mode for name, mode in implied.items() if name == "kvcache_quant_mode"}
    for modes in (implied, kv_cache_only):
        if modes:
            try:
                return _measured_candidate(point, implied=modes, **options)
            except UserError as exc:
                if not str(exc).startswith("no_perf_data: "):
                    raise
    return _measured_candidate(point, implied={}, **options)


def _measured_candidate(point: Measurement, **options: Any) -> tuple[SmartSearchConfig, dict[str, Any]]:
    config = measured_config(point, **options)
    if point.candidate is not None:  # measured by a benchmark client: the deployment Spica wrote, as it was
        return config, dict(point.candidate)
    try:
        with quieted(["spica.space"]):  # a backend dropped for the shape: the prediction's reason says it
            branches = branches_for(config)
    except ConfigError as exc:
        line = exc.lines[0]
        found = re.search(r"no_perf_data: (.*?)\)*$", line)  # AIS has no data for the measured shape
        raise UserError(f"no_perf_data: {found.group(1)}" if found else f"{_category(line)}: {line}") from None
    if not branches or not branches[0].configs:
        raise UserError("unexpressible: the measured shape does not fit (weights or context) in Spica's memory model")
    branch = branches[0]
    parallel = branch.configs[0]
    if not parallel.supports(point.backend):
        raise UserError(f"unexpressible: {point.backend} cannot run the measured shape")
    space = config.search_space
    knobs: dict[str, Any] = {"router_mode": "round_robin", "planner_scaling_policy": "disabled"}
    for role in ROLES[point.mode]:
        knobs[f"{role}_max_num_batched_tokens"] = getattr(space, f"{role}_max_num_batched_tokens")[0]
        knobs[f"{role}_max_num_seqs"] = getattr(space, f"{role}_max_num_seqs")[0]
    knobs.update({name: modes[0] for name, modes in branch.quant_knobs().items()})
    return config, unroll(config, branch, parallel, point.backend, knobs, {})


def predict(point: Measurement, calibration: Mapping[str, Any] | None = None, **options: Any) -> Predicted:
    """Spica's prediction for `point`, optionally with a timing calibration's factors applied."""
    try:
        config, candidate = measured_candidate(point, **options)
    except (UserError, LookupError) as exc:
        reason = str(exc).split("\n")[0]
        return Predicted(point, "unexpressible", reason if ":" in reason else f"unexpressible: {reason}")
    if calibration is not None:
        candidate = {**candidate, "timing_calibration": dict(calibration)}
    evaluation = evaluate(config, candidate)
    return _predicted(point, candidate, evaluation)


def _predicted(point: Measurement, candidate: Mapping[str, Any], evaluation: Evaluation) -> Predicted:
    metrics = evaluation.metrics
    if evaluation.status == "failed" or "mean_ttft_ms" not in metrics:
        return Predicted(point, "failed", evaluation.reason, seconds=evaluation.seconds)
    gpus = candidate["used_gpus"]
    return Predicted(
        point, "feasible", None,
        ttft_ms=metrics["mean_ttft_ms"],
        tpot_ms=metrics.get("mean_tpot_ms"),
        tokens_per_s_per_gpu=metrics.get("output_throughput_tok_s", 0.0) / gpus,
        tokens_per_s_per_user=metrics.get("mean_output_token_throughput_per_user"),
        backend_version=candidate.get("backend_version"),
        seconds=evaluation.seconds,
    )
