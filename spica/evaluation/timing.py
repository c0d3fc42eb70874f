"""TP-aware timing for Replay: AIS directly, or AIS tabulated once into Dynamo's NPZ profile.

Replay's default polynomial timing ignores the parallel shape, so every candidate is timed by
AIS (AISimulate's op-level perf model, which knows model, GPU, backend and TP/DP/MoE shape).
Building the AIS estimator costs ~0.75 s per replay call; a search replays the same shape many
times with different engine/router knobs, so mode "table" evaluates AIS once per shape on a grid
and hands Replay the result as a ``dynamo_profile`` lookup table (Dynamo's mocker NPZ format).

How the mocker reads that table (probed with synthetic tables on ai-dynamo 1.6.1):
- a pass's prefill time is ``prefill_ttft_ms`` at the pass's *new* prefill tokens (summed over
  the requests in the pass; cached prefix tokens excluded); linear extrapolation past the grid;
- a pass's decode time is ``decode_itl`` at (sum of the decode requests' KV tokens,
  that sum / decode batch size);
- a mixed pass costs prefill + decode.
So each decode entry is AIS for a batch of round(kv / ctx) requests holding kv tokens. A prefill
entry has only N, not the context those tokens attend to, yet attention cost grows with it: a
chunk deep inside a 50k-token prompt costs far more than a fresh 8k prompt. So prefill entries
are priced at the workload's mean token position P (`mean_token_position`: token-weighted over
its prompts): N ≤ 2P new tokens are one request's tokens behind P − N/2 cached ones; more are
packed into fresh requests of ~2P tokens (a trace's P is read by its format's reader, spica/workloads/).
Pricing every pass as one fresh request instead made mean TTFT 57-68 % optimistic on Mooncake and
~20 % pessimistic for 3k-token disagg prefill; with P, benchmarks/bench_timing_fidelity.py finds
≤ 2.2 % error on synthetic loads and ≤ 11 % (TPOT) on Mooncake. The rest comes from AIS pricing
a mixed pass as one forward pass where the table adds prefill + decode, and from prefix caching.

Tables are content-addressed (see `table_key`) under ``${SPICA_CACHE_DIR:-~/.cache/spica}/timing``
and written atomically (temp file, then rename), so parallel workers and later runs share them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import tempfile
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

import numpy as np

from spica.core.paths import cache_root

TimingMode = Literal["table", "ais"]
TIMING_MODES: tuple[TimingMode, ...] = ("table", "ais")

TABLE_FORMAT = 1
"""Bump when the grid or the tabulation changes: it is part of every cache key."""
PREFILL_MAX_TOKENS = 1 << 17
PREFILL_POINTS_PER_OCTAVE = 4
DECODE_POINTS_PER_OCTAVE = 3
MIN_KV_BOUND = 1 << 12
MAX_DECODE_BATCH = 4096
"""Cells needing more concurrent requests than any engine runs are unreachable; capping keeps
AIS inside its data while still giving interpolation a sane neighbour."""


def ais_timing_model(perf_config: Mapping[str, Any], scale: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Replay's engine ``timing_model`` entry that calls AIS directly; a calibration's `scale`
    ({"prefill": f, "decode": f}) is a stand-in that only the cached table honours."""
    model: dict[str, Any] = {"type": "external", "provider": "ais", "config": dict(perf_config)}
    if scale:
        model["scale"] = dict(scale)
    return model


def timing_cache_dir() -> Path:
    return cache_root() / "timing"


def materialize_engine_args(
    engine_args: Mapping[str, Any], mode: TimingMode, token_position: int | None = None
) -> dict[str, Any]:
    """Engine args ready for Replay: in "table" mode the AIS timing becomes a cached table whose
    prefill entries are priced at the workload's mean `token_position` (see module docstring).

    Speculative decoding (AIS ``nextn`` > 0) has no axis in the NPZ format, so such roles keep
    direct AIS timing whatever the mode.
    """
    if mode not in TIMING_MODES:
        raise ValueError(f"timing: {mode!r} is not one of {', '.join(TIMING_MODES)}")
    resolved = copy.deepcopy(dict(engine_args))
    engine = resolved["engine"]
    timing = engine.get("timing_model") or {}
    is_ais = timing.get("type") == "external" and timing.get("provider") == "ais"
    scale = timing.get("scale")
    if mode == "ais" or not is_ais or timing["config"].get("nextn", 0) > 0:
        if scale:
            raise ValueError("a timing calibration scales the cached table: it needs sweep.timing 'table' and no aic_nextn")
        return resolved
    kv_tokens_per_rank = int(engine["num_gpu_blocks"]) * int(engine["block_size"])
    path = ensure_table(timing["config"], kv_tokens_per_rank, token_position, scale)
    engine["timing_model"] = {"type": "external", "provider": "dynamo_profile", "config": {"path": str(path)}}
    return resolved


def kv_bound(kv_tokens_per_rank: int) -> int:
    """The decode grid's KV extent: the rank's capacity rounded up to a power of two, so that
    candidates whose capacity differs only slightly (memory fraction, block size) share a table."""
    return max(MIN_KV_BOUND, 1 << max(0, math.ceil(math.log2(max(1, kv_tokens_per_rank)))))


def mean_token_position(prompt_lengths: Iterable[int]) -> int | None:
    """Mean context position of a prompt token, weighting prompts by their tokens: ΣL²/2 / ΣL."""
    tokens = squares = 0
    for length in prompt_lengths:
        tokens += length
        squares += length * length
    return max(1, round(squares / 2 / tokens)) if tokens else None


def table_key(
    perf_config: Mapping[str, Any], kv_tokens_per_rank: int, token_position: int | None = None,
    scale: Mapping[str, float] | None = None,
) -> str:
    """Hash of everything a table's numbers depend on: the AIS identity (model, system, backend,
    backend version, shape, worker type, block size, nextn, quant modes), the KV extent of the grid, the
    prefill token position, a calibration's factors, the AIS package version and the table format."""
    material = {
        "format": TABLE_FORMAT,
        "aisimulate": _aisimulate_version(),
        "ais_config": dict(sorted(perf_config.items())),
        "kv_bound": kv_bound(kv_tokens_per_rank),
        "token_position": token_position,
    }
    if scale:
        material["scale"] = dict(sorted(scale.items()))
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:32]


SCALE_REFERENCE_TOKENS = 1024
SCALE_REFERENCE_BATCH = 64
"""Where a calibration's factors are `prefill` and `decode` exactly; elsewhere they follow their exponents."""


def scaled(tables: Mapping[str, np.ndarray], scale: Mapping[str, float]) -> dict[str, np.ndarray]:
    """A calibration applied to a table: a prefill pass of n new tokens × prefill·(n / 1024)^prefill_exponent,
    a decode step of b requests × decode·(b / 64)^decode_exponent. Times are then made non-decreasing
    in tokens (prefill) and in KV tokens at a given context (decode), so more work never costs less."""
    out = dict(tables)
    tokens = np.asarray(tables["prefill_isl"], dtype=float)
    prefill = float(scale.get("prefill", 1.0)) * (tokens / SCALE_REFERENCE_TOKENS) ** float(scale.get("prefill_exponent", 0.0))
    out["prefill_ttft_ms"] = np.maximum.accumulate(np.asarray(tables["prefill_ttft_ms"]) * prefill)
    kv = np.asarray(tables["decode_active_kv_tokens"], dtype=float)[:, None]
    context = np.asarray(tables["decode_context_length"], dtype=float)[None, :]
    batch = np.clip(np.round(kv / context), 1, MAX_DECODE_BATCH)  # the requests each cell was tabulated at
    decode = float(scale.get("decode", 1.0)) * (batch / SCALE_REFERENCE_BATCH) ** float(scale.get("decode_exponent", 0.0))
    out["decode_itl"] = np.maximum.accumulate(np.asarray(tables["decode_itl"]) * decode, axis=0)
    return out


def ensure_table(
    perf_config: Mapping[str, Any], kv_tokens_per_rank: int, token_position: int | None = None,
    scale: Mapping[str, float] | None = None,
) -> Path:
    """Path of the cached table for this identity, tabulating AIS on a miss; a calibration's
    `scale` is applied to the uncalibrated table (itself cached)."""
    directory = timing_cache_dir()
    path = directory / f"{table_key(perf_config, kv_tokens_per_rank, token_position, scale)}.npz"
    if path.is_file():
        return path
    if scale:
        with np.load(ensure_table(perf_config, kv_tokens_per_rank, token_position)) as base:
            tables = scaled({name: base[name] for name in base.files}, scale)
    else:
        tables = tabulate_ais(perf_config, kv_bound(kv_tokens_per_rank), token_position)
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=directory, suffix=".npz.tmp", delete=False) as handle:
        temporary = Path(handle.name)
        try:
            np.savez(handle, **tables)
        except BaseException:
            temporary.unlink()
            raise
    os.replace(temporary, path)  # atomic: readers see no table or a complete one
    return path


def tabulate_ais(perf_config: Mapping[str, Any], kv_extent: int, token_position: int | None = None) -> dict[str, np.ndarray]:
    """Evaluate AIS on the prefill and decode grids (arrays in the mocker's NPZ layout)."""
    from aisimulate_core.sdk import RustForwardPassPerfModel

    model = RustForwardPassPerfModel.best_available(dict(perf_config))
    readiness = model.diagnostics().get("readiness")
    if readiness != "ready":
        raise ValueError(
            f"AIS has no ready perf model for {perf_config.get('model')} on {perf_config.get('system')} "
            f"({perf_config.get('backend')} {perf_config.get('backend_version')}): readiness {readiness}"
        )
    ranks = int(perf_config.get("attention_dp", 1))

    def pass_ms(scheduled: dict[str, int]) -> float:
        # Attention-DP ranks are assumed evenly loaded: every rank runs the same work.
        value = model.estimate_forward_pass_time_ms([{"scheduled_requests": scheduled}] * ranks)
        if value is None or not math.isfinite(value) or value < 0:
            raise ValueError(f"AIS returned no finite time for {scheduled} with {dict(perf_config)}")
        return float(value)

    prefill_tokens = _geometric_grid(PREFILL_MAX_TOKENS, PREFILL_POINTS_PER_OCTAVE)
    prefill_ms = [pass_ms(_prefill_pass(int(n), token_position)) for n in prefill_tokens]
    kv_tokens = _geometric_grid(kv_extent, DECODE_POINTS_PER_OCTAVE)
    context = kv_tokens
    decode_ms = [
        [
            pass_ms(
                {
                    "num_decode_requests": min(MAX_DECODE_BATCH, max(1, round(kv / ctx))),
                    "sum_decode_kv_tokens": int(kv),
                }
            )
            for ctx in context
        ]
        for kv in kv_tokens
    ]
    return {
        "prefill_isl": prefill_tokens.astype(float),
        "prefill_ttft_ms": np.asarray(prefill_ms),
        "decode_active_kv_tokens": kv_tokens.astype(float),
        "decode_context_length": context.astype(float),
        "decode_itl": np.asarray(decode_ms),
    }


def _prefill_pass(new_tokens: int, token_position: int | None) -> dict[str, int]:
    """A prefill pass of `new_tokens` whose tokens sit at `token_position` on average."""
    if token_position is None or new_tokens > 2 * token_position:
        requests = 1 if token_position is None else max(1, round(new_tokens / (2 * token_position)))
        return {"num_prefill_requests": requests, "sum_prefill_tokens": new_tokens, "sum_prefill_kv_tokens": 0}
    cached = round(token_position - new_tokens / 2)
    return {"num_prefill_requests": 1, "sum_prefill_tokens": new_tokens, "sum_prefill_kv_tokens": cached}


def _geometric_grid(upper: int, points_per_octave: int) -> np.ndarray:
    """Strictly increasing integers from 1 to `upper`, evenly spaced in log2."""
    count = int(round(math.log2(upper) * points_per_octave)) + 1
    return np.unique(np.round(np.geomspace(1, upper, count)).astype(np.int64))


@cache
def _aisimulate_version() -> str:
    return version("aisimulate")
