"""Re-score a run of the peer (NVIDIA's `aisimulate recommend`) on a benchmark scenario with Spica's
own evaluator, so that its result and Spica's compare on one scale; it goes to
benchmarks/results/peer.json under the scenario's key, where benchmarks/bench_search.py reads it.

    benchmarks/peer/run.sh SCENARIO SEED RUN      # the peer, in its own venv
    PYTHONPATH=. .venv/bin/python benchmarks/peer/rescore.py RUN/peer --scenario SCENARIO --seed SEED --time RUN/time.txt

RUN/peer is the peer's --output-dir of a run of benchmarks/peer/SCENARIO.yaml (s1, s2 or s3; the
default s3); its recommendation.json lists every candidate it evaluated. Run the peer in a venv of
its own: aisimulate 0.13.0.dev202610130000000070 with its declared dependencies, ai-dynamo and
ai-dynamo-runtime 1.6.1 and msgspec with --no-deps; `time` (GNU `/usr/bin/time -v`) gives its wall.

Each feasible peer candidate becomes Spica's candidate through Spica's own `unroll` (same mode,
backend, per-role shape and replicas, engine knobs, router mode and KV-router weights, KV-load
ratio; Spica resolves KV capacity, concurrency and request count as for its own trials) and is
scored by `evaluate`. For a Pareto scenario (S3) the result is the non-dominated set of all of
them, as Spica's front is of its own replays; for one objective (S1 throughput_per_gpu, S2
goodput_per_gpu) it is the peer's best candidate as Spica scores it and, beside it, the one the
peer itself ranks first, each with Spica's value and the peer's own.

Where the peer's search or scoring differs from Spica's:
- every scenario: 16 / 48 / 64 (S1 / S2 / S3) is the peer's suggestion budget (cache hits and
  failures included, split evenly over the two mode branches, batches of 2), Spica's unique
  replays; the peer's optimizer is Vizier 0.1.21's GP-UCB-PE, Spica's its own designer on Vizier
  0.1.24; the peer times every step with AIS directly, Spica with its cached table of the same model;
- SGLang (S1, S3): the peer's SGLang mocker ignores max_num_batched_tokens (chunked_prefill_size
  8192 and max_prefill_tokens 16384 for every candidate; Spica sets both to the knob), and the
  peer's memory model holds ~4 % more SGLang KV tokens than AI Configurator's;
- S1, S2 (dense Qwen3-32B): both enumerate plain TP (pp 1, no attention DP) with replicas within
  the budget. S1 keeps 32 requests in flight, so its max_num_seqs values (all >= 256) replay
  alike: Spica merges them, the peer spends suggestions on each;
- S2: the peer's router `temperature` is Spica's router_temperature; its prefill-load model is
  pinned to "none", the KV router default Spica runs (the peer would also search "ais"); the
  trace's 512 tokens per hash id are set for the peer and are Replay's Mooncake default in Spica;
- S3: the peer's default preset keeps pure MoE layouts (TP, TEP, DEP, MoE-TP under TP or DP
  attention); Spica also searches mixed splits (e.g. tp+dp attention over tp+ep experts).
Re-scored: S3 (seed 1) vLLM candidates agree within 1.5 %, SGLang ones within 5.5 %; S1 (2 trials)
disagg SGLang within 0.1 % (exact with direct AIS), agg SGLang at 16384 batched tokens -1.8 % (the
batching above); S2, agg vLLM 4xtp4: round_robin exact with direct AIS (+5.0 % with the table),
kv_router +0.06 % (-3.1 %). S2's goodput counts only requests within the SLA: on an overloaded
candidate it is a few tok/s that move by tens of % between two replays of one kv_router
candidate with temperature > 0 (Dynamo samples workers unseeded), the peer's own replays included.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the scenarios are bench_search's

from bench_search import PEER as RESULTS, REPO, SCENARIOS, load  # noqa: E402
from spica.config import SmartSearchConfig
from spica.core.unrolled import SHAPE_KEYS
from spica.core.unrolled import ROLES, Unrolled, shape_prefix
from spica.evaluation import score
from spica.evaluation.evaluate import Evaluation, evaluate
from spica.search.branches import branches_for
from spica.search.unroll import unroll
from spica.space.branches import BackendFit, ParallelConfig, RolePool, worker_capacity
from spica.space.cache import atomic_write_text
from spica.space.capacity import MemorySettings
from spica.space.shapes import WorkerShape

PEER = "aisimulate recommend (aisimulate 0.13.0.dev202610130000000070, ai-dynamo 1.6.1), benchmarks/peer/{}.yaml"
ROUTER_SECTION = "dynamo.router"  # the peer's adapter that holds a candidate's router
KV_ROUTER_KNOBS = {"overlap_score_credit": "overlap_score_credit", "prefill_load_scale": "prefill_load_scale",
                   "router_temperature": "temperature"}  # Spica's name: the peer's

Scored = tuple[dict[str, Any], dict[str, Any] | None, Evaluation | None]
"""A feasible peer record, Spica's candidate for it and Spica's evaluation (None: Spica cannot price it)."""


def _pools(sample: dict[str, Any]) -> tuple[RolePool, ...]:
    """Each role's shape and replicas; a shape key the sample leaves out (or null) is 1, as for a dense model."""
    pools = []
    for role in ROLES[sample["deployment_mode"]]:
        prefix = shape_prefix(role)
        shape = WorkerShape(**{key: int(sample[prefix + key]) if key == "tp" else int(sample.get(prefix + key) or 1) for key in SHAPE_KEYS})
        pools.append(RolePool(role, shape, int(sample[f"{prefix}replicas"])))
    return tuple(pools)


def _router(sample: dict[str, Any]) -> dict[str, Any]:
    """Spica's router knobs for the peer's router choice (no router section: the peer's round_robin)."""
    router = (sample.get("adapters") or {}).get(ROUTER_SECTION) or {"policy": "round_robin"}
    load_model = (router.get("prefill_load_model") or {}).get("type", "none")
    if load_model != "none":
        raise LookupError(f"prefill_load_model {load_model!r}: Spica's KV router runs Dynamo's default, 'none'")
    knobs: dict[str, Any] = {"router_mode": router["policy"]}
    if router["policy"] == "kv_router":
        knobs.update({ours: float(router[theirs]) for ours, theirs in KV_ROUTER_KNOBS.items()})
    return knobs


class Mapper:
    """A peer sample as Spica's candidate: its layout looked up in Spica's enumeration (or, outside
    it, built the same way with Spica's KV capacity), then unrolled by Spica."""

    def __init__(self, config: SmartSearchConfig) -> None:
        self.config = config
        self.branches = {branch.mode: branch for branch in branches_for(config)}
        self.known = {(parallel.mode, parallel.pools): parallel for branch in self.branches.values() for parallel in branch.configs}

    def _parallel(self, sample: dict[str, Any]) -> ParallelConfig:
        mode, backend, pools = sample["deployment_mode"], sample["backend"], _pools(sample)
        known = self.known.get((mode, pools))
        if known is not None and known.supports(backend):
            return known
        branch, space = self.branches[mode], self.config.search_space
        capacities = tuple(
            worker_capacity(
                space.model_name, branch.role_skus[pool.role], backend, branch.backend_version(backend), pool.shape,
                MemorySettings(getattr(space, f"{pool.role}_gpu_memory_utilization"), max(getattr(space, f"{pool.role}_max_num_batched_tokens"))),
                getattr(space, f"{pool.role}_block_size"),
            )
            for pool in pools
        )
        return ParallelConfig(mode, pools, (BackendFit(backend, branch.backend_version(backend), capacities),), space.gpu_budget)

    def candidate(self, sample: dict[str, Any]) -> dict[str, Any]:
        mode = sample["deployment_mode"]
        branch = self.branches[mode]
        knobs: dict[str, Any] = {"planner_scaling_policy": "disabled", **_router(sample)}
        for role in ROLES[mode]:
            for knob in ("max_num_batched_tokens", "max_num_seqs"):
                knobs[f"{role}_{knob}"] = int(sample[f"{role}_{knob}"])
        knobs.update({name: sample[name] for name in branch.quant_knobs()})  # only those the scenario sets
        ratio = float(sample["kv_load_ratio"]) if self.config.workload.kind == "kv_load_ratio" else None
        return unroll(self.config, branch, self._parallel(sample), sample["backend"], knobs, {}, kv_load_ratio=ratio)


def _wall_seconds(time_file: Path | None) -> float | None:
    """The wall of GNU time's `-v` report ("Elapsed (wall clock) time ...: [h:]m:ss.ss")."""
    if time_file is None:
        return None
    match = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", time_file.read_text())
    hours, minutes, seconds = match.groups()
    return round(int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds), 1)


def _rescore(config: SmartSearchConfig, records: list[dict[str, Any]]) -> list[Scored]:
    """Every feasible peer candidate, scored by Spica."""
    mapper, scored = Mapper(config), []
    for record in records:
        try:
            candidate = mapper.candidate(record["config"])
            evaluation = evaluate(config, candidate)
        except LookupError as exc:  # e.g. Spica's memory model finds the layout cannot hold the context
            print(f"candidate {record['candidate_id']}: not scored by Spica ({exc})")
            scored.append((record, None, None))
            continue
        if evaluation.status != "feasible":
            print(f"candidate {record['candidate_id']}: {evaluation.status} under Spica ({evaluation.reason})")
        scored.append((record, candidate, evaluation))
    return scored


def _spica_feasible(scored: list[Scored]) -> list[Scored]:
    return [item for item in scored if item[2] is not None and item[2].status == "feasible"]


def _front(config: SmartSearchConfig, scored: list[Scored]) -> dict[str, Any]:
    """Pareto: the non-dominated set of the re-scored candidates, and of the peer's own values."""
    names = config.goal.objectives
    points = [[float(evaluation.objectives[name]) for name in names] for _, _, evaluation in _spica_feasible(scored)]
    own = [[float(record["objectives"][name]) for name in names] for record, _, _ in scored]
    return {
        "front": score.pareto_front(points, lambda point: point),  # re-scored by Spica
        "own_front": score.pareto_front(own, lambda point: point),  # as the peer scored it
    }


def _best(config: SmartSearchConfig, scored: list[Scored]) -> dict[str, Any]:
    """One objective: the peer's best candidate as Spica scores it, and the one the peer ranks first."""
    target = str(config.goal.target)
    sign = 1.0 if config.goal.target.maximize else -1.0

    def entry(item: Scored | None) -> dict[str, Any] | None:
        if item is None:
            return None
        record, candidate, evaluation = item
        return {
            "candidate_id": record["candidate_id"],
            "label": Unrolled.of(candidate).label if candidate is not None else None,
            "spica": float(evaluation.objectives[target]) if evaluation is not None and evaluation.status == "feasible" else None,
            "peer": sign * float(record["score"]),  # the peer's score is signed higher-is-better, as Spica's
            "candidate": candidate,  # Spica's unrolled candidate: everything its replay is built from
        }

    feasible = _spica_feasible(scored)
    by_spica = score.rank(feasible, lambda item: score.signed_score(target, item[2].objectives), lambda item: item[1]["used_gpus"])
    by_peer = score.rank(scored, lambda item: float(item[0]["score"]), lambda item: item[0]["used_gpus"])
    return {
        "rescored": len(feasible),
        "best": entry(by_spica[0] if by_spica else None),  # re-scored by Spica
        "peer_pick": entry(by_peer[0] if by_peer else None),  # the peer's own first
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("peer_output", type=Path, help="the peer's --output-dir")
    parser.add_argument("--seed", type=int, required=True, help="the peer's optimizer.seed of that run")
    parser.add_argument("--scenario", choices=SCENARIOS, default="s3", help="the benchmark scenario the peer ran (default s3)")
    parser.add_argument("--time", type=Path, help="GNU time's -v report of the run")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSON the run is kept in (default benchmarks/results/peer.json)")
    args = parser.parse_args()
    peer_output, time_file, results = (path.resolve() if path else None for path in (args.peer_output, args.time, args.results))
    os.chdir(REPO)  # scenario paths (S2's trace) are relative to the project root
    records = json.loads((peer_output / "recommendation.json").read_text())["candidates"]
    config = load(args.scenario, max_eval_seconds=None)  # scored here, one after another: nothing is timed
    feasible = [record for record in records if record["status"] == "feasible"]
    scored = _rescore(config, feasible)
    run = {"seed": args.seed, "wall_seconds": _wall_seconds(time_file), "evaluated": len(records), "feasible": len(feasible)}
    run |= _front(config, scored) if config.goal.is_pareto else _best(config, scored)
    earlier = json.loads(results.read_text()) if results.exists() else {}
    runs = [kept for kept in earlier.get(args.scenario, {}).get("runs", []) if kept["seed"] != args.seed] + [run]
    earlier[args.scenario] = {"peer": PEER.format(args.scenario), "objectives": config.goal.objectives,
                              "runs": sorted(runs, key=lambda kept: kept["seed"])}
    atomic_write_text(results, json.dumps(earlier, indent=1) + "\n")
    if config.goal.is_pareto:
        outcome = f"{len(_spica_feasible(scored))} of {len(records)} re-scored feasible, front of {len(run['front'])}"
    else:
        outcome = f"{run['rescored']} of {len(records)} re-scored feasible"
        for name, chosen in (("best", run["best"]), ("the peer's pick", run["peer_pick"])):
            if chosen is not None:
                ours = "-" if chosen["spica"] is None else f"{chosen['spica']:.6g}"
                outcome += f"; {name} {chosen['candidate_id']} ({chosen['label']}): {config.goal.target} Spica {ours}, the peer's own {chosen['peer']:.6g}"
    print(f"seed {args.seed}: {outcome}; wrote {results}")


if __name__ == "__main__":
    main()
