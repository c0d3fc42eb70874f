#!/usr/bin/env bash
# Run NVIDIA's `aisimulate recommend` (the peer) on one of Spica's benchmark scenarios, written for it
# in benchmarks/peer/SCENARIO.yaml, under GNU time.
# usage: benchmarks/peer/run.sh SCENARIO SEED OUTDIR [AISIMULATE_ARGS...]
#   SCENARIO   s1, s2 or s3
#   SEED       the peer's optimizer.seed
#   OUTDIR     gets peer/ (the peer's own --output-dir: recommendation.json lists every evaluated
#              candidate, recommendation.csv, recommendations/), stdout.json (its --format json
#              report), stderr.log, time.txt (/usr/bin/time -v: wall clock, peak RSS of the peer's
#              main process), peak_tree_rss_kb.txt (peak summed RSS of the whole process tree,
#              sampled every second: the peer spawns workers), cmd.txt and rc
#   further arguments go to `aisimulate recommend`, e.g. --set optimizer.max_trials=2
# PEER_AISIMULATE: the peer's binary, in a venv of its own (default /work/peer/env/bin/aisimulate).
# The peer runs from the repo root: S2's trace path is relative to it, as in the scenario.
# Then: PYTHONPATH=. .venv/bin/python benchmarks/peer/rescore.py OUTDIR/peer --scenario SCENARIO \
#   --seed SEED --time OUTDIR/time.txt
set -u
if [ $# -lt 3 ]; then echo "usage: $0 SCENARIO SEED OUTDIR [AISIMULATE_ARGS...]" >&2; exit 2; fi
SCENARIO=$1
SEED=$2
OUT=$(realpath -m "$3")
shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CONFIG="$HERE/$SCENARIO.yaml"
PEER=${PEER_AISIMULATE:-/work/peer/env/bin/aisimulate}
if [ ! -f "$CONFIG" ]; then echo "$0: no peer config for scenario '$SCENARIO' ($CONFIG)" >&2; exit 2; fi
# a path (relative to here) or a name on PATH, made absolute: the peer runs from the repo root
if ! FOUND=$(command -v "$PEER") || [ ! -x "$FOUND" ]; then echo "$0: PEER_AISIMULATE: $PEER is not an executable" >&2; exit 2; fi
PEER=$(realpath "$FOUND")
if [ ! -x /usr/bin/time ]; then echo "$0: needs GNU time at /usr/bin/time" >&2; exit 2; fi
mkdir -p "$OUT"
OUTPUTS="$OUT/peer"   # the peer refuses a non-empty output dir; keep our logs beside it
CMD=("$PEER" recommend -c "$CONFIG" --stack dynamo --set "optimizer.seed=$SEED"
     --output-dir "$OUTPUTS" --overwrite --format json "$@")
cd "$REPO" || exit 2
# Dynamo's Rust logs at info by default, a few lines per request under kv_router (MBs per replay, and
# time); Spica sets DYN_LOG=error for its replays (spica/__init__.py), so the peer gets the same
export DYN_LOG=${DYN_LOG:-error}
printf '%q ' "${CMD[@]}" > "$OUT/cmd.txt"; echo >> "$OUT/cmd.txt"

tree() {  # $1 = root pid -> it and all its descendants
  local pids=$1 frontier=$1 children
  while [ -n "$frontier" ]; do
    children=$(for p in $frontier; do pgrep -P "$p"; done 2>/dev/null | tr '\n' ' ')
    pids="$pids $children"; frontier=$children
  done
  echo $pids
}
tree_rss() {  # $1 = root pid -> summed RSS in kB of it and all its descendants
  ps -o rss= -p "$(tree "$1" | tr ' ' ',')" 2>/dev/null | awk '{s+=$1} END {print s+0}'
}

/usr/bin/time -v -o "$OUT/time.txt" "${CMD[@]}" > "$OUT/stdout.json" 2> "$OUT/stderr.log" &
TPID=$!
# stopped: stop the peer too (GNU time does not pass signals on), its spawned workers included
trap 'kill -TERM $(tree "$TPID") 2>/dev/null; wait "$TPID"; echo "$0: stopped" >&2; exit 130' INT TERM
PEAK=0
while kill -0 "$TPID" 2>/dev/null; do
  R=$(tree_rss "$TPID"); [ "${R:-0}" -gt "$PEAK" ] && PEAK=$R
  sleep 1
done
wait "$TPID"; RC=$?
echo "$PEAK" > "$OUT/peak_tree_rss_kb.txt"
echo "$RC" > "$OUT/rc"
grep -E "Elapsed|Maximum resident" "$OUT/time.txt"
echo "peak tree RSS: $PEAK kB; rc=$RC; outputs in $OUTPUTS"
exit "$RC"
