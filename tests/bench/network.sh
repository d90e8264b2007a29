#!/usr/bin/env bash
# What the simulated clock costs: the paper configuration (configs/dist_mnist_paper.yaml on a
# 5-node cycle, 2000 rounds, DiNNO + DSGT + DSGD) without and with experiment.network (stragglers,
# jitter, spread links, two host classes: every draw the clock makes), alternated ROUNDS times
# in one process and at mpirun -np 5 (where the clocks travel in an allgather per exchange).
# Prints the medians and the ratio; the issue's bound is 1.05.
# With FAULTS=1 the network also loses messages and links (their draws and masks cost too; the
# results differ, since messages are lost).
# usage: [FAULTS=1] tests/bench/network.sh [BUILD_DIR] [ROUNDS]   (run from anywhere; default 3 rounds)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rounds=${2:-3}
cd "$root"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
net=(--set experiment.network.speed=2000 --set experiment.network.stragglers=0.2 --set experiment.network.jitter=0.2
     --set experiment.network.link_spread=0.3 --set experiment.network.nodes_per_host=2)
# FAULTS=1: the faults too (5% loss in bursts of 2, links failing every 100 rounds for 5); DSGT
# and DSGD then mix synchronously (a sequential sweep is refused under faults), with and without
base=(--set experiment.graph.num_nodes=5)
if [ "${FAULTS:-0}" = 1 ]; then
  net+=(--set experiment.network.loss=0.05 --set experiment.network.loss_burst=2 --set experiment.network.link_up_rounds=100)
  base+=(--set problem_configs.problem2.optimizer_config.update_order=synchronous
         --set problem_configs.problem3.optimizer_config.update_order=synchronous)
fi
once() { # file launcher... -- args...
  local out=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$@" --output-dir "$tmp/run" --force --quiet > /dev/null
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}' >> "$tmp/$out"
}
median() { sort -n "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for r in $(seq "$rounds"); do
  once p1_off "$build/dtrun" configs/dist_mnist_paper.yaml "${base[@]}"
  once p1_on "$build/dtrun" configs/dist_mnist_paper.yaml "${base[@]}" "${net[@]}"
  once p5_off mpirun --oversubscribe -np 5 "$build/dtrun" configs/dist_mnist_paper.yaml "${base[@]}"
  once p5_on mpirun --oversubscribe -np 5 "$build/dtrun" configs/dist_mnist_paper.yaml "${base[@]}" "${net[@]}"
  echo "round $r of $rounds done" >&2
done
for p in p1 p5; do
  off=$(median "$tmp/${p}_off") on=$(median "$tmp/${p}_on")
  printf '%s: without network %8.2f s, with %8.2f s, ratio %.3f (median of %d)\n' \
    "$([ $p = p1 ] && echo "one process " || echo "mpirun -np 5")" "$off" "$on" "$(awk -v a="$off" -v b="$on" 'BEGIN {print b / a}')" "$rounds"
done
