"""Re-score a run of the peer (NVIDIA's `aisimulate recommend`) on S3 with Spica's own evaluator,
so that its front and Spica's compare on one scale; the front goes to benchmarks/results/peer.json,
where benchmarks/bench_search.py reads it to report Spica's hypervolume as a share of the peer's.

    PYTHONPATH=. .venv/bin/python benchmarks/peer/rescore.py OUT --seed N [--time OUT/time.txt]

OUT is the peer's --output-dir of a run of benchmarks/peer/s3.yaml (its recommendation.json
lists every candidate it evaluated). Run the peer in a venv of its own: aisimulate
0.13.0.dev202610130000000070 with its declared dependencies, ai-dynamo and ai-dynamo-runtime 1.6.1
and msgspec with --no-deps; `time` (GNU `/usr/bin/time -v -o OUT/time.txt`) gives its wall.

Each feasible peer candidate becomes Spica's candidate through Spica's own `unroll` (same mode,
backend, per-role shape and replicas, engine knobs and KV-load ratio; Spica resolves KV capacity,
concurrency and request count as for its own trials) and is scored by `evaluate`. The front is the
non-dominated set of all of them, as Spica's front is of its own replays.

Where the peer's search differs from Spica's (S3, checked on seed 1):
- shapes: the peer's default preset keeps pure layouts (TP, TEP, DEP, MoE-TP under TP or DP
  attention); Spica also searches mixed splits (e.g. tp+dp attention over tp+ep experts);
- 64 is the peer's suggestion budget (32 per mode, batches of 2), Spica's unique replays;
- optimizer: Vizier 0.1.21's GP-UCB-PE, against Spica's designer on Vizier 0.1.24;
- scoring: on SGLang the peer's memory model holds ~4 % more KV tokens than AI Configurator's
  (so 1-9 % more requests at one ratio) and its SGLang mocker ignores max_num_batched_tokens,
  and it times with AIS directly where Spica uses its cached table. Re-scored, vLLM candidates
  agree within 1.5 %, SGLang ones within 5.5 %.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from spica.config import SmartSearchConfig
from spica.evaluation import score
from spica.evaluation.evaluate import evaluate
from spica.search.branches import branches_for
from spica.search.unroll import unroll
from spica.space.branches import BackendFit, ParallelConfig, RolePool, worker_capacity
from spica.space.cache import atomic_write_text
from spica.space.capacity import MemorySettings
from spica.space.shapes import WorkerShape
from spica.unrolled import ROLES, shape_prefix

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO.parent / "shared" / "scenarios" / "s3_moe_pareto.yaml"
RESULTS = REPO / "benchmarks" / "results" / "peer.json"
OBJECTIVES = ("throughput_per_gpu", "throughput_per_user")
PEER = "aisimulate recommend (aisimulate 0.13.0.dev202610130000000070, ai-dynamo 1.6.1), benchmarks/peer/s3.yaml"


def _pools(sample: dict[str, Any]) -> tuple[RolePool, ...]:
    mode = sample["deployment_mode"]
    pools = []
    for role in ROLES[mode]:
        prefix = shape_prefix(role)
        shape = WorkerShape(
            tp=int(sample[f"{prefix}tp"]), pp=int(sample.get(f"{prefix}pp") or 1), attention_dp=int(sample[f"{prefix}attention_dp"]),
            moe_tp=int(sample[f"{prefix}moe_tp"]), moe_ep=int(sample[f"{prefix}moe_ep"]),
        )
        pools.append(RolePool(role, shape, int(sample[f"{prefix}replicas"])))
    return tuple(pools)


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
        knobs: dict[str, Any] = {"router_mode": "round_robin", "planner_scaling_policy": "disabled"}
        for role in ROLES[mode]:
            for knob in ("max_num_batched_tokens", "max_num_seqs"):
                knobs[f"{role}_{knob}"] = int(sample[f"{role}_{knob}"])
        return unroll(
            self.config, self.branches[mode], self._parallel(sample), sample["backend"], knobs, {},
            kv_load_ratio=float(sample["kv_load_ratio"]),
        )


def _wall_seconds(time_file: Path | None) -> float | None:
    """The wall of GNU time's `-v` report ("Elapsed (wall clock) time ...: [h:]m:ss.ss")."""
    if time_file is None:
        return None
    match = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", time_file.read_text())
    hours, minutes, seconds = match.groups()
    return round(int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("peer_output", type=Path, help="the peer's --output-dir")
    parser.add_argument("--seed", type=int, required=True, help="the peer's optimizer.seed of that run")
    parser.add_argument("--time", type=Path, help="GNU time's -v report of the run")
    args = parser.parse_args()
    records = json.loads((args.peer_output / "recommendation.json").read_text())["candidates"]
    data = SmartSearchConfig.from_yaml(SCENARIO).to_data()
    data["sweep"]["max_eval_seconds"] = None  # scored here, one after another: nothing is timed
    config = SmartSearchConfig.from_mapping(data)
    mapper = Mapper(config)
    points, own = [], []
    for record in records:
        if record["status"] != "feasible":
            continue
        own.append([float(record["objectives"][name]) for name in OBJECTIVES])
        try:
            evaluation = evaluate(config, mapper.candidate(record["config"]))
        except LookupError as exc:  # Spica's memory model finds the layout cannot hold the context
            print(f"candidate {record['candidate_id']}: not scored by Spica ({exc})")
            continue
        if evaluation.status == "feasible":
            points.append([float(evaluation.objectives[name]) for name in OBJECTIVES])
    run = {
        "seed": args.seed,
        "wall_seconds": _wall_seconds(args.time),
        "evaluated": len(records),
        "feasible": len(own),
        "front": score.pareto_front(points, lambda point: point),  # re-scored by Spica
        "own_front": score.pareto_front(own, lambda point: point),  # as the peer scored it
    }
    earlier = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    runs = [kept for kept in earlier.get("s3", {}).get("runs", []) if kept["seed"] != args.seed] + [run]
    earlier["s3"] = {"peer": PEER, "objectives": list(OBJECTIVES), "runs": sorted(runs, key=lambda kept: kept["seed"])}
    atomic_write_text(RESULTS, json.dumps(earlier, indent=1) + "\n")
    print(f"seed {args.seed}: {len(points)} of {len(records)} re-scored feasible, front of {len(run['front'])}; wrote {RESULTS}")


if __name__ == "__main__":
    main()
