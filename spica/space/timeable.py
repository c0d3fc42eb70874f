"""Which worker shapes AIS can time, asked before any replay so that enumeration offers only those.

AIS's readiness says "ready" for shapes whose perf data is missing (gpt-oss-120b on h200_sxm
with TensorRT-LLM 1.3.0rc20 has w4a16_mxfp4 MoE data for moe_tp 1 only; DeepSeek-R1 on gb200
has context-MLA data for fmha bfloat16 only): the gap shows only when a pass is estimated, as
``PerfDataNotAvailableError``. So a shape is probed with one small prefill pass and one small
decode step (shapes that passed these also passed the extremes of the timing table). With one
AIS model per (system, backend, version) kept alive in the process, a probe costs ~12 ms; the
first per data set ~1 s. Verdicts are cached on disk with the AIS version in the key.
`ais_perf_config` is a candidate role's AIS identity, the one Replay times it with and the
Planner's performance model starts from.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from spica.backends import backend as backend_record
from spica.core.unrolled import WORKER_TYPES, Unrolled
from spica.space import cache
from spica.space.capacity import ais_version
from spica.space.shapes import WorkerShape

PROBE_PASSES = (
    {"num_prefill_requests": 1, "sum_prefill_tokens": 128, "sum_prefill_kv_tokens": 0},
    {"num_decode_requests": 1, "sum_decode_kv_tokens": 128},
)
_anchors: dict[tuple[str, str, str], Any] = {}
"""One live AIS model per data set: later models on the same data build in ~10 ms, not ~1 s."""


def ais_identity(
    model: str, system: str, backend: str, version: str, role: str, shape: WorkerShape, block_size: int,
    moe: bool, quant: Mapping[str, str] = (), nextn: int = 0,
) -> dict[str, Any]:
    """AIS's perf config of one worker: model, its GPU, backend (+version), shape, worker type, quant modes."""
    config: dict[str, Any] = {
        "model": model,
        "system": system,
        "backend": backend_record(backend).ais_name,
        "backend_version": version,
        "worker_type": WORKER_TYPES[role],
        "tp": shape.tp,
        "pp": shape.pp,
        "attention_dp": shape.attention_dp,
        "kv_block_size": block_size,
    }
    if moe:  # AIS rejects MoE controls on dense models; 1×1 is its default anyway
        config["moe_tp_size"], config["moe_ep_size"] = shape.moe_tp, shape.moe_ep
    if nextn > 0:
        config["nextn"] = nextn
    config.update(dict(quant))
    return config


def untimeable(
    model: str, system: str, backend: str, version: str, role: str, shapes: Iterable[WorkerShape], block_size: int,
    moe: bool, quant: Mapping[str, str] = (),
) -> dict[WorkerShape, str]:
    """The shapes AIS cannot time, each with AIS's reason in one line; absent AIS, none."""
    ais = ais_version()
    if ais is None:
        return {}
    key = {"kind": "timeable", "ais": ais, "model": model, "system": system, "backend": backend, "backend_version": version,
           "role": role, "block_size": block_size, "quant": dict(sorted(dict(quant).items()))}
    stored = cache.load(key)
    shapes = list(shapes)
    missing = [shape for shape in shapes if shape.label not in stored]
    if missing:
        for shape in missing:
            stored[shape.label] = _probe(ais_identity(model, system, backend, version, role, shape, block_size, moe, quant))
        cache.store(key, stored)
    return {shape: stored[shape.label] for shape in shapes if stored[shape.label]}


def perf_model(config: Mapping[str, Any]) -> Any:
    """AIS's perf model for one worker identity (`ais_identity`), its data set's first model kept alive."""
    from aisimulate_core.sdk import RustForwardPassPerfModel

    model = RustForwardPassPerfModel.best_available(dict(config))
    _anchors.setdefault((config["system"], config["backend"], config["backend_version"]), model)
    return model


def _probe(config: Mapping[str, Any]) -> str:
    """'' when AIS times both probe passes, else why not (one line)."""
    try:
        model = perf_model(config)
        readiness = model.diagnostics().get("readiness")
        if readiness != "ready":
            return f"AIS readiness {readiness}"
        for scheduled in PROBE_PASSES:
            value = model.estimate_forward_pass_time_ms([{"scheduled_requests": scheduled}] * int(config["attention_dp"]))
            if value is None or not math.isfinite(value) or value < 0:
                return "AIS returns no time for this shape"
    except Exception as exc:  # PerfDataNotAvailableError (a RuntimeError), ValueError for a config AIS cannot build
        return _reason(exc)
    return ""


def _reason(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text.split(" at /")[0][:200]


def ais_perf_config(unrolled: Unrolled | Mapping[str, Any], role: str) -> dict[str, Any]:
    """AIS identity of one role's engine: model, the role's GPU, backend (+version), shape, worker type, quant modes."""
    view = Unrolled.of(unrolled)
    pool = view.pool(role)
    shape = WorkerShape(pool.tp, pool.pp, pool.attention_dp, pool.moe_tp, pool.moe_ep)
    return ais_identity(
        view.flat["model_name"], pool.hardware_sku, view.backend, view.flat["backend_version"], role, shape,
        pool.block_size, pool.moe, view.quant, view.nextn,
    )
