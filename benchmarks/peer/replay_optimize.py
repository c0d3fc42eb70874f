"""Dynamo's own replay-backed optimizer (`dynamo.profiler.utils.replay_optimize`, ai-dynamo 1.6.1) on
a dense benchmark scenario (S1, S2), a second peer for benchmarks/bench_peer.py.

    PYTHONPATH=. .venv/bin/python benchmarks/peer/replay_optimize.py SCENARIO OUT.json

It searches one deployment mode and one backend per call (a local descent over TP, then workers,
then router knobs), so the scenario's space is run as one call per (mode, backend), one after
another in this process; OUT.json gets each call's wall, the states it replayed and its best
feasible state. bench_peer.py times the process and scores each call's best with Spica's evaluator
(`candidate` below), keeping the better.

What its spec takes from the scenario: model, GPU system, GPU budget, backend, the traffic (S1:
isl 1024 / osl 128, 32 in flight, 128 requests; S2: the Mooncake trace at its own timestamps),
router modes and, under kv_router, the scenario's overlap_score_credit and prefill_load_scale lists;
its replays run 2 at a time as Spica's. What it cannot express:
- the goal: it maximises total output tok/s and fills the GPU budget by design, not per GPU
  (S1's throughput_per_gpu); S2's SLA is a gate on the mean TTFT and ITL (2,000 / 50 ms), not
  goodput_per_gpu's count of the requests within it;
- the engine knobs: not searched; each role's are pinned (`pinned`: the mocker's default where the
  scenario's list holds it, else the list's value nearest to it);
- KV capacity: the mocker's default pool (16,384 blocks of 64 tokens) for every TP, where Spica
  sizes it per shape from GPU memory, and no context_length filter on the shapes;
- router_temperature: not searched, Dynamo's default 0.0;
- TP: AIS's list for the system (1, 2, 4, 8 on H200), plain TP only, as Spica's dense space.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the scenarios are bench_search's

from bench_search import REPO, load  # noqa: E402
from peer.rescore import ROUTER_SECTION, Mapper  # noqa: E402
from spica.config import SmartSearchConfig
from spica.core.unrolled import ROLES

MOCKER_DEFAULTS = {"max_num_seqs": 256, "max_num_batched_tokens": 8192}  # dynamo.mocker's, ai-dynamo 1.6.1
WORKER_TYPES = {"agg": "aggregated", "prefill": "prefill", "decode": "decode"}
SCENARIOS = ("s1", "s2")  # S3 is a MoE Pareto front: replay_optimize is dense and single-objective


def pinned(config: SmartSearchConfig, role: str) -> dict[str, int]:
    """A role's engine knobs for every state: the peer does not search them."""
    space = config.search_space
    return {knob: min(getattr(space, f"{role}_{knob}"), key=lambda value: (abs(value - default), value))
            for knob, default in MOCKER_DEFAULTS.items()}


def spec(config: SmartSearchConfig, mode: str, backend: str) -> Any:
    """The peer's spec for one (mode, backend) of the scenario."""
    from dynamo.profiler.utils.replay_optimize import EngineSpec, HardwareSpec, ReplayOptimizeSpec, RouterSpec, SLASpec, WorkloadSpec

    space, workload, sla = config.search_space, config.workload, config.goal.sla

    def engine_args(role: str) -> dict[str, Any]:
        return {"engine": {"worker_type": WORKER_TYPES[role], "block_size": getattr(space, f"{role}_block_size"),
                           "enable_prefix_caching": getattr(space, f"{role}_enable_prefix_caching"), **pinned(config, role)}}

    roles = {"agg": {"baseEngineArgs": engine_args("agg")},
             "disagg": {"basePrefillEngineArgs": engine_args("prefill"), "baseDecodeEngineArgs": engine_args("decode")}}[mode]
    if workload.kind == "trace_path":
        traffic = WorkloadSpec(traceFile=str(workload.trace_path), traceFormat=workload.trace_format,
                               arrivalSpeedupRatio=workload.arrival_speedup_ratio)
    else:
        traffic = WorkloadSpec(isl=workload.isl, osl=workload.osl, concurrency=workload.concurrency,
                               requestCount=workload.resolved_request_count())
    modes = set(space.router_mode)
    return ReplayOptimizeSpec(
        engine=EngineSpec(model=space.model_name, backend=backend, **roles),
        hardware=HardwareSpec(gpuSku=space.hardware_sku, totalGpus=space.gpu_budget),
        workload=traffic,
        sla=SLASpec(ttft=sla.ttft_ms, itl=sla.itl_ms, e2eLatency=sla.e2e_ms) if sla else SLASpec(),
        router=RouterSpec(mode="both" if len(modes) > 1 else modes.pop(), overlapCredits=list(space.overlap_score_credit),
                          prefillLoadScales=list(space.prefill_load_scale)),
        maxParallelEvals=config.sweep.parallel_evals,
    )


def run(config: SmartSearchConfig) -> list[dict[str, Any]]:
    """One call per (mode, backend): its wall, how many states it replayed, its best feasible state."""
    from dynamo.profiler.utils.replay_optimize import optimize_dense_agg_with_replay, optimize_dense_disagg_with_replay

    optimize = {"agg": optimize_dense_agg_with_replay, "disagg": optimize_dense_disagg_with_replay}
    calls = []
    for mode in config.search_space.deployment_mode:
        for backend in config.search_space.backend:
            started = time.perf_counter()
            result = optimize[mode](spec(config, mode, backend))
            best = result.best_feasible
            calls.append({"mode": mode, "backend": backend, "wall_seconds": round(time.perf_counter() - started, 1),
                          "evaluations": len(result.evaluated_df), "feasible": len(result.feasible_df),
                          "best": None if best is None else {key: _plain(value) for key, value in best.items()}})
            print(f"{mode} {backend}: {calls[-1]['evaluations']} states in {calls[-1]['wall_seconds']} s", flush=True)
    return calls


def _plain(value: Any) -> Any:
    """A numpy scalar of the peer's data frame as JSON takes it."""
    return value.item() if hasattr(value, "item") else value


def candidate(config: SmartSearchConfig, call: dict[str, Any]) -> dict[str, Any]:
    """Spica's candidate for a call's best state: same mode, backend, per-role TP and workers,
    router mode and KV-router weights, and the pinned engine knobs, unrolled by Spica (which
    sizes KV capacity and the traffic as for its own trials)."""
    mode, state = call["mode"], call["best"]
    sample: dict[str, Any] = {"deployment_mode": mode, "backend": call["backend"]}
    for role in ROLES[mode]:
        prefix = "" if mode == "agg" else f"{role}_"
        sample[f"{prefix}tp"] = state[f"{prefix}tp"]
        sample[f"{prefix}replicas"] = state["workers" if mode == "agg" else f"{role}_workers"]
        sample.update({f"{role}_{knob}": value for knob, value in pinned(config, role).items()})
    router: dict[str, Any] = {"policy": state["router_mode"]}
    if state["router_mode"] == "kv_router":
        router.update(overlap_score_credit=state["overlap_score_credit"], prefill_load_scale=state["prefill_load_scale"],
                      temperature=0.0)  # not searched by the peer: Dynamo's default
    sample["adapters"] = {ROUTER_SECTION: router}
    return Mapper(config).candidate(sample)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=SCENARIOS)
    parser.add_argument("out", type=Path, help="the JSON the calls are written to")
    args = parser.parse_args()
    out = args.out.resolve()
    os.chdir(REPO)  # scenario paths (S2's trace) are relative to the project root
    os.environ.setdefault("DYN_LOG", "error")  # as Spica's replays and the other peer's run
    calls = run(load(args.scenario))
    out.write_text(json.dumps(calls, indent=1) + "\n")


if __name__ == "__main__":
    main()
