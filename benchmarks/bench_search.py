"""Scenario benchmark: the three shared scenarios end to end, and S1 against its exhaustive grid.

Prints per scenario (medians over seeds): process wall and start-up (launch to the first replay
handed out), search wall (summary.json's: to the last replay back, before its folder is written),
replay seconds, idle worker seconds (workers without a replay while
evaluations remained, split by what the search was doing: spica/search/clocks.py), idle cores
(the cores the workers use, with neither a replay nor an ask on them: GLM-5's 8 workers share
2, and a study's ask runs on a core of its own), optimizer
seconds exposed and in all, unique replays, cache hits, best score (or the front's
hypervolume), and — where the exhaustive grid is small enough to run — the fraction of the grid
optimum reached and the fraction of the grid's replays spent (median over seeds).
Every search is the `spica` command itself, as a user runs it (a config file or the app's
overrides, with the seed as an override), timed from its launch and read back from its results
folder, so per-process costs (imports, JAX traces, worker start-up, its exit) count. Merges into
benchmarks/results/search.json. To compare two checkouts that share one .venv, run each with PYTHONPATH=<its checkout>: bin/setup installs
Spica editable, so without it every checkout imports the spica of the one the venv was made for.

    .venv/bin/python benchmarks/bench_search.py [--seeds 5] [--scenarios s1 s2 s3 min_gpus default workload=chat ...]
                                                [--grid s1 min_gpus] [--keep DIR]

The `spica` command's own searches run too (the venv's `spica`, as `bin/spica` runs it once
installed): `default` is `bin/spica` alone (the embedded default
search, whose workload group is synthetic_concurrency), and `workload=<group>` is
`bin/spica workload=<group>`, one per other conf/workload group (the trace group on the 15-minute
Mooncake trace); their optimizer share is printed as the median and
the largest of the seeds: every single run of them should hide its optimizer. workload=trace is
not in the default list: one of its first candidates (disagg SGLang P 1×TP2 + D 2×TP1) replays
until the 600 s time cap, so a seed takes over 10 minutes here (`--scenarios workload=trace --seeds 1`).

Where benchmarks/results/peer.json holds the peer's runs of a Pareto scenario (S3: `aisimulate
recommend` on benchmarks/peer/s3.yaml, re-scored by benchmarks/peer/rescore.py), each run's front
hypervolume is also printed as a share of the peer's mean, on the same reference (its S1 and S2
runs are bench_peer.py's).

min_gpus is Spica's own capacity-planning scenario (MIN_GPUS below): the GPUs of its answer are
printed next to those of the exhaustive grid's. glm5 is upstream Spica's GLM-5-FP8 / 72 B200 study
(examples/glm5_b200_72.yaml, unchanged) cut to its first GLM5_ROUNDS rounds of 8; not in the
default list (≈ 30 min here): `--scenarios glm5 --seeds 1`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from spica.cli.exits import EXIT_NOTHING_FEASIBLE
from spica.cli.hydra_app import compose
from spica.config import SmartSearchConfig
from spica.core.candidate import Candidate
from spica.evaluation import score
from spica.evaluation.score import hypervolume_2d
from spica.results.table import idle_core_share, idle_shares
from spica.search.branches import branches_for, searched_branch
from spica.search.dimensions import branch_knobs
from spica.search.run import KV_LOAD_LEVELS, _grid_size

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SPICA_SHARED_DIR", REPO.parent / "shared"))
SCENARIOS = {
    "s1": "s1_dense_budget8.yaml",
    "s2": "s2_trace_goodput.yaml",
    "s3": "s3_moe_pareto.yaml",
}
EXAMPLES = {"glm5": REPO / "examples" / "glm5_b200_72.yaml"}
TRACE = SHARED / "data" / "mooncake" / "conversation_trace_15min.jsonl"
APP = {  # the `spica` command's searches: its overrides on the command line (default: synthetic_concurrency)
    "default": [],
    **{f"workload={group.stem}": [f"workload={group.stem}"] for group in sorted((REPO / "conf" / "workload").glob("*.yaml"))
       if group.stem != "synthetic_concurrency"},
}
APP["workload=trace"].append(f"workload.trace_path={TRACE}")
RESULTS = REPO / "benchmarks" / "results" / "search.json"
PEER = REPO / "benchmarks" / "results" / "peer.json"  # the peer's fronts, re-scored by Spica (benchmarks/peer/rescore.py)
GLM5_ROUNDS = 20  # 160 of the study's 640 samples (80 rounds of 8)
GRID_REPLAY_LIMIT = 6000
MIN_GPUS = {  # capacity planning on the 15-minute Mooncake trace: fewest GPUs within ttft 2 s / itl 50 ms
    "search_space": {
        "model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm", "gpu_budget": 12, "deployment_mode": ["agg"],
        "backend": ["vllm"], "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"],
        "agg_max_num_seqs": [256], "agg_max_num_batched_tokens": [16384],
    },
    "workload": {"trace_path": str(TRACE)},
    "goal": {"target": "min_gpus", "sla": {"ttft_ms": 2000, "itl_ms": 50}},
    "sweep": {"max_rounds": 4, "parallel_evals": 2, "max_eval_seconds": None, "random_seed": 1},
}


def load(name: str, **sweep: object) -> SmartSearchConfig:
    data = _scenario(name).to_data()
    data["sweep"].update({"max_rounds": GLM5_ROUNDS} if name == "glm5" else {}, **sweep)
    return SmartSearchConfig.from_mapping(data)


def _scenario(name: str) -> SmartSearchConfig:
    if name == "min_gpus":
        return SmartSearchConfig.from_mapping(MIN_GPUS)
    if name in APP:
        return compose(APP[name])[0]
    return SmartSearchConfig.from_yaml(EXAMPLES.get(name) or SHARED / "scenarios" / SCENARIOS[name])


def command(name: str, folder: Path, scratch: Path, **sweep: object) -> list[str]:
    """The `spica` command a user would run for the scenario, its results into `folder`: the app's
    own searches as their overrides, the others as a config file (min_gpus written to `scratch`),
    with `sweep` as overrides."""
    spica = [str(Path(sys.executable).with_name("spica"))]
    sweep = ({"max_rounds": GLM5_ROUNDS} if name == "glm5" else {}) | sweep
    overrides = [f"sweep.{key}={value if isinstance(value, str) else json.dumps(value)}" for key, value in sweep.items()]
    overrides.append(f"results_dir={folder}")
    if name in APP:
        return spica + APP[name] + overrides
    if name == "min_gpus":
        config = scratch / "min_gpus.yaml"
        config.write_text(json.dumps(MIN_GPUS))  # JSON is YAML
    else:
        config = EXAMPLES.get(name) or SHARED / "scenarios" / SCENARIOS[name]
    return spica + ["--config-file", str(config)] + overrides


def measure_in_new_process(name: str, keep: Path | None = None, **sweep: object) -> dict:
    """One search by the `spica` command itself, in a fresh process (`command`), timed from its
    launch: its record (`record_of`) with the process's wall and its start-up, from launching the
    command to the first replay handed out. `keep`: the folder to leave the search's results in
    (else a temporary one)."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = keep or Path(scratch) / "results"
        launched = time.time()
        ran = subprocess.run(command(name, folder, Path(scratch), **sweep), capture_output=True, text=True, cwd=REPO)
        ended = time.time()
        if ran.returncode not in (0, EXIT_NOTHING_FEASIBLE):  # nothing feasible is a result too
            raise RuntimeError(f"{name}: spica exited {ran.returncode}: {ran.stderr[-2000:]}")
        record = record_of(load(name, **sweep), folder)
    record["process_wall_seconds"] = round(ended - launched, 2)
    first = record.pop("first_evaluation_at")
    record["startup_seconds"] = round(first - launched, 2) if first else None
    return record


def read_results(folder: Path) -> tuple[dict, dict[str, Candidate], list[Candidate]]:
    """A results folder's summary.json, its ledger by key, and its selected candidates, best first."""
    summary_file = json.loads((folder / "summary.json").read_text())
    ledger = {entry["key"]: Candidate.from_dict(entry) for entry in json.loads((folder / "ledger.json").read_text())}
    return summary_file, ledger, [ledger[key] for key in summary_file["selected"]]


def refuse_existing(folders: list[Path | None]) -> None:
    """Ends the benchmark where a search's folder already holds one: it would resume, not measure."""
    for folder in folders:
        if folder is not None and folder.exists():
            sys.exit(f"{Path(sys.argv[0]).name}: {folder} exists; a search there would reuse its results, not measure them")


def record_of(config: SmartSearchConfig, folder: Path) -> dict:
    """A finished search's figures, read from its results folder (`read_results`)."""
    summary_file, ledger, results = read_results(folder)
    timings, tallies = summary_file["timings"], summary_file["tallies"]
    objectives = config.goal.objectives
    workers = timings["workers"]
    window = (timings["evaluations_done_at"] - timings["first_evaluation_at"]) if timings["first_evaluation_at"] else 0.0
    idle = sum(timings["idle_worker_seconds"].values())
    record = {
        "wall_seconds": round(timings["wall_seconds"], 2),
        "first_evaluation_at": timings["first_evaluation_at"],
        "replay_seconds": round(sum(c.provenance.get("replay_seconds", 0.0) for c in ledger.values()), 2),
        "idle_worker_seconds": round(idle, 2),  # workers without a replay while evaluations remained
        "idle_worker_share": round(idle / (workers * window), 4) if window else 0.0,
        "idle_worker_share_by_phase": {phase: round(share, 4) for phase, share in (idle_shares(timings) or dict.fromkeys(timings["idle_worker_seconds"], 0.0)).items()},
        "cores": min(workers, timings["cores"]),
        "idle_core_share": round(idle_core_share(timings) or 0.0, 4),  # of those cores, in the same window
        "optimizer_seconds": round(timings["optimizer_seconds"], 2),
        "optimizer_exposed_seconds": round(timings["optimizer_exposed_seconds"], 2),
        "optimizer_share": round(timings["optimizer_exposed_seconds"] / timings["wall_seconds"], 4),
        "optimizer_total_share": round(timings["optimizer_seconds"] / timings["wall_seconds"], 4),
        "unique_replays": len(ledger),
        "failed": tallies["failed"],
        "cache_hits": tallies["cache_hits"],
        "tallies": tallies,
    }
    if config.goal.target == "pareto":
        points = [[score.signed_score(name, c.objectives) for name in objectives] for c in results]
        record["front_size"] = len(points)
        record["front"] = points
    else:
        record["best_score"] = results[0].score if results else None
        record["best"] = results[0].label() if results else None
        record["best_gpus"] = results[0].used_gpus if results else None
    return record


def grid_size(config: SmartSearchConfig) -> int:
    """The studies' grid: the configs each branch searches (a scale-free search keeps one per
    replica ratio: docs/search.md step 4) with their knobs, at each KV-load level (five where the
    ratio is a range), before those that replay alike are merged (spica/search/run.py `_grid_points`)."""
    levels = KV_LOAD_LEVELS if isinstance(config.workload.kv_load_ratio, list) else 1
    searched = (searched_branch(config, branch) for branch in branches_for(config))
    return levels * sum(_grid_size(branch, branch_knobs(config, branch.mode, branch.quant_knobs())) for branch in searched)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    quick = [*SCENARIOS, "min_gpus", *(name for name in APP if name != "workload=trace")]
    parser.add_argument("--scenarios", nargs="*", default=quick, choices=[*SCENARIOS, "min_gpus", *EXAMPLES, *APP])
    parser.add_argument("--grid", nargs="*", default=["s1"], help="scenarios whose exhaustive grid to run")
    parser.add_argument("--keep", type=Path, help="keep each search's results folder under DIR (<scenario>-<seed>)")
    args = parser.parse_args()
    os.chdir(REPO)  # scenario paths are relative to the project root
    for name in args.scenarios:
        base = load(name)
        seeds = [base.sweep.random_seed + offset for offset in range(args.seeds)]
        kept = [args.keep.resolve() / f"{name.replace('=', '-')}-{seed}" if args.keep else None for seed in seeds]  # no '=' in a Hydra value
        refuse_existing(kept)
        runs = [measure_in_new_process(name, folder, random_seed=seed) for folder, seed in zip(kept, seeds)]
        entry = summary(base, runs, _earlier(RESULTS).get(name, {}).get("hypervolume_reference"), _earlier(PEER).get(name))
        if name in args.grid and entry["grid_candidates"] <= GRID_REPLAY_LIMIT:
            grid = measure_in_new_process(name, algorithm="grid", max_rounds=10_000)
            entry["grid"] = grid
            entry["grid_best_gpus"] = grid["best_gpus"]
            entry["best_gpus"] = [run["best_gpus"] for run in runs]
            entry["fraction_of_grid_optimum"] = statistics.median(  # a minimised score is negative: the ratio flips
                (grid["best_score"] / run["best_score"]) if grid["best_score"] < 0 else (run["best_score"] / grid["best_score"])
                for run in runs
            )
            entry["fraction_of_grid_replays"] = statistics.median(run["unique_replays"] / grid["unique_replays"] for run in runs)
        print(_line(name, entry), flush=True)
        _merge_into(RESULTS, name, entry)


def summary(base: SmartSearchConfig, runs: list[dict], reference: list[float] | None = None, peer: dict | None = None) -> dict:
    """A scenario's entry in results/search.json: its runs, and medians over them. A Pareto front's
    hypervolume is taken against `reference` (the one results/search.json holds, so that
    the figures of two runs of the benchmark compare), else against 0.9 × the smallest value
    of the runs' fronts on each axis; with the `peer`'s runs (results/peer.json), each run's
    hypervolume is also a share of the mean of the peer's on the same reference."""
    entry: dict = {"runs": runs, "grid_candidates": grid_size(base), "target": str(base.goal.target)}
    for key in ("process_wall_seconds", "startup_seconds", "wall_seconds", "replay_seconds", "idle_worker_seconds",
                "idle_worker_share", "idle_core_share", "optimizer_seconds", "optimizer_exposed_seconds", "optimizer_share",
                "optimizer_total_share", "unique_replays", "failed", "cache_hits"):
        entry[f"median_{key}"] = statistics.median(run[key] for run in runs)
    entry["max_optimizer_share"] = max(run["optimizer_share"] for run in runs)
    entry["median_idle_worker_share_by_phase"] = {
        phase: statistics.median(run["idle_worker_share_by_phase"][phase] for run in runs) for phase in runs[0]["idle_worker_share_by_phase"]
    }
    if base.goal.target == "pareto":
        fronts = [run["front"] for run in runs]
        every = [point for front in fronts for point in front]
        if reference is None:
            reference = [min(p[0] for p in every) * 0.9, min(p[1] for p in every) * 0.9] if every else [0.0, 0.0]
        entry["hypervolume_reference"] = reference
        entry["median_hypervolume"] = statistics.median(hypervolume_2d(front, reference) for front in fronts)
        if peer:
            entry["peer_hypervolumes"] = [hypervolume_2d(run["front"], reference) for run in peer["runs"]]
            theirs = statistics.mean(entry["peer_hypervolumes"])
            entry["shares_of_peer_hypervolume"] = [round(hypervolume_2d(front, reference) / theirs, 4) for front in fronts]
            entry["median_share_of_peer_hypervolume"] = statistics.median(entry["shares_of_peer_hypervolume"])
    else:
        entry["median_best_score"] = statistics.median(run["best_score"] for run in runs if run["best_score"] is not None)
    return entry


def _earlier(out: Path) -> dict:
    return json.loads(out.read_text()) if out.exists() else {}


def _merge_into(out: Path, name: str, entry: dict) -> None:
    """Each scenario is written as soon as it is measured (a long one stopped leaves the others),
    beside those of earlier runs."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(_earlier(out) | {name: entry}, indent=1))
    print(f"wrote {name} to {out}", flush=True)


def _line(name: str, entry: dict) -> str:
    parts = [
        f"{name}: process {entry['median_process_wall_seconds']:.1f}s (start-up {entry['median_startup_seconds']:.1f}s, "
        f"search {entry['median_wall_seconds']:.1f}s)",
        f"replays {entry['median_replay_seconds']:.1f}s",
        f"idle workers {entry['median_idle_worker_seconds']:.1f}s ({entry['median_idle_worker_share'] * 100:.1f}%: "
        + ", ".join(f"{phase} {share * 100:.1f}%" for phase, share in entry["median_idle_worker_share_by_phase"].items()) + ")",
        f"idle cores {entry['median_idle_core_share'] * 100:.1f}% (of {entry['runs'][0]['cores']})",
        f"optimizer {entry['median_optimizer_share'] * 100:.1f}% exposed (at most {entry['max_optimizer_share'] * 100:.1f}%) "
        f"({entry['median_optimizer_total_share'] * 100:.1f}% in all)",
        f"unique replays {entry['median_unique_replays']:g} ({entry['median_failed']:g} failed)",  # medians: x.5 over an even count
        f"cache hits {entry['median_cache_hits']:g}",
    ]
    if "median_best_score" in entry:
        parts.append(f"best {entry['median_best_score']:.1f}")
    if "median_hypervolume" in entry:
        parts.append(f"hypervolume {entry['median_hypervolume']:.4g}")
    if "median_share_of_peer_hypervolume" in entry:
        parts.append(f"{entry['median_share_of_peer_hypervolume']:.3f} of the peer's ({len(entry['peer_hypervolumes'])} runs, re-scored)")
    if "grid_best_gpus" in entry and entry["grid_best_gpus"] is not None and entry["target"] == "min_gpus":
        parts.append(f"answer {entry['best_gpus']} GPUs vs the grid's {entry['grid_best_gpus']}")
    if "fraction_of_grid_optimum" in entry:
        parts.append(
            f"{entry['fraction_of_grid_optimum'] * 100:.1f}% of grid optimum with "
            f"{entry['fraction_of_grid_replays'] * 100:.1f}% of its {entry['grid']['unique_replays']} replays"
        )
    else:
        parts.append(f"grid of {entry['grid_candidates']:,} candidates (before merging those that replay alike) not run")
    return ", ".join(parts)


if __name__ == "__main__":
    main()
