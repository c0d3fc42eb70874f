"""How far are Spica's predictions from measured hardware? AI Configurator's silicon measurements,
each replayed by Spica's own evaluation path (`spica.calibrate.replayed`).

Every row Spica can express (agg rows, and disagg rows that name their worker counts) is pinned
as a careful user would pin it and replayed; rows it cannot express are counted by reason. Per
group (model, system, backend, mode), and per isl/osl inside it:
- TTFT and TPOT error: median and mean of |predicted / measured - 1|, and the bias (median of
  predicted / measured);
- Spearman rank correlation of output tok/s/GPU and tok/s/user between prediction and
  measurement. Measured tok/s/GPU is the closed loop's concurrency x osl / (TTFT + (osl - 1)
  x TPOT) / GPUs; tok/s/user is 1000 / TPOT;
- regret: in each (isl, osl, concurrency) bucket with two or more shapes, how much less the
  configuration Spica ranks first (by its predicted tok/s/GPU) measured than the best one; the
  mean over buckets.
- held out and calibrated (--calibrate): the group's points dealt into two halves; each half is
  predicted with a calibration (spica.calibrate.fit) fitted on the other half only, so no
  point is scored by factors fitted on it. Uncalibrated and held-out calibrated figures are
  reported apart; Spica ships no calibration fitted on these rows.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_fidelity.py [--quick] [--calibrate] [--spread S] [--client-start staggered]
--quick: the five groups of the README's table, 12 points each (CI runs it).
Writes benchmarks/results/fidelity.json (fidelity_quick.json with --quick) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Sequence

import yaml
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spica.calibrate.fit import errors, held_out, predictor, predictors  # noqa: E402
from spica.calibrate.measurements import Measurement, Skipped, read_silicon_csv  # noqa: E402
from spica.calibrate.replayed import Predicted  # noqa: E402
from spica.search.pool import local_pool  # noqa: E402
from spica.space.shapes import GPUS_PER_WORKER  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TABLE_GROUPS = (
    ("Qwen/Qwen3-32B", "h100_sxm", "vllm", "agg"),
    ("meta-llama/Llama-3.1-70B", "h200_sxm", "vllm", "agg"),
    ("openai/gpt-oss-120b", "h200_sxm", "trtllm", "agg"),
    ("deepseek-ai/DeepSeek-R1", "b200_sxm", "trtllm", "agg"),
    ("Qwen/Qwen3-32B", "h100_sxm", "trtllm", "agg"),
)
QUICK_POINTS = 12


def silicon_csv() -> Path:
    import aiconfigurator_core

    return Path(aiconfigurator_core.__file__).parent / "systems" / "silicon_sample.csv"


def measured_tokens_per_gpu(point: Measurement) -> float:
    seconds = (point.ttft_ms + (point.osl - 1) * point.tpot_ms) / 1000.0
    return point.concurrency * point.osl / seconds / point.gpus


def _spearman(pairs: list[tuple[float, float]]) -> float | None:
    if len(pairs) < 3 or len({a for a, _ in pairs}) < 2 or len({b for _, b in pairs}) < 2:
        return None
    value = spearmanr([a for a, _ in pairs], [b for _, b in pairs]).statistic
    return round(float(value), 4)


def regret(predictions: Sequence[Predicted]) -> dict[str, Any]:
    """Mean over (isl, osl, concurrency) buckets of 1 - measured(Spica's pick) / best measured."""
    buckets: dict[tuple, list[Predicted]] = defaultdict(list)
    for item in predictions:
        if item.status == "feasible":
            point = item.measurement
            buckets[(point.isl, point.osl, point.concurrency)].append(item)
    regrets = []
    for items in buckets.values():
        if len(items) < 2:
            continue
        pick = max(items, key=lambda item: item.tokens_per_s_per_gpu or 0.0)
        best = max(measured_tokens_per_gpu(item.measurement) for item in items)
        regrets.append(1.0 - measured_tokens_per_gpu(pick.measurement) / best)
    return {"buckets": len(regrets), "mean": round(statistics.fmean(regrets), 4) if regrets else None,
            "worst": round(max(regrets), 4) if regrets else None}


def summary(predictions: Sequence[Predicted]) -> dict[str, Any]:
    done = [item for item in predictions if item.status == "feasible"]
    return {
        **errors(predictions).as_dict(),
        "failed": dict(Counter((item.reason or "").split(":")[0] for item in predictions if item.status == "failed")),
        "unexpressible": dict(Counter((item.reason or "").split(":")[0] for item in predictions if item.status == "unexpressible")),
        "spearman_tok_s_gpu": _spearman([(item.tokens_per_s_per_gpu or 0.0, measured_tokens_per_gpu(item.measurement)) for item in done]),
        "spearman_tok_s_user": _spearman([(1000.0 / item.tpot_ms, 1000.0 / item.measurement.tpot_ms) for item in done if item.tpot_ms]),
        "regret": regret(predictions),
    }


def _name(group: tuple) -> str:
    return " / ".join(group)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", type=Path, default=None, help="a silicon CSV (default: the installed aiconfigurator-core's)")
    parser.add_argument("--quick", action="store_true", help=f"the table's groups only, {QUICK_POINTS} points each")
    parser.add_argument("--table", action="store_true", help="the table's groups only, every point")
    parser.add_argument("--calibrate", action="store_true", help="also held-out calibrated figures (2-fold) per group")
    parser.add_argument("--spread", type=float, default=None, help="workload.length_spread for every replay")
    parser.add_argument("--client-start", choices=["staggered"], default=None, help="workload.client_start for every replay")
    parser.add_argument("--unmeasured", action="append", default=[], metavar="FIELD=VALUE",
                        help="a search_space field the rows do not record, e.g. fmha_quant_mode=bfloat16 (AIS holds "
                             "DeepSeek's context MLA on gb200 / gb300 in bfloat16 only) or kv_transfer_bandwidth_gbps=5")
    parser.add_argument("--per-version", action="store_true",
                        help="calibrate each measured engine version apart, as a cluster running one would (versions with under 8 points together)")
    parser.add_argument("--only", default=None, help="only the groups whose name holds this text (e.g. Llama)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    items = read_silicon_csv(args.csv or silicon_csv())
    points = [item for item in items if isinstance(item, Measurement)]
    skipped = Counter(item.reason.split(":")[0] for item in items if isinstance(item, Skipped))
    groups: dict[tuple, list[Measurement]] = defaultdict(list)
    for point in points:
        groups[point.group].append(point)
    if args.quick:
        groups = {group: random.Random(0).sample(groups[group], min(QUICK_POINTS, len(groups[group]))) for group in TABLE_GROUPS}
    elif args.table:
        groups = {group: groups[group] for group in TABLE_GROUPS}
    if args.only:
        groups = {group: members for group, members in groups.items() if args.only.lower() in _name(group).lower()}
    report: dict[str, Any] = {"csv_rows": len(items), "unexpressible_rows": dict(skipped), "spread": args.spread,
                              "client_start": args.client_start, "unmeasured": args.unmeasured, "groups": {}}
    pool = local_pool(args.workers, args.workers)
    try:
        unmeasured = {name: yaml.safe_load(value) for name, value in (entry.split("=", 1) for entry in args.unmeasured)} or None
        options = {"length_spread": args.spread, "client_start": args.client_start, "unmeasured": unmeasured}
        run = predictor(pool, **{name: value for name, value in options.items() if value is not None})
        fits = predictors(pool, **{name: value for name, value in options.items() if value is not None and name != "client_start"})
        for group, members in sorted(groups.items(), key=lambda entry: -len(entry[1])):
            predictions = run(members, None)
            entry = {"points": len(members), **summary(predictions)}
            by_length: dict[tuple, list[Predicted]] = defaultdict(list)
            for item in predictions:
                by_length[(item.measurement.isl, item.measurement.osl)].append(item)
            entry["by_isl_osl"] = {f"{isl}/{osl}": summary(part) for (isl, osl), part in sorted(by_length.items())}
            wide = [item for item in predictions if any(pool.shape.gpus > max(GPUS_PER_WORKER) for pool in item.measurement.pools)]
            if wide:  # workers wider than a node-scale system runs: wide expert parallelism on a rack
                entry["wide_workers"] = summary(wide)
            expressible = [item.measurement for item in predictions if item.status == "feasible"]
            if args.calibrate and len(expressible) >= 4:
                calibrated, fitted = [], []
                for part in _calibration_groups(expressible, args.per_version):
                    predicted, found = held_out(part, fits, 2)
                    calibrated += predicted
                    fitted += [{**item.factors, "client_start": item.client_start} for item in found]
                entry["held_out_calibrated"] = {**summary(calibrated), "factors": fitted, "per_version": args.per_version}
            report["groups"][_name(group)] = entry
            print(_row(group, entry), flush=True)
    finally:
        pool.close()
    report["seconds"] = round(time.perf_counter() - started, 1)
    output = args.output or RESULTS / ("fidelity_quick.json" if args.quick else "fidelity_table.json" if args.table else "fidelity.json")
    output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{sum(len(m) for m in groups.values())} points in {report['seconds']} s -> {output}")


def _calibration_groups(points: Sequence[Measurement], per_version: bool) -> list[list[Measurement]]:
    """The points each calibration is fitted and held out on: the whole group, or one engine
    version's points each (the versions with too few points for a fit of their own together)."""
    if not per_version:
        return [list(points)]
    versions: dict[str, list[Measurement]] = defaultdict(list)
    for point in points:
        versions[point.backend_version or ""].append(point)
    own = sorted((part for part in versions.values() if len(part) >= MIN_VERSION_POINTS), key=len, reverse=True)
    rest = [point for part in versions.values() if len(part) < MIN_VERSION_POINTS for point in part]
    if len(rest) >= 4 or not own:
        return own + [rest]
    return [own[0] + rest, *own[1:]]  # too few to fit apart: with the largest version's


MIN_VERSION_POINTS = 8


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f} %"


def _row(group: tuple, entry: dict[str, Any]) -> str:
    line = (f"{_name(group)}: {entry['predicted']} of {entry['points']} points; "
            f"TTFT {_pct(entry['ttft_median_ape'])} (bias {entry['ttft_bias'] and round(entry['ttft_bias'], 2)}), "
            f"TPOT {_pct(entry['tpot_median_ape'])} (bias {entry['tpot_bias'] and round(entry['tpot_bias'], 2)}), "
            f"rank {entry['spearman_tok_s_gpu']}, regret {_pct(entry['regret']['mean'])}")
    calibrated = entry.get("held_out_calibrated")
    if calibrated:
        line += (f" | held out, calibrated: TTFT {_pct(calibrated['ttft_median_ape'])}, TPOT {_pct(calibrated['tpot_median_ape'])}, "
                 f"rank {calibrated['spearman_tok_s_gpu']}, regret {_pct(calibrated['regret']['mean'])}")
    return line


if __name__ == "__main__":
    main()
