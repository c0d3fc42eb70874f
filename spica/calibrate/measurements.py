"""Measured points: what a deployment really did on hardware, read from files a user brings.

Two formats, told apart by their content (spica/calibrate/formats.py):
- AI Configurator's silicon CSV (`aiconfigurator_core/systems/silicon_sample.csv` has 5,221
  rows): one row per measured configuration — backend and its version, model, system, agg or
  disagg, isl/osl, concurrency, per-role shape and worker counts, mean TTFT and TPOT.
- an AIPerf profile export (`profile_export_aiperf.json`) beside the `candidate.json` of the
  Spica deployment it measured (`deploy/NN-*/candidate.json`): see `spica.calibrate.aiperf`.

The silicon CSV needs care; each trap below was checked on the shipped file:
- `batch_size` is per attention-DP rank in DEP rows; the total concurrency is
  `silicon_concurrency=N` in `silicon_data_source`, else `_cN_` in the row id.
- The 2026-04-06 dump stores MoE rows with ep > 1 at width tp×ep (tp16, tp64, moe_ep 16)
  although they ran on tp GPUs (their twins in the 2026-03-25 dump measured the same TTFT and
  TPOT): the id's `_tpX_epY_` gives the real width. Such twins are read once.
- disagg rows leave the worker counts empty: they cannot be replayed as measured.
- the KV cache's and context attention's modes are not columns: the row's `precision` implies them
  (spica/calibrate/replayed.py).
A row Spica cannot express is returned as a `Skipped` with a reason, never guessed at.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from spica.core.errors import UserError
from spica.core.unrolled import MODES
from spica.space.branches import RolePool
from spica.space.shapes import WorkerShape

SILICON_COLUMNS = (
    "id", "silicon_data_source", "backend", "backend_version", "model_path", "system", "mode", "isl", "osl",
    "gemm_quant_mode", "moe_quant_mode", "batch_size", "tp_size", "pp_size", "attention_dp_size", "moe_tp_size",
    "moe_ep_size", "silicon_ttft_ms", "silicon_tpot_ms",
)
ROLE_COLUMNS = ("num_workers", "tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")


@dataclass(frozen=True)
class Measurement:
    """One measured configuration and its mean TTFT and TPOT (ms)."""

    source: str  # file and row, for messages
    model: str
    system: str
    backend: str
    backend_version: str | None  # the measured engine's version, as recorded
    mode: str
    isl: int
    osl: int
    concurrency: int
    pools: tuple[RolePool, ...]  # each role's measured shape and worker count
    ttft_ms: float
    tpot_ms: float
    quant: tuple[tuple[str, str], ...] = ()  # (field, mode) as measured, e.g. ("gemm_quant_mode", "fp8")
    precision: str | None = None  # the checkpoint's precision as a silicon row names it (fp8, fp4, bf16, ...)
    candidate: dict | None = field(default=None, compare=False)  # an AIPerf point: the candidate it measured

    @property
    def gpus(self) -> int:
        return sum(pool.gpus for pool in self.pools)

    @property
    def group(self) -> tuple[str, str, str, str]:
        return self.model, self.system, self.backend, self.mode


@dataclass(frozen=True)
class Skipped:
    """A row that is read but cannot be replayed as measured, and why (a reason a person can count)."""

    source: str
    reason: str


def read_silicon_csv(path: str | Path) -> list[Measurement | Skipped]:
    """Every row of a silicon CSV, as a Measurement or a Skipped; a file that is not one raises
    UserError (one line naming the file and, for a bad value, its line and column)."""
    path = Path(path)
    rows = list(_rows(path))
    seen: dict[tuple, str] = {}
    out: list[Measurement | Skipped] = []
    for line, row in rows:
        where = f"{path.name}:{line}"
        item = _silicon_row(row, where)
        if isinstance(item, Measurement):
            twin = (item.model, item.system, item.backend, item.mode, item.isl, item.osl, item.concurrency, item.ttft_ms, item.tpot_ms)
            if twin in seen:
                item = Skipped(where, f"duplicate: the same measurement as {seen[twin]}")
            else:
                seen[twin] = where
        out.append(item)
    return out


def _rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    try:
        handle = path.open(newline="")
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror})") from None
    with handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames:
            raise UserError(f"{path}: empty file (a silicon CSV needs a header with {', '.join(SILICON_COLUMNS)})")
        missing = [name for name in SILICON_COLUMNS if name not in reader.fieldnames]
        if missing:
            raise UserError(f"{path}: missing column {missing[0]!r} (a silicon CSV needs {', '.join(SILICON_COLUMNS)})")
        count = 0
        for count, row in enumerate(reader, start=1):
            yield count + 1, row
        if not count:
            raise UserError(f"{path}: no measured rows below the header")


def _number(row: dict[str, str], name: str, where: str, *, positive: bool = True) -> float | None:
    text = (row.get(name) or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"{where}: column {name!r}: {text!r} is not a number") from None
    if not math.isfinite(value) or (positive and value <= 0):
        raise UserError(f"{where}: column {name!r}: {text} must be a positive number")
    return value


def _integer(row: dict[str, str], name: str, where: str, default: int | None = None) -> int | None:
    value = _number(row, name, where, positive=False)
    if value is None:
        return default
    if value < 0 or value != int(value):
        raise UserError(f"{where}: column {name!r}: {row[name]} must be a whole number >= 0")
    return int(value)


def _silicon_row(row: dict[str, str], where: str) -> Measurement | Skipped:
    ttft, tpot = _number(row, "silicon_ttft_ms", where), _number(row, "silicon_tpot_ms", where)
    isl, osl = _integer(row, "isl", where), _integer(row, "osl", where)
    mode = (row.get("mode") or "").strip()
    if mode not in MODES:
        raise UserError(f"{where}: column 'mode': {mode!r} is not one of {', '.join(MODES)}")
    if None in (ttft, tpot, isl, osl) or not isl or not osl:
        return Skipped(where, "incomplete: no isl/osl or no measured TTFT/TPOT")
    identity = (row.get("id") or "").strip()
    if mode == "disagg":
        pools = _disagg_pools(row, where)
        if isinstance(pools, Skipped):
            return pools
        concurrency = _concurrency(row, identity, None, where)
    else:
        pool = _agg_pool(row, identity, where)
        if isinstance(pool, Skipped):
            return pool
        pools = (pool,)
        concurrency = _concurrency(row, identity, pool.shape.attention_dp, where)
    if concurrency is None:
        return Skipped(where, "incomplete: no concurrency")
    if any(pool.shape.pp > 1 for pool in pools):
        return Skipped(where, "pipeline_parallel: Replay's engines run pp 1 only")
    quant = tuple((name, row[name].strip()) for name in ("gemm_quant_mode", "moe_quant_mode") if (row.get(name) or "").strip())
    return Measurement(
        source=f"{where} ({identity})" if identity else where,
        model=row["model_path"].strip(),
        system=row["system"].strip(),
        backend=row["backend"].strip(),
        backend_version=(row.get("backend_version") or "").strip() or _image_version(row),
        mode=mode,
        isl=isl,
        osl=osl,
        concurrency=concurrency,
        pools=pools,
        ttft_ms=ttft,
        tpot_ms=tpot,
        quant=quant,
        precision=(row.get("precision") or "").strip() or None,
    )


def _concurrency(row: dict[str, str], identity: str, attention_dp: int | None, where: str) -> int | None:
    """The total requests in flight: recorded in the source, else in the id, else the batch size
    (per attention-DP rank in a DEP row)."""
    recorded = re.search(r"silicon_concurrency=(\d+)", row.get("silicon_data_source") or "") or re.search(r"_c(\d+)_", identity)
    if recorded:
        return int(recorded.group(1))
    batch = _integer(row, "batch_size", where)
    if batch is None or attention_dp is None:
        return None
    return batch * attention_dp


def _agg_pool(row: dict[str, str], identity: str, where: str) -> RolePool | Skipped:
    tp = _integer(row, "tp_size", where)
    if not tp:
        return Skipped(where, "incomplete: no tp_size")
    dp = _integer(row, "attention_dp_size", where, 1) or 1
    moe_tp = _integer(row, "moe_tp_size", where, 1) or 1
    moe_ep = _integer(row, "moe_ep_size", where, 1) or 1
    pp = _integer(row, "pp_size", where, 1) or 1
    width = re.search(r"_tp(\d+)(?:_\d+)?_ep(\d+)(?:_\d+)?_", identity)
    if width and moe_ep > 1:  # the id is the real shape where a dump widened tp (or ep) by the other
        gpus, ep = int(width.group(1)), int(width.group(2))
        if gpus % ep:
            return Skipped(where, f"shape_inconsistent: id {identity} names tp{gpus} ep{ep}")
        if tp * dp != gpus or moe_tp * moe_ep != gpus:
            tp, dp = (1, gpus) if dp > 1 else (gpus, 1)
            moe_tp, moe_ep = gpus // ep, ep
    if moe_tp * moe_ep > 1 and tp * dp != moe_tp * moe_ep:  # moe 1×1: a dense model's row
        return Skipped(where, f"shape_inconsistent: attention tp{tp}×dp{dp} is not MoE tp{moe_tp}×ep{moe_ep}")
    return RolePool("agg", WorkerShape(tp, pp, dp, moe_tp, moe_ep), 1)


def _disagg_pools(row: dict[str, str], where: str) -> tuple[RolePool, ...] | Skipped:
    pools = []
    for role in ("prefill", "decode"):
        values = {name: _integer(row, f"{role}_{name}", where) for name in ROLE_COLUMNS}
        if not values["num_workers"]:
            return Skipped(where, "disagg_worker_counts: the row leaves the prefill/decode worker counts empty")
        if not values["tp_size"]:
            return Skipped(where, f"incomplete: no {role}_tp_size")
        shape = WorkerShape(values["tp_size"], values["pp_size"] or 1, values["attention_dp_size"] or 1,
                            values["moe_tp_size"] or 1, values["moe_ep_size"] or 1)
        if shape.moe_tp * shape.moe_ep > 1 and shape.tp * shape.attention_dp != shape.moe_tp * shape.moe_ep:
            return Skipped(where, f"shape_inconsistent: {role} attention tp{shape.tp}×dp{shape.attention_dp} is not MoE "
                                  f"tp{shape.moe_tp}×ep{shape.moe_ep}")
        pool = RolePool(role, shape, values["num_workers"])
        pools.append(pool)
    return tuple(pools)


def _image_version(row: dict[str, str]) -> str | None:
    """The engine version of the container image named in the source (`...:v0.19.0-cu130`), if any."""
    found = re.search(r":v?(\d+\.\d+[\w.]*?)(?:-cu\d+)?(?:;|$)", row.get("silicon_data_source") or "")
    return found.group(1) if found else None


def measurements(items: Sequence[Measurement | Skipped]) -> list[Measurement]:
    return [item for item in items if isinstance(item, Measurement)]
