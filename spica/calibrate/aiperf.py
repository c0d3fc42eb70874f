"""A measured point from an AIPerf profile export of a deployment Spica recommended.

AIPerf (NVIDIA's benchmark client for OpenAI-compatible endpoints, 0.13) writes
`profile_export_aiperf.json` (schema 1.4): per metric `{unit, avg, p50, ...}`, and the run's
settings under `input_config` — the model at `models.items[0].name`, the closed loop's
concurrency at the profiling phase's `concurrency`. Warm-up requests are reported apart
(`warmup_metrics`) and are not counted. The deployment it measured is the `candidate.json`
Spica wrote beside its manifest (`deploy/NN-*/candidate.json`): put it beside the export or
name it with `spica calibrate --candidate`. Measured isl/osl are the export's means; TPOT is
AIPerf's inter-token latency.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spica.calibrate.measurements import Measurement
from spica.core.errors import UserError
from spica.core.unrolled import Unrolled
from spica.space.branches import RolePool
from spica.space.shapes import WorkerShape

CANDIDATE_FILE = "candidate.json"


def read_aiperf_export(path: str | Path, candidate: str | Path | None = None) -> Measurement:
    path = Path(path)
    export = _json(path, "an AIPerf profile export")
    settings = export.get("input_config")
    if "time_to_first_token" not in export or not isinstance(settings, dict):
        raise UserError(f"{path}: not an AIPerf profile export (no time_to_first_token / input_config)")
    deployed = _candidate(path, candidate)
    unrolled = deployed["config"]
    model = _model(settings, path)
    if model != unrolled["model_name"]:
        raise UserError(f"{path}: AIPerf measured {model}, but {deployed['_path']} is a deployment of {unrolled['model_name']}")
    profiling = [phase for phase in settings.get("phases", []) if phase.get("kind", phase.get("name")) == "profiling"]
    concurrency = profiling[0].get("concurrency") if profiling else None
    if not isinstance(concurrency, int) or concurrency < 1:
        raise UserError(f"{path}: the profiling phase is not a closed loop with a concurrency (Spica replays the load it measured)")
    values = {name: _mean(export, name, path) for name in ("time_to_first_token", "inter_token_latency", "input_sequence_length",
                                                            "output_sequence_length")}
    view = Unrolled.of(unrolled)
    pools = tuple(RolePool(pool.role, WorkerShape(pool.tp, pool.pp, pool.attention_dp, pool.moe_tp, pool.moe_ep), pool.replicas)
                  for pool in view.pools)
    plain = {key: value for key, value in unrolled.items() if key != "timing_calibration"}  # fitted against uncalibrated timing
    return Measurement(
        source=f"{path} ({deployed['_path']})",
        model=model,
        system=unrolled["hardware_sku"],
        backend=unrolled["backend"],
        backend_version=unrolled.get("backend_version"),
        mode=unrolled["deployment_mode"],
        isl=max(1, round(values["input_sequence_length"])),
        osl=max(1, round(values["output_sequence_length"])),
        concurrency=concurrency,
        pools=pools,
        ttft_ms=values["time_to_first_token"],
        tpot_ms=values["inter_token_latency"],
        candidate={**plain, "concurrency": concurrency},
    )


def _json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise UserError(f"{path}: not JSON ({exc}); expected {what}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected {what}, got a JSON {type(data).__name__}")
    return data


def _candidate(export: Path, given: str | Path | None) -> dict[str, Any]:
    path = Path(given) if given is not None else export.parent / CANDIDATE_FILE
    if not path.is_file():
        raise UserError(f"{export}: an AIPerf export needs the candidate.json of the deployment it measured "
                        f"(deploy/NN-*/candidate.json) beside it or given with --candidate")
    data = _json(path, "a Spica candidate.json")
    if not isinstance(data.get("config"), dict) or "deployment_mode" not in data["config"]:
        raise UserError(f"{path}: not a Spica candidate.json (no config with deployment_mode)")
    return {**data, "_path": str(path)}


def _model(settings: dict[str, Any], path: Path) -> str:
    try:
        return str(settings["models"]["items"][0]["name"])
    except (KeyError, IndexError, TypeError):
        raise UserError(f"{path}: the export names no model (input_config.models.items[0].name)") from None


def _mean(export: dict[str, Any], name: str, path: Path) -> float:
    value = (export.get(name) or {}).get("avg")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise UserError(f"{path}: {name}.avg must be a positive number, got {value!r}")
    return float(value)
