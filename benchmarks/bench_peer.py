"""Spica and its peers (NVIDIA's `aisimulate recommend`, Dynamo's `replay_optimize`) side by side on
S1, S2 and S3, in one run.

Each scenario is run by each tool, one after the other on this machine, and every tool's answer is
scored by Spica's evaluator.

    .venv/bin/python benchmarks/bench_peer.py [--scenarios s1 s2 s3] [--seeds 5] [--glm5-rounds 0]
                                              [--peers aisimulate replay_optimize] [--out DIR]

Per scenario: the peer once (benchmarks/peer/run.sh on benchmarks/peer/<scenario>.yaml, the
scenario's own seed; its candidates re-scored by benchmarks/peer/rescore.py into
results/peer.json), Dynamo's replay_optimize once where it can express the scenario (S1, S2:
benchmarks/peer/replay_optimize.py, one call per mode and backend, in a process of its own), then
the `spica` command `--seeds` times (bench_search.py's
measure_in_new_process, seeds from the scenario's own). Printed as one table and written to
benchmarks/results/peer_side_by_side.json, each scenario's row in place of its earlier one, with
when and at which commit it was measured (the rows of one run share both), so that running one
scenario again keeps the others:
- time: the peer's process wall against the median of Spica's, and their ratio;
- quality, one objective (S1, S2): each tool's best scored by Spica's evaluator, as REPLAYS draws
  where its router samples (kv_router: draws 0 .. REPLAYS-1, each the same on every run,
  spica/evaluation/clock.py), mean and range. Spica's best is every seed's (`spica_bests`; the
  median seed's is `spica_best`), and the row says on how many seeds it is at least each peer's;
  the peer's is the best of every candidate it evaluated as Spica re-scores them (rescore.py's
  `best`; the one it ranked first itself is `peer_pick` in results/peer.json);
- quality, a Pareto front (S3): each Spica run's hypervolume as a share of this peer run's, on
  results/search.json's reference;
- replay_optimize (row's `replay_optimize`): its process wall and the ratio to Spica's median, the
  states it replayed, and each call's best feasible state as Spica's candidate, scored as above;
  its answer is the better of them by Spica's evaluator;
- `aisimulate` not in `--peers` (or without its venv): its last run of the scenario's seed in
  results/peer.json stands in, its best re-scored by today's evaluator, its wall as measured then
  (`peer_measured`: that row's date and commit);
- `--glm5-rounds N` (N > 0): upstream's GLM-5 study (examples/glm5_b200_72.yaml) cut to its first N
  rounds of 8, Spica alone (the peer has no such config); its wall and median seconds per evaluation.

The peer runs in a venv of its own (PEER_AISIMULATE, default /work/peer/env/bin/aisimulate;
benchmarks/peer/rescore.py says how it was installed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_search import PEER, REPO, RESULTS, _earlier, load, measure_in_new_process, read_results, refuse_existing, summary
from peer import replay_optimize
from spica.config import SmartSearchConfig
from spica.core.unrolled import Unrolled
from spica.evaluation import clock
from spica.evaluation.evaluate import evaluate

OUT = REPO / "benchmarks" / "results" / "peer_side_by_side.json"
REPLAYS = 5  # draws of each best whose router samples (kv_router); one of any other
AISIMULATE = os.environ.get("PEER_AISIMULATE", "/work/peer/env/bin/aisimulate")  # run.sh's default

STATE_KEYS = ("tp", "workers", "prefill_tp", "decode_tp", "prefill_workers", "decode_workers", "router_mode",
              "overlap_score_credit", "prefill_load_scale", "total_gpus_used", "output_throughput_tok_s", "mean_ttft_ms", "mean_tpot_ms")
"""What a call's best state says in the row: its deployment and its own figures."""


def run_peer(scenario: str, seed: int, folder: Path) -> dict:
    """The peer's run, re-scored into results/peer.json; its entry there."""
    subprocess.run([REPO / "benchmarks" / "peer" / "run.sh", scenario, str(seed), folder], check=True, cwd=REPO)
    subprocess.run(
        [sys.executable, REPO / "benchmarks" / "peer" / "rescore.py", folder / "peer", "--scenario", scenario,
         "--seed", str(seed), "--time", folder / "time.txt"],
        check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return next(run for run in json.loads(PEER.read_text())[scenario]["runs"] if run["seed"] == seed)


def run_replay_optimize(scenario: str, folder: Path) -> dict:
    """Dynamo's replay_optimize on the scenario, in a process of its own: its wall, its calls."""
    folder.mkdir(parents=True)
    launched = time.time()
    with (folder / "log.txt").open("w") as log:
        subprocess.run([sys.executable, REPO / "benchmarks" / "peer" / "replay_optimize.py", scenario, folder / "calls.json"],
                       check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=log, stderr=subprocess.STDOUT)
    calls = json.loads((folder / "calls.json").read_text())
    return {"wall_seconds": round(time.time() - launched, 1), "evaluations": sum(call["evaluations"] for call in calls), "calls": calls}


def rescored_replay_optimize(config: SmartSearchConfig, run: dict) -> dict:
    """Each call's best as Spica scores it (REPLAYS replays); the run's answer is the best of them."""
    sign = 1.0 if config.goal.target.maximize else -1.0
    calls = []
    for call in run["calls"]:
        state = {key: value for key, value in (call["best"] or {}).items() if key in STATE_KEYS}
        best = replayed(config, replay_optimize.candidate(config, call)) if call["best"] else None
        calls.append({key: call[key] for key in ("mode", "backend", "wall_seconds", "evaluations")} | {"state": state, "spica": best})
    scored = [call["spica"] for call in calls if call["spica"] and call["spica"]["mean"] is not None]
    best = max(scored, key=lambda item: sign * item["mean"], default=None)
    return {"wall_seconds": run["wall_seconds"], "evaluations": run["evaluations"], "calls": calls, "best": best}


def replayed(config: SmartSearchConfig, unrolled: dict) -> dict:
    """The candidate's objective by Spica's evaluator over its draws (REPLAYS where its router
    samples, else one): mean, least, most."""
    target = str(config.goal.target)
    draws = REPLAYS if clock.varies(unrolled) else 1
    values = [evaluate(config, unrolled, draw).objectives.get(target) for draw in range(draws)]
    values = [value for value in values if value is not None]
    return {"label": Unrolled.of(unrolled).label, "mean": statistics.mean(values) if values else None,
            "least": min(values, default=None), "most": max(values, default=None), "replays": len(values)}


def side_by_side(scenario: str, seeds: int, scratch: Path, peers: list[str]) -> dict:
    base = load(scenario)
    seed = base.sweep.random_seed
    kept = [scratch / f"{scenario}-spica-{seed + offset}" for offset in range(seeds)]
    refuse_existing(kept + [scratch / f"{scenario}-replay_optimize"])
    row: dict = {"scenario": scenario}
    if "aisimulate" in peers:
        peer = run_peer(scenario, seed, scratch / f"{scenario}-peer")
    else:  # its last run of this seed, re-scored below by today's evaluator; its wall as measured then
        peer = next((run for run in _earlier(PEER).get(scenario, {}).get("runs", []) if run["seed"] == seed), None)
        earlier = _earlier_rows().get(scenario, {})
        row["peer_measured"] = earlier.get("peer_measured") or earlier.get("measured") if peer else None
    dynamo = None
    if "replay_optimize" in peers and scenario in replay_optimize.SCENARIOS:
        dynamo = run_replay_optimize(scenario, scratch / f"{scenario}-replay_optimize")
    runs = [measure_in_new_process(scenario, folder, random_seed=seed + offset) for offset, folder in enumerate(kept)]
    entry = summary(base, runs, _earlier(RESULTS).get(scenario, {}).get("hypervolume_reference"), {"runs": [peer]} if peer else None)
    row["spica"] = entry
    config = load(scenario, max_eval_seconds=None)  # the bests replayed one after another: nothing is timed
    if not base.goal.is_pareto:
        found = sorted((index for index in range(seeds) if runs[index]["best_score"] is not None), key=lambda index: runs[index]["best_score"])
        row["spica_bests"] = {str(seed + index): replayed(config, read_results(kept[index])[2][0].unrolled) for index in found}
        row["spica_best"] = row["spica_bests"][str(seed + found[len(found) // 2])] if found else None
    if dynamo is not None:
        row["replay_optimize"] = rescored_replay_optimize(config, dynamo)
        row["replay_optimize"]["ratio"] = round(dynamo["wall_seconds"] / entry["median_process_wall_seconds"], 1)
        row["replay_optimize"]["seeds_at_least"] = _seeds_at_least(base, row.get("spica_bests"), row["replay_optimize"]["best"])
    if peer is None:
        return row
    row |= {"peer_seed": seed, "peer_wall_seconds": peer["wall_seconds"],
            "ratio": round(peer["wall_seconds"] / entry["median_process_wall_seconds"], 1)}
    if base.goal.is_pareto:
        row["peer_hypervolume"] = entry["peer_hypervolumes"][0]
        row["quality"] = f"hypervolume {entry['median_share_of_peer_hypervolume']:.3f} of the peer's " \
                         f"(seeds {min(entry['shares_of_peer_hypervolume']):.3f}-{max(entry['shares_of_peer_hypervolume']):.3f})"
        return row
    row["peer_best"] = replayed(config, peer["best"]["candidate"]) if peer.get("best") else None
    row["seeds_at_least"] = _seeds_at_least(base, row.get("spica_bests"), row["peer_best"])
    row["quality"] = f"{_described(row['spica_best'])} vs {_described(row['peer_best'])}; {row['seeds_at_least']}"
    return row


def _seeds_at_least(base: SmartSearchConfig, bests: dict | None, other: dict | None) -> str:
    """On how many seeds Spica's best (mean of its draws) is at least `other`'s, and the worst seed's."""
    if not bests or other is None or other["mean"] is None:
        return "-"
    sign = 1.0 if base.goal.target.maximize else -1.0
    means = {seed: best["mean"] for seed, best in bests.items() if best["mean"] is not None}
    worst = min(means, key=lambda seed: sign * means[seed])
    held = sum(sign * value >= sign * other["mean"] for value in means.values())
    return f"at least it on {held} of {len(bests)} seeds (worst: seed {worst}, {means[worst]:.1f})"


def _earlier_rows() -> dict:
    return {row["scenario"]: row for row in (json.loads(OUT.read_text()) if OUT.exists() else [])}


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
    """The aisimulate table, then replay_optimize's where it ran."""
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
        peer = (f"{row['peer_wall_seconds']:.0f} s{' (earlier)' if row.get('peer_measured') else ''} | {row['ratio']:.3g}x | {row['quality']}"
                if "peer_wall_seconds" in row else f"- | - | {_described(row.get('spica_best'))} vs -")
        lines.append(f"| {row['scenario'].upper()} | {spica['median_process_wall_seconds']:.1f} s | {peer} | "
                     f"{statistics.median(idle) * 100:.1f} %, {max(idle) * 100:.1f} % |")
    dynamo = [row for row in rows if "replay_optimize" in row]
    if dynamo:
        lines += ["", "| scenario | Spica process (median) | replay_optimize | ratio | its states replayed | quality (Spica's evaluator on both) |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {row['scenario'].upper()} | {row['spica']['median_process_wall_seconds']:.1f} s | {row['replay_optimize']['wall_seconds']:.0f} s | "
                  f"{row['replay_optimize']['ratio']:.3g}x | {row['replay_optimize']['evaluations']} | "
                  f"{_described(row.get('spica_best'))} vs {_described(row['replay_optimize']['best'])}; "
                  f"{row['replay_optimize'].get('seeds_at_least', '-')} |" for row in dynamo]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="*", default=["s1", "s2", "s3"], choices=["s1", "s2", "s3"])
    parser.add_argument("--seeds", type=int, default=5, help="Spica's runs per scenario")
    parser.add_argument("--glm5-rounds", type=int, default=0, help="also run upstream's GLM-5 study cut to N rounds (0: not)")
    parser.add_argument("--peers", nargs="*", default=list(PEERS), choices=PEERS,
                        help="the peers to run (default both; replay_optimize runs on S1 and S2 only)")
    parser.add_argument("--out", type=Path, help="keep both tools' outputs under DIR (else a temporary folder)")
    args = parser.parse_args()
    if "aisimulate" in args.peers and not shutil.which(AISIMULATE):
        print(f"aisimulate: {AISIMULATE} is not an executable (PEER_AISIMULATE); its last recorded runs stand in")
        args.peers.remove("aisimulate")
    os.chdir(REPO)  # scenario paths (S2's trace) are relative to the project root
    measured = {"at": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()), "commit": _commit()}  # before results/ changes
    with tempfile.TemporaryDirectory() as temporary:
        scratch = (args.out or Path(temporary)).resolve()
        scratch.mkdir(parents=True, exist_ok=True)
        rows = []
        for scenario in args.scenarios:
            rows.append(side_by_side(scenario, args.seeds, scratch, args.peers))
            print(table(rows[-1:]), flush=True)
        if args.glm5_rounds:
            rows.append(glm5(args.glm5_rounds, scratch))
    print(table(rows))
    written = _earlier_rows()
    written |= {row["scenario"]: row | {"measured": measured} for row in rows}
    OUT.write_text(json.dumps(sorted(written.values(), key=lambda row: ORDER.index(row["scenario"])), indent=1) + "\n")
    print(f"wrote {', '.join(row['scenario'] for row in rows)} to {OUT}")


ORDER = ("s1", "s2", "s3", "glm5")
PEERS = ("aisimulate", "replay_optimize")


def _commit() -> str:
    """The checkout's commit, marked "+changes" where its tracked files differ from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    return f"{head}+changes" if head and changed else head or "unknown"


if __name__ == "__main__":
    main()
