#!/usr/bin/env bash
# How long a stop signal takes to act in each phase of a large run (issue 58, item 4): NODES
# nodes of the seed CNN on MNIST on a complete graph (its set-up is the longest dtrun has: two
# dense eigensolvers of NODES x NODES, and a graph.yaml of NODES² mixing weights). Each trial
# starts the run with --log-level debug, waits for a line of its log (a set-up phase's end is
# the next one's start) and DELAY seconds more, sends SIGTERM, and prints the seconds until the
# process has exited, its exit code, and where it says it stopped. The checkpoint's verification
# is timed on a resume of a NODES-node cycle killed after its checkpoint at round 1.
# usage: tests/bench/signal_latency.sh [NODES] [BUILD_DIR]   (default 4096 nodes, build/; minutes)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
nodes=${1:-4096}
build=$(cd "${2:-$root/build}" && pwd)
cd "$root"
tmp=$(mktemp -d)
trap 'pkill -9 -f "$tmp/" 2>/dev/null; rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cat > "$tmp/complete.yaml" <<EOF
experiment:
  name: latency
  data_dir: $root/data/mnist
  seed: 1
  graph: {num_nodes: $nodes, type: complete}
problem_configs:
  dsgd:
    optimizer_config: {alg_name: dsgd, outer_iterations: 1}
EOF
cat > "$tmp/cycle.yaml" <<EOF
experiment:
  name: latency_resume
  data_dir: $root/data/mnist
  seed: 1
  checkpoint_every: 1
  graph: {num_nodes: $nodes, type: cycle}
problem_configs:
  dsgd:
    evaluate_frequency: 100
    evaluation: {test_samples: 100}
    optimizer_config: {alg_name: dsgd, outer_iterations: 100}
EOF
round_of() { od -An -t u8 -j 24 -N 8 "$1/run.ckpt" 2>/dev/null | tr -d ' '; }

# trial LABEL LINE DELAY ARGS...: dtrun ARGS, SIGTERM DELAY s after LINE is in its log
trial() {
  local label=$1 line=$2 delay=$3
  shift 3
  "$build/dtrun" "$@" --log-level debug --progress never > "$tmp/log" 2>&1 &
  local pid=$!
  while ! grep -qE "$line" "$tmp/log"; do
    kill -0 $pid 2>/dev/null || { echo "$label: the run ended before '$line': $(tail -2 "$tmp/log")"; return 0; }
    sleep 0.02
  done
  sleep "$delay"
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  kill -TERM $pid
  wait $pid || rc=$?
  t1=$(date +%s.%N)
  printf '%-44s exit %3d after %6.2f s  (%s)\n' "$label" "$rc" "$(echo "$t1 - $t0" | bc)" \
    "$(grep -m1 -oE 'interrupted (by signal [0-9]+ (in set-up \([^)]*\)|before [^;]*)|while [^;]*|during the evaluation of round [0-9]+|at round [0-9]+)' "$tmp/log" || tail -1 "$tmp/log")"
}

echo "dtrun $("$build/dtrun" --version | head -1), $nodes nodes; SIGTERM at the start of each phase, and later in the long ones"
for d in 0 3 6 9 12; do
  rm -rf "$tmp/out"
  trial "graph construction and spectrum, +$d s" 'set-up: backend' $d "$tmp/complete.yaml" --output-dir "$tmp/out"
done
rm -rf "$tmp/out"
trial "data" 'set-up: graph schedule' 0 "$tmp/complete.yaml" --output-dir "$tmp/out"
rm -rf "$tmp/out"
trial "split and model" 'set-up: data' 0 "$tmp/complete.yaml" --output-dir "$tmp/out"
rm -rf "$tmp/out"
trial "initial weights" 'set-up: network' 0 "$tmp/complete.yaml" --output-dir "$tmp/out"
for d in 0 5 10; do
  rm -rf "$tmp/out"
  trial "config.yaml, graph.yaml, split.csv, +$d s" '^output: ' $d "$tmp/complete.yaml" --output-dir "$tmp/out"
done
for d in 0 3; do
  rm -rf "$tmp/out"
  trial "the algorithm's state (create), +$d s" '^== dsgd' $d "$tmp/complete.yaml" --output-dir "$tmp/out"
done
for d in 0 10; do
  rm -rf "$tmp/out"
  trial "evaluation of round 0, +$d s" "set-up: the algorithm's state" $d "$tmp/complete.yaml" --output-dir "$tmp/out"
done

# a cycle killed with its checkpoint at round 1 (node files to verify on resume)
rm -rf "$tmp/ck"
"$build/dtrun" "$tmp/cycle.yaml" --output-dir "$tmp/ck" --quiet > /dev/null 2>&1 &
pid=$!
until r=$(round_of "$tmp/ck/checkpoint") && [ -n "$r" ] && [ "$r" -ge 1 ] && [ ! -e "$tmp/ck/checkpoint.tmp" ]; do
  kill -0 $pid 2>/dev/null || { echo "the cycle run ended before its checkpoint"; exit 1; }
  sleep 0.02
done
kill -9 $pid
wait $pid 2>/dev/null || true
cp -a "$tmp/ck" "$tmp/ck.orig"
for d in 0 0.5; do
  rm -rf "$tmp/ck" && cp -a "$tmp/ck.orig" "$tmp/ck"
  trial "resume: checkpoint verification, +$d s" '^output: ' $d resume "$tmp/ck"
done
