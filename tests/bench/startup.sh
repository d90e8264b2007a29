#!/usr/bin/env bash
# Start-up time (issue 60): wall milliseconds of the commands a shell, a completion or a job array
# runs many times: `dtrun --version`, `help`, `completion bash`, `check` of the demo config, and a
# whole 1-node, 1-round run of the seed CNN (load MNIST, build, one step, two evaluations, write
# the files). Each command runs REPEATS times per build (the builds alternating, after one warm-up
# run each); the table gives the median and min–max, each build's median against the first's,
# and flags a spread above 20% of the median.
# usage: tests/bench/startup.sh [BUILD...] [REPEATS]   (run anywhere; default: build, 15)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_args 15 "$@"
repeats=$rounds
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/one.yaml" <<YAML
experiment:
  name: one_round
  data_dir: $root/data/mnist
  graph: {num_nodes: 1, type: complete}
problem_configs:
  dsgd:
    train_batch_size: 64
    optimizer_config: {alg_name: dsgd, outer_iterations: 1}
YAML
one_round=("$tmp/one.yaml" --quiet)
names=(version help completion check one_round)
command_of() { # name build
  case $1 in
    version) echo "$2/dtrun --version" ;;
    help) echo "$2/dtrun help" ;;
    completion) echo "$2/dtrun completion bash" ;;
    check) echo "$2/dtrun check configs/dist_mnist.yaml" ;;
    one_round) echo "$2/dtrun ${one_round[*]} --output-dir $tmp/run --force" ;;
  esac
}
ms() { # command... -> wall milliseconds
  local t0 t1
  t0=$(date +%s%N)
  "$@" > /dev/null 2>&1 || { echo "startup.sh: $* failed" >&2; exit 1; }
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000))
}
for n in "${names[@]}"; do
  for b in "${builds[@]}"; do read -ra c <<< "$(command_of "$n" "$b")"; ms "${c[@]}" > /dev/null; done # warm-up
  for ((r = 0; r < repeats; r++)); do
    for bi in "${!builds[@]}"; do
      read -ra c <<< "$(command_of "$n" "${builds[$bi]}")"
      ms "${c[@]}" >> "$tmp/$n.$bi"
    done
  done
done
printf '%-12s' command; for b in "${builds[@]}"; do printf '  %-34s' "$(basename "$(dirname "$b")")/$(basename "$b")"; done; echo
for n in "${names[@]}"; do
  printf '%-12s' "$n"
  base=
  for bi in "${!builds[@]}"; do
    read -r med lo hi < <(sort -n "$tmp/$n.$bi" | awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR]}')
    base=${base:-$med}
    flag=$(awk -v m="$med" -v l="$lo" -v h="$hi" 'BEGIN {print (h - l > 0.2 * m) ? " !" : ""}')
    printf '  %7.1f ms (%6.1f-%6.1f) %5.2fx%-2s' "$(awk -v u="$med" 'BEGIN {print u / 1000}')" "$(awk -v u="$lo" 'BEGIN {print u / 1000}')" \
      "$(awk -v u="$hi" 'BEGIN {print u / 1000}')" "$(awk -v a="$base" -v b="$med" 'BEGIN {print (b > 0 ? a / b : 0)}')" "$flag"
  done
  echo
done
echo "(median and min-max over $repeats runs; NNx: the first build's median over this one's, above 1 is faster; ! a spread above 20%)"
