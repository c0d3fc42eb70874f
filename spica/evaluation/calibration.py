"""A timing calibration: the data file `spica calibrate` writes and a search scores with.

The file (YAML, never code) holds, per (model, system, backend), a factor on every prefill
pass's time (prefill·(n/1024)^prefill_exponent for a pass of n new tokens) and one on every
decode step's time (decode·(b/64)^decode_exponent for b requests), and a request overhead: time a
request spends outside the engine before its first token (HTTP, tokenizer, frontend),
ttft_overhead_ms plus ttft_overhead_ms_per_1k_tokens per thousand prompt tokens; with what they
were fitted on and their held-out error before and after. A search given one
(`evaluation.calibration=FILE`) still replays every candidate; only the timing table Replay runs
on is scaled (`spica.evaluation.timing.scaled`), so queueing, batching and routing stay Replay's,
and the overhead is added to every TTFT and end-to-end latency Replay reports (the SLA bounds
Replay counts goodput against are lowered by it: `shifted_sla`, `shifted_summary`).

A calibration is refused (one line) when it was fitted for another model, or lacks a
correction for a (system, backend) the search may choose; it is used with a warning when the
model differs only by its checkpoint's quantization suffix, or its perf-data version differs
from the one the search scores at.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from spica.core.errors import UserError
from spica.core.sla import SlaBounds, SlaLike

FORMAT = 1
PHASES = ("prefill", "decode")
MAX_EXPONENT = 0.5
"""A prefill pass of n tokens is scaled by prefill·(n/1024)^e, a decode step of b requests by
decode·(b/64)^e: small, bounded exponents (the table is also kept non-decreasing in work)."""
OVERHEADS = ("ttft_overhead_ms", "ttft_overhead_ms_per_1k_tokens")
MAX_OVERHEAD_MS = 10_000.0
"""An overhead of seconds per request is not a frontend but a different deployment."""
FIELD = "timing_calibration"
"""The unrolled candidate's key holding the calibration that scored it (absent: uncalibrated)."""
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Correction:
    """Factors for one (model, system, backend), and where they come from."""

    model: str
    system: str
    backend: str
    backend_version: str
    prefill: float
    decode: float
    prefill_exponent: float = 0.0
    decode_exponent: float = 0.0
    ttft_overhead_ms: float = 0.0
    ttft_overhead_ms_per_1k_tokens: float = 0.0
    fitted_on: Mapping[str, Any] = field(default_factory=dict)
    held_out: Mapping[str, Any] = field(default_factory=dict)

    @property
    def pair(self) -> str:
        return f"{self.system}/{self.backend}"

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "system": self.system, "backend": self.backend, "backend_version": self.backend_version,
                "prefill": self.prefill, "prefill_exponent": self.prefill_exponent, "decode": self.decode,
                "decode_exponent": self.decode_exponent, **{name: getattr(self, name) for name in OVERHEADS},
                "fitted_on": dict(self.fitted_on), "held_out": dict(self.held_out)}

    @property
    def factors(self) -> dict[str, float]:
        """What the timing table is scaled by (spica.evaluation.timing.scaled), and the request
        overhead when there is one (a file without one plans exactly as before it existed)."""
        overheads = {name: getattr(self, name) for name in OVERHEADS if getattr(self, name)}
        return {"prefill": self.prefill, "prefill_exponent": self.prefill_exponent, "decode": self.decode,
                "decode_exponent": self.decode_exponent, **overheads}


@dataclass(frozen=True)
class Calibration:
    corrections: tuple[Correction, ...]
    versions: Mapping[str, str] = field(default_factory=dict)
    source: str = ""  # the file's name, for messages and provenance
    sha256: str = ""

    def to_yaml(self) -> str:
        header = (
            "# Spica timing calibration, written by `spica calibrate`: data, not code.\n"
            "# Each correction multiplies AIS's prefill pass and decode step times for one (model, system, backend);\n"
            "# held_out gives the error on measured points the factors were not fitted on (k-fold), before and after.\n"
            "# Use it with `spica evaluation.calibration=<this file>` (or `evaluation: {calibration: ...}` in a config file).\n"
        )
        body = {"spica_calibration": FORMAT, "versions": dict(self.versions),
                "corrections": [correction.as_dict() for correction in self.corrections]}
        return header + yaml.safe_dump(body, sort_keys=False, width=110)

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_yaml())
        return path


def load_calibration(path: str | Path, where: str = "evaluation.calibration") -> Calibration:
    """Read and check a calibration file; UserError (one line naming `where` and the file) when it is not one."""
    path = Path(path).expanduser()
    try:
        text = path.read_text()
    except OSError as exc:
        raise UserError(f"{where}: {path}: cannot be read ({exc.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UserError(f"{where}: {path}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or data.get("spica_calibration") != FORMAT:
        raise UserError(f"{where}: {path}: not a Spica calibration (write one with `spica calibrate`)")
    entries = data.get("corrections")
    if not isinstance(entries, list) or not entries:
        raise UserError(f"{where}: {path}: 'corrections' must be a non-empty list")
    corrections = tuple(_correction(entry, f"{where}: {path}: corrections[{index}]") for index, entry in enumerate(entries))
    return Calibration(corrections, dict(data.get("versions") or {}), path.name, hashlib.sha256(text.encode()).hexdigest())


def _correction(entry: Any, where: str) -> Correction:
    if not isinstance(entry, dict):
        raise UserError(f"{where}: must be a mapping")
    for name in ("model", "system", "backend", "backend_version"):
        if not isinstance(entry.get(name), str) or not entry[name]:
            raise UserError(f"{where}.{name}: required (a name)")
    for phase in PHASES:
        value = entry.get(phase)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise UserError(f"{where}.{phase}: {value!r} must be a positive number (a factor on AIS's {phase} time)")
    shape: dict[str, float] = {}  # the exponents and overheads, each optional
    for name in ("prefill_exponent", "decode_exponent"):
        exponent = entry.get(name, 0.0)
        if isinstance(exponent, bool) or not isinstance(exponent, (int, float)) or not abs(exponent) <= MAX_EXPONENT:
            raise UserError(f"{where}.{name}: {exponent!r} must be a number between -{MAX_EXPONENT} and {MAX_EXPONENT}")
        shape[name] = float(exponent)
    for name in OVERHEADS:
        value = entry.get(name, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_OVERHEAD_MS:
            raise UserError(f"{where}.{name}: {value!r} must be a number of milliseconds from 0 to {MAX_OVERHEAD_MS:,.0f}")
        shape[name] = float(value)
    return Correction(entry["model"], entry["system"], entry["backend"], entry["backend_version"], float(entry["prefill"]),
                      float(entry["decode"]), **shape, fitted_on=dict(entry.get("fitted_on") or {}),
                      held_out=dict(entry.get("held_out") or {}))


def base_model(name: str) -> str:
    """A checkpoint's name without its quantization suffix (Qwen/Qwen3-32B-FP8 -> qwen/qwen3-32b)."""
    return re.sub(r"[-_](fp8|fp4|nvfp4|mxfp4|int4|int8|awq|gptq|w4a16|w8a8)([-_].*)?$", "", name.lower())


def for_search(
    calibration: Calibration, model: str, pairs: Sequence[tuple[str, str]], versions: Mapping[tuple[str, str], str | None],
    where: str = "evaluation.calibration",
) -> dict[str, Any]:
    """The plan's calibration for a search of `model` over `pairs` (system, backend): the factors of
    each pair, with the file's name and digest. Refused (UserError) or warned as the module says."""
    exact = [c for c in calibration.corrections if c.model == model]
    close = [c for c in calibration.corrections if base_model(c.model) == base_model(model)]
    fitted = sorted({c.model for c in calibration.corrections})
    if not close:
        raise UserError(f"{where}: {calibration.source} was fitted for {', '.join(fitted)}, not {model}; "
                        f"calibrate on measurements of {model}")
    chosen = exact or close
    warnings = [] if exact else [
        f"{calibration.source} was fitted for {chosen[0].model}; using it for {model} (a different checkpoint of the "
        "same model: its quantization may time differently)"
    ]
    by_pair = {c.pair: c for c in chosen}
    out: dict[str, dict[str, float]] = {}
    for system, backend in pairs:
        correction = by_pair.get(f"{system}/{backend}")
        if correction is None:
            raise UserError(f"{where}: {calibration.source} has no correction for {backend} on {system} (it covers "
                            f"{', '.join(sorted(by_pair))}); narrow the search to those or calibrate {backend} on {system} too")
        scored_at = versions.get((system, backend))
        if scored_at and scored_at != correction.backend_version:
            warnings.append(f"{calibration.source} was fitted at {backend} perf data {correction.backend_version}; "
                            f"this search scores {backend} on {system} at {scored_at}")
        out[correction.pair] = correction.factors
    for line in warnings:  # once the calibration is known to be usable
        logger.warning("%s: %s", where, line)
    return {"source": calibration.source, "sha256": calibration.sha256, "model": chosen[0].model, "factors": out}


def candidate_fields(plan_calibration: Mapping[str, Any] | None, unrolled: Mapping[str, Any]) -> dict[str, Any]:
    """The candidate's `timing_calibration`: each role's factors, from its own system and backend."""
    if not plan_calibration:
        return {}
    backend = unrolled["backend"]
    roles = ("agg",) if unrolled["deployment_mode"] == "agg" else ("prefill", "decode")
    factors = plan_calibration["factors"]
    return {FIELD: {
        "id": calibration_id(plan_calibration),
        "roles": {role: dict(factors[f"{unrolled.get(f'{role}_hardware_sku') or unrolled['hardware_sku']}/{backend}"]) for role in roles},
    }}


def calibration_id(plan_calibration: Mapping[str, Any]) -> str:
    """How results name a calibration: its file and the start of its digest."""
    return f"{plan_calibration['source']} (sha256 {plan_calibration['sha256'][:12]})"


def describe(plan_calibration: Mapping[str, Any] | None) -> str | None:
    """One line for the table's footer: which calibration scored every candidate, and its factors."""
    if not plan_calibration:
        return None
    factors = "; ".join(f"{pair} prefill ×{f['prefill']:.3g}·(tokens/1024)^{f.get('prefill_exponent', 0.0):.2g}, "
                        f"decode ×{f['decode']:.3g}·(batch/64)^{f.get('decode_exponent', 0.0):.2g}"
                        + _overhead_text(f) for pair, f in sorted(plan_calibration["factors"].items()))
    return f"timing calibrated with {calibration_id(plan_calibration)}: {factors}"


def _overhead_text(factors: Mapping[str, float]) -> str:
    fixed, per_1k = (factors.get(name, 0.0) for name in OVERHEADS)
    if not fixed and not per_1k:
        return ""
    return f", request overhead {fixed:.3g} ms + {per_1k:.3g} ms per 1k prompt tokens"


def request_overhead_ms(unrolled: Mapping[str, Any], mean_prompt_tokens: float | None) -> float:
    """The calibrated time a request spends outside the engine before its first token: the
    overhead of the role that answers first (agg, or disagg's prefill), at the workload's mean
    prompt length (0 when the candidate is uncalibrated or its calibration has no overhead)."""
    calibration = unrolled.get(FIELD)
    if not calibration:
        return 0.0
    roles = calibration["roles"]
    factors = roles.get("agg") or roles["prefill"]
    per_1k = factors.get("ttft_overhead_ms_per_1k_tokens", 0.0) * (mean_prompt_tokens or 0.0) / 1000.0
    return float(factors.get("ttft_overhead_ms", 0.0)) + per_1k


SHIFTED = ("ttft_ms", "e2e_latency_ms")
"""Replay's statistics that a constant wait before the first token moves by exactly that wait
(min, max, mean, median and every percentile; not the spread, not the token-to-token ones)."""


def shifted_summary(summary: Mapping[str, Any], overhead_ms: float) -> dict[str, Any]:
    """Replay's summary as the client sees it: every TTFT and end-to-end statistic `overhead_ms` later."""
    def moves(key: str) -> bool:
        return key.endswith(SHIFTED) and not key.startswith(("std_", "num_"))

    return {key: value + overhead_ms if moves(key) and isinstance(value, (int, float)) else value
            for key, value in summary.items()}


def shifted_sla(sla: SlaLike | None, overhead_ms: float) -> SlaLike | None:
    """The bounds Replay counts goodput against: a request meets the TTFT and end-to-end bounds
    only if it does so with the overhead added (a bound the overhead alone exceeds: none can)."""
    if sla is None or not overhead_ms:
        return sla

    def lowered(bound: float | None) -> float | None:
        return None if bound is None else max(MIN_BOUND_MS, bound - overhead_ms)

    return SlaBounds(ttft_ms=lowered(sla.ttft_ms), itl_ms=sla.itl_ms, e2e_ms=lowered(sla.e2e_ms))


MIN_BOUND_MS = 1e-3
