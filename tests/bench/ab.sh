#!/usr/bin/env bash
# A/B speed check of two builds (a refactor must be no slower): alternates the two builds ROUNDS
# times on the paper configuration (configs/dist_mnist_paper.yaml on a 5-node cycle, no mpirun,
# as tests/bench/paper.sh) and on the NN core benchmark (bench_nn, seed and large CNN), and
# prints the median of each and B's change against A. Alternation makes drift hit both alike.
# usage: tests/bench/ab.sh BUILD_A BUILD_B [ROUNDS]   (run from the source root; default 5 rounds)
set -euo pipefail
a=$(cd "$1" && pwd) b=$(cd "$2" && pwd)
rounds=${3:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
paper() { # build -> seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$1/dtrun" configs/dist_mnist_paper.yaml --set experiment.graph.num_nodes=5 --output-dir "$tmp/out" --quiet > /dev/null
  t1=$(date +%s.%N)
  rm -rf "$tmp/out"
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}'
}
for r in $(seq "$rounds"); do
  for side in a b; do
    build=$a
    [ $side = b ] && build=$b
    paper "$build" >> "$tmp/paper_$side"
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$build/tests/bench_nn" 2 > "$tmp/nn_$side.$r"
  done
  echo "round $r of $rounds done" >&2
done
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
nn_field() { # side model mode
  cat "$tmp"/nn_$1.* | grep "^result: $2 " | tr ' ' '\n' | grep "^$3=" | cut -d= -f2 | median
}
change() { awk -v x="$1" -v y="$2" 'BEGIN {printf "%+.1f%%", (y / x - 1) * 100}'; }
pa=$(median < "$tmp/paper_a") pb=$(median < "$tmp/paper_b")
echo "medians of $rounds alternated runs; A = $a, B = $b"
printf '%-28s %12s %12s %9s\n' case A B "B vs A"
printf '%-28s %12s %12s %9s\n' "paper config, seconds" "$pa" "$pb" "$(change "$pa" "$pb")"
for model in seed_cnn large_cnn; do
  for mode in train eval; do
    x=$(nn_field a $model $mode) y=$(nn_field b $model $mode)
    printf '%-28s %12s %12s %9s\n' "$model $mode, samples/s" "$x" "$y" "$(change "$x" "$y")"
  done
done
