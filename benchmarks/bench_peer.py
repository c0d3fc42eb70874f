"""Spica and the peer (NVIDIA's `aisimulate recommend`) side by side on S1, S2 and S3, in one run.

Each scenario is run by both, one after the other on this machine, and both tools' answers are
scored by Spica's evaluator.

    .venv/bin/python benchmarks/bench_peer.py [--scenarios s1 s2 s3] [--seeds 5] [--glm5-rounds 0]
                                              [--out DIR]

Per scenario: the peer once (benchmarks/peer/run.sh on benchmarks/peer/<scenario>.yaml, the
scenario's own seed; its candidates re-scored by benchmarks/peer/rescore.py into
results/peer.json), then the `spica` command `--seeds` times (bench_search.py's
measure_in_new_process, seeds from the scenario's own). Printed as one table and written to
benchmarks/results/peer_side_by_side.json, each scenario's row in place of its earlier one, with
when and at which commit it was measured (the rows of one run share both), so that running one
scenario again keeps the others:
- time: the peer's process wall against the median of Spica's, and their ratio;
- quality, one objective (S1, S2): each tool's best replayed REPLAYS times by Spica's evaluator,
  mean and range (a kv_router candidate replays differently each time: Dynamo's router takes no
  seed). Spica's best is the median seed's; the peer's is the best of every candidate it
  evaluated as Spica re-scores them (rescore.py's `best`; the one it ranked first itself is
  `peer_pick` in results/peer.json);
- quality, a Pareto front (S3): each Spica run's hypervolume as a share of this peer run's, on
  results/search.json's reference;
- `--glm5-rounds N` (N > 0): upstream's GLM-5 study (examples/glm5_b200_72.yaml) cut to its first N
  rounds of 8, Spica alone (the peer has no such config); its wall and median seconds per evaluation.

The peer runs in a venv of its own (PEER_AISIMULATE, default /work/peer/env/bin/aisimulate;
benchmarks/peer/rescore.py says how it was installed).
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

from bench_search import PEER, REPO, RESULTS, _earlier, load, measure_in_new_process, read_results, refuse_existing, summary
from spica.config import SmartSearchConfig
from spica.core.unrolled import Unrolled
from spica.evaluation.evaluate import evaluate

OUT = REPO / "benchmarks" / "results" / "peer_side_by_side.json"
REPLAYS = 5  # each best replayed this many times: a kv_router candidate's score varies run to run


def run_peer(scenario: str, seed: int, folder: Path) -> dict:
    """The peer's run, re-scored into results/peer.json; its entry there."""
    subprocess.run([REPO / "benchmarks" / "peer" / "run.sh", scenario, str(seed), folder], check=True, cwd=REPO)
    subprocess.run(
        [sys.executable, REPO / "benchmarks" / "peer" / "rescore.py", folder / "peer", "--scenario", scenario,
         "--seed", str(seed), "--time", folder / "time.txt"],
        check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return next(run for run in json.loads(PEER.read_text())[scenario]["runs"] if run["seed"] == seed)


def replayed(config: SmartSearchConfig, unrolled: dict) -> dict:
    """The candidate's objective over REPLAYS replays by Spica's evaluator: mean, least, most."""
    target = str(config.goal.target)
    values = [evaluate(config, unrolled).objectives.get(target) for _ in range(REPLAYS)]
    values = [value for value in values if value is not None]
    return {"label": Unrolled.of(unrolled).label, "mean": statistics.mean(values) if values else None,
            "least": min(values, default=None), "most": max(values, default=None), "replays": len(values)}


def side_by_side(scenario: str, seeds: int, scratch: Path) -> dict:
    base = load(scenario)
    seed = base.sweep.random_seed
    peer = run_peer(scenario, seed, scratch / f"{scenario}-peer")
    kept = [scratch / f"{scenario}-spica-{seed + offset}" for offset in range(seeds)]
    refuse_existing(kept)
    runs = [measure_in_new_process(scenario, folder, random_seed=seed + offset) for offset, folder in enumerate(kept)]
    entry = summary(base, runs, _earlier(RESULTS).get(scenario, {}).get("hypervolume_reference"), {"runs": [peer]})
    row = {"scenario": scenario, "peer_seed": seed, "peer_wall_seconds": peer["wall_seconds"], "spica": entry,
           "ratio": round(peer["wall_seconds"] / entry["median_process_wall_seconds"], 1)}
    if base.goal.is_pareto:
        row["peer_hypervolume"] = entry["peer_hypervolumes"][0]
        row["quality"] = f"hypervolume {entry['median_share_of_peer_hypervolume']:.3f} of the peer's " \
                         f"(seeds {min(entry['shares_of_peer_hypervolume']):.3f}-{max(entry['shares_of_peer_hypervolume']):.3f})"
        return row
    config = load(scenario, max_eval_seconds=None)  # the bests replayed one after another: nothing is timed
    found = sorted((index for index in range(seeds) if runs[index]["best_score"] is not None), key=lambda index: runs[index]["best_score"])
    row["spica_best"] = replayed(config, read_results(kept[found[len(found) // 2]])[2][0].unrolled) if found else None
    row["peer_best"] = replayed(config, peer["best"]["candidate"]) if peer.get("best") else None
    row["quality"] = f"{_described(row['spica_best'])} vs {_described(row['peer_best'])}"
    return row


def _described(best: dict | None) -> str:
    if best is None or best["mean"] is None:
        return "nothing feasible"
    return f"{best['label']} {best['mean']:.1f} ({best['least']:.1f}-{best['most']:.1f})"


def glm5(rounds: int, scratch: Path) -> dict:
    """Upstream's GLM-5 study cut to `rounds` rounds of 8: Spica alone."""
    folder = scratch / "glm5"
    refuse_existing([folder])
    record = measure_in_new_process("glm5", folder, max_rounds=rounds)
    seconds = [candidate.seconds for candidate in read_results(folder)[1].values() if candidate.seconds]
    return {"scenario": "glm5", "rounds": rounds, "spica": record, "evaluations": record["unique_replays"],
            "median_evaluation_seconds": statistics.median(seconds) if seconds else None,
            "max_evaluation_seconds": max(seconds, default=None)}


def table(rows: list[dict]) -> str:
    lines = ["| scenario | Spica process (median) | peer | ratio | quality (Spica's evaluator on both) | Spica idle workers (median, most) |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        spica = row["spica"]
        if row["scenario"] == "glm5":
            lines.append(f"| GLM-5, {row['rounds']} rounds of 8 | {spica['process_wall_seconds']:.1f} s, {row['evaluations']} evaluations, "
                         f"median {row['median_evaluation_seconds'] or 0:.1f} s, most {row['max_evaluation_seconds'] or 0:.1f} s each | - | - | "
                         f"{spica['failed']} failed | {spica['idle_worker_share'] * 100:.1f} % |")
            continue
        idle = [run["idle_worker_share"] for run in spica["runs"]]
        lines.append(f"| {row['scenario'].upper()} | {spica['median_process_wall_seconds']:.1f} s | {row['peer_wall_seconds']:.0f} s | "
                     f"{row['ratio']:.3g}x | {row['quality']} | {statistics.median(idle) * 100:.1f} %, {max(idle) * 100:.1f} % |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="*", default=["s1", "s2", "s3"], choices=["s1", "s2", "s3"])
    parser.add_argument("--seeds", type=int, default=5, help="Spica's runs per scenario")
    parser.add_argument("--glm5-rounds", type=int, default=0, help="also run upstream's GLM-5 study cut to N rounds (0: not)")
    parser.add_argument("--out", type=Path, help="keep both tools' outputs under DIR (else a temporary folder)")
    args = parser.parse_args()
    os.chdir(REPO)  # scenario paths (S2's trace) are relative to the project root
    measured = {"at": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()), "commit": _commit()}  # before results/ changes
    with tempfile.TemporaryDirectory() as temporary:
        scratch = (args.out or Path(temporary)).resolve()
        scratch.mkdir(parents=True, exist_ok=True)
        rows = []
        for scenario in args.scenarios:
            rows.append(side_by_side(scenario, args.seeds, scratch))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
        if args.glm5_rounds:
            rows.append(glm5(args.glm5_rounds, scratch))
    print(table(rows))
    written = {row["scenario"]: row for row in (json.loads(OUT.read_text()) if OUT.exists() else [])}
    written |= {row["scenario"]: row | {"measured": measured} for row in rows}
    OUT.write_text(json.dumps(sorted(written.values(), key=lambda row: ORDER.index(row["scenario"])), indent=1) + "\n")
    print(f"wrote {', '.join(row['scenario'] for row in rows)} to {OUT}")


ORDER = ("s1", "s2", "s3", "glm5")


def _commit() -> str:
    """The checkout's commit, marked "+changes" where its tracked files differ from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    return f"{head}+changes" if head and changed else head or "unknown"


if __name__ == "__main__":
    main()
