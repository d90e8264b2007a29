#!/usr/bin/env bash
# dtrun over TCP between hosts (the namespace cluster of tests/cluster/lib.sh), one rank per
# host, for one-way link delays of 0, 1, 2 and 5 ms (netdelay on every host's egress):
#   - bench_exchange: dtrun's exchange vs a raw MPI_Neighbor_allgather of the seed CNN's
#     parameter vector (28,440 floats) on a 3-node cycle (every neighbour on another host), in
#     the same run; the overhead;
#   - DSGD, DSGT and DiNNO on a 5-node cycle (tests/cluster/cluster.yaml; nodes 2 + 2 + 1 over
#     the three ranks): seconds per round without evaluation, (wall - evaluation) / rounds from
#     summary.yaml.
# The ranks yield when idle (mpi_yield_when_idle): three ranks and the delay program share the
# machine's cores, and busy-polling ranks would starve the delay program.
# Needs root and network namespaces (as the cluster suite), data/mnist and a build with
# tests/netdelay.   usage: tests/bench/cluster.sh [BUILD_DIR] [ROUNDS]
set -u
. "$(dirname "$0")/../cluster/lib.sh"
cluster_enter "$@"
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath "${1:-$root/build}")
rounds=${2:-100}
cd "$root" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1 DT_THREADS=1 # three ranks share 2 cores
DTC_NETDELAY=$build/tests/netdelay
cluster_up 3 1 1 1
tmp=$DTC_DIR/work
mkdir -p "$tmp"

echo "TCP between 3 hosts (network namespaces, veth + bridge), one rank per host, $(nproc) cores in all"
export OMPI_MCA_mpi_yield_when_idle=1
printf '%-7s %10s %10s %9s %13s %13s %13s\n' "delay" "raw us" "dtrun us" "overhead" "dsgd s/round" "dsgt s/round" "dinno s/round"
for d in 0 1 2 5; do
  if [ "$d" != 0 ]; then cluster_netem "$d" 0 || exit 1; fi
  out=$(cluster_mpirun -np 3 "$build/tests/bench_exchange" 3 28440 cycle 15 10 2>&1)
  raw=$(echo "$out" | awk '/raw MPI/ {print $3}')
  dt=$(echo "$out" | awk '/dt_exchange_run/ {print $2}')
  over=$(echo "$out" | awk '/overhead/ {print $2}')
  sets=()
  for p in dinno dsgd dsgt; do
    sets+=(--set "problem_configs.$p.optimizer_config.outer_iterations=$rounds" --set "problem_configs.$p.evaluate_frequency=$rounds")
  done
  cluster_mpirun -np 3 "$build/dtrun" tests/cluster/cluster.yaml "${sets[@]}" --output-dir "$tmp/d$d" --quiet > "$tmp/d$d.log" 2>&1 || { echo "dtrun failed:"; tail -5 "$tmp/d$d.log"; exit 1; }
  per_round() { # problem
    awk -v p="\"$1\"" -v n="$rounds" '/problem_name:/ {on = ($3 == p)} on && /wall_seconds:/ {w = $2} on && /time_eval:/ {e = $2}
      END {printf "%.4f", (w - e) / n}' "$tmp/d$d/summary.yaml"
  }
  printf '%-7s %10s %10s %9s %13s %13s %13s\n' "${d} ms" "$raw" "$dt" "$over" "$(per_round dsgd)" "$(per_round dsgt)" "$(per_round dinno)"
  if [ "$d" != 0 ]; then cluster_netem off > /dev/null; fi
done
