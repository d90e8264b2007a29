#!/usr/bin/env bash
# How long a stop signal takes to act while a run evaluates many nodes: NODES nodes of the seed
# CNN on MNIST (a random split), each evaluated on the whole test set at round 0. Once the run
# has started that evaluation (its problem's heading printed) and DELAY seconds more have passed,
# SIGTERM goes to the process; the script prints the seconds until the process has exited (files
# saved, exit 130), for each build given (put the build before a change first to compare).
# usage: tests/bench/signal_latency.sh [NODES] [DELAY] BUILD_DIR...   (default 4096 nodes, 5 s)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
nodes=${1:-4096}
delay=${2:-5}
shift 2 || true
[ $# -gt 0 ] || set -- "$root/build"
cd "$root"
tmp=$(mktemp -d)
trap 'pkill -9 -f "$tmp/" 2>/dev/null; rm -rf "$tmp"' EXIT
cat > "$tmp/latency.yaml" <<EOF
experiment:
  name: latency
  data_split_type: random
  seed: 1
  graph: {num_nodes: $nodes, type: cycle}
problem_configs:
  dsgd:
    evaluate_frequency: 10
    optimizer_config: {alg_name: dsgd, outer_iterations: 10}
EOF
for b in "$@"; do
  dtrun=$(cd "$b" && pwd)/dtrun
  rm -rf "$tmp/out"
  "$dtrun" "$tmp/latency.yaml" --output-dir "$tmp/out" --progress never > "$tmp/log" 2>&1 &
  pid=$!
  while ! grep -q '^== dsgd' "$tmp/log"; do
    kill -0 $pid 2>/dev/null || { echo "$b: the run ended before its evaluation: $(tail -2 "$tmp/log")"; exit 1; }
    sleep 0.05
  done
  sleep "$delay"
  t0=$(date +%s.%N)
  kill -TERM $pid
  rc=0
  wait $pid || rc=$?
  t1=$(date +%s.%N)
  printf '%s: %d nodes, SIGTERM %s s into the round-0 evaluation: exit %d after %.2f s (%s)\n' "$b" "$nodes" "$delay" "$rc" \
    "$(echo "$t1 - $t0" | bc)" "$(grep -m1 -oE 'interrupted (during the evaluation of|at) round [0-9]+' "$tmp/log" || echo 'no interrupt line')"
done
