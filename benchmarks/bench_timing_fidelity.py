"""How faithful is the cached AIS table to direct AIS timing?

Replays the same candidates (Qwen3-32B on h200_sxm; vllm and sglang; agg TP 1-8 at two
concurrencies; disagg pairs with and without a KV-transfer bandwidth; a synthetic closed loop,
plus agg and disagg pairs on the first 3 minutes of the Mooncake conversation trace, whose
prompt lengths vary) with timing "ais" and "table", then reports the Kendall tau of the two rankings by output throughput and the worst
relative error of mean TPOT, mean TTFT and output throughput.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_timing_fidelity.py
Writes benchmarks/results/timing_fidelity.json.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from scipy.stats import kendalltau

from spica.evaluation.deployment import WorkloadSpec, build_replay_call
from spica.evaluation.replay import run_replay

RESULTS = Path(__file__).resolve().parent / "results"
BACKEND_VERSIONS = {"vllm": "0.24.0", "sglang": "0.5.14"}
# KV tokens per worker from AI Configurator 0.12; TP8 extrapolated.
KV_TOKENS = {
    "vllm": {1: 261_000, 2: 775_000, 4: 1_800_000, 8: 3_900_000},
    "sglang": {1: 248_000, 2: 749_000, 4: 1_740_000, 8: 3_800_000},
}
QWEN3_32B_KV_BYTES_PER_TOKEN = 262_144
METRICS = ("mean_tpot_ms", "mean_ttft_ms", "output_throughput_tok_s")
SYNTHETIC = WorkloadSpec(kind="synthetic", isl=3000, osl=300, request_count=400)
TRACE_MINUTES = 3


def qwen3_32b_candidate(
    backend: str, roles: dict[str, tuple[int, int]], concurrency: int | None, **extra: Any
) -> dict[str, Any]:
    """An unrolled candidate; `roles` maps "agg" or "prefill"/"decode" to (tp, replicas)."""
    mode = "agg" if "agg" in roles else "disagg"
    candidate: dict[str, Any] = {
        "deployment_mode": mode,
        "backend": backend,
        "backend_version": BACKEND_VERSIONS[backend],
        "model_name": "Qwen/Qwen3-32B",
        "hardware_sku": "h200_sxm",
        "startup_time": 60.0,
        "aic_nextn": 0,
        "router_mode": "round_robin",
        "used_gpus": sum(tp * replicas for tp, replicas in roles.values()),
    }
    for role, (tp, replicas) in roles.items():
        shape = "" if role == "agg" else f"{role}_"
        kv_tokens = KV_TOKENS[backend][tp]
        candidate.update(
            {
                f"{shape}tp": tp,
                f"{shape}pp": 1,
                f"{shape}attention_dp": 1,
                f"{shape}moe_tp": 1,
                f"{shape}moe_ep": 1,
                f"{shape}replicas": replicas,
                f"{role}_max_num_batched_tokens": 8192,
                f"{role}_max_num_seqs": 8 if role == "prefill" else 256,
                f"{role}_block_size": 64,
                f"{role}_enable_prefix_caching": role != "decode",
                f"{role}_kv_capacity_tokens": kv_tokens,
                f"{role}_num_gpu_blocks": kv_tokens // 64,
            }
        )
    if concurrency is not None:
        candidate["concurrency"] = concurrency
    candidate.update(extra)
    return candidate


def synthetic_candidates() -> list[dict[str, Any]]:
    chosen = []
    for backend in ("vllm", "sglang"):
        for tp in (1, 2, 4, 8):
            for concurrency in (16, 128):
                chosen.append(qwen3_32b_candidate(backend, {"agg": (tp, 2)}, concurrency))
        for prefill_tp, decode_tp in ((1, 2), (2, 4)):
            chosen.append(qwen3_32b_candidate(backend, {"prefill": (prefill_tp, 2), "decode": (decode_tp, 1)}, 64))
        chosen.append(
            qwen3_32b_candidate(
                backend,
                {"prefill": (2, 1), "decode": (2, 1)},
                64,
                kv_bytes_per_token=QWEN3_32B_KV_BYTES_PER_TOKEN,
                kv_transfer_bandwidth_gbps=25.0,
            )
        )
    return chosen


def trace_candidates() -> list[dict[str, Any]]:
    chosen = []
    for backend in ("vllm", "sglang"):
        chosen.append(qwen3_32b_candidate(backend, {"agg": (2, 4)}, None, router_mode="kv_router"))
        chosen.append(qwen3_32b_candidate(backend, {"prefill": (2, 2), "decode": (4, 1)}, None))
    return chosen


def trace_slice(directory: str) -> WorkloadSpec:
    shared = Path(os.environ.get("SPICA_SHARED_DIR", Path(__file__).resolve().parents[2] / "shared"))
    source = shared / "data" / "mooncake" / "conversation_trace_15min.jsonl"
    rows = [line for line in source.read_text().splitlines() if json.loads(line)["timestamp"] < TRACE_MINUTES * 60_000]
    path = Path(directory) / "mooncake_slice.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return WorkloadSpec(kind="trace", trace_path=str(path))


def label(candidate: dict[str, Any]) -> str:
    if candidate["deployment_mode"] == "agg":
        shape = f"agg tp{candidate['tp']}x{candidate['replicas']}"
    else:
        shape = f"disagg p{candidate['prefill_tp']}x{candidate['prefill_replicas']} d{candidate['decode_tp']}x{candidate['decode_replicas']}"
        if "kv_transfer_bandwidth_gbps" in candidate:
            shape += f" kv{candidate['kv_transfer_bandwidth_gbps']:g}GB/s"
    load = f"c{candidate['concurrency']}" if candidate.get("concurrency") else f"mooncake {TRACE_MINUTES} min"
    return f"{candidate['backend']} {shape} {load}"


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["SPICA_CACHE_DIR"] = scratch
        trace = trace_slice(scratch)
        runs = [(c, SYNTHETIC) for c in synthetic_candidates()] + [(c, trace) for c in trace_candidates()]
        for candidate, workload in runs:
            row: dict[str, Any] = {"candidate": label(candidate)}
            for timing in ("ais", "table"):
                started = time.perf_counter()
                outcome = run_replay(build_replay_call(candidate, workload, timing=timing))
                if outcome.status != "ok":
                    raise RuntimeError(f"{row['candidate']} ({timing}): {outcome.message}")
                row[timing] = {metric: outcome.summary[metric] for metric in METRICS}
                row[f"{timing}_seconds"] = round(time.perf_counter() - started, 3)
            row["relative_error"] = {
                metric: (row["table"][metric] - row["ais"][metric]) / row["ais"][metric] for metric in METRICS
            }
            rows.append(row)
            print(f"{row['candidate']:<50} " + " ".join(f"{m}={row['relative_error'][m]:+.3f}" for m in METRICS), flush=True)
    tau = kendalltau(
        [row["ais"]["output_throughput_tok_s"] for row in rows], [row["table"]["output_throughput_tok_s"] for row in rows]
    ).statistic
    result = {
        "candidates": len(rows),
        "kendall_tau_output_throughput": round(float(tau), 4),
        "worst_relative_error": {metric: round(max(abs(r["relative_error"][metric]) for r in rows), 4) for metric in METRICS},
        "mean_relative_error": {metric: round(sum(r["relative_error"][metric] for r in rows) / len(rows), 4) for metric in METRICS},
        "workloads": {
            "synthetic": {"isl": SYNTHETIC.isl, "osl": SYNTHETIC.osl, "request_count": SYNTHETIC.request_count},
            "trace": f"conversation_trace_15min.jsonl, first {TRACE_MINUTES} min, open loop",
        },
        "load_average": os.getloadavg(),
        "rows": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "timing_fidelity.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({key: value for key, value in result.items() if key != "rows"}, indent=2))


if __name__ == "__main__":
    main()
