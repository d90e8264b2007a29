#!/usr/bin/env bash
# NN core benchmark: dtrun's core and PyTorch (Debian python3-torch) on the same machine, one
# thread each, the same OpenBLAS kernels (OPENBLAS_CORETYPE set to the ones dtrun runs, for both),
# alternated ROUNDS times after one untimed warm-up round of each, so that drift hits both alike.
# Each program evaluates first (after three training steps and one untimed pass) and then trains,
# SECONDS each. Prints, per model and mode, the median and the min–max of each side's samples/s,
# the ratio of the medians, the fraction of the GEMM floor (training FLOPs at this machine's
# single-core sgemm rate), and a flag where a side's spread (max − min) passes 20% of its median:
# a ratio from such a row is not to be quoted.
# usage: tests/bench/nn.sh [BUILD_DIR] [SECONDS] [ROUNDS]   (defaults: build, 2, 5)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
secs=${2:-2}
rounds=${3:-5}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
have_torch=0
/usr/bin/python3 -c 'import torch' 2>/dev/null && have_torch=1 || echo "(PyTorch not installed: scripts/setup.sh --with-torch)"
# the kernels dtrun runs here, then pinned for both sides
kernels=$("$build/dtrun" --version | sed -n 's/.*OpenBLAS (\([A-Za-z0-9]*\) kernels).*/\1/p')
[ -n "$kernels" ] && export OPENBLAS_CORETYPE=$kernels
"$build/tests/bench_nn" 0.3 seed_cnn > /dev/null # warm-up: caches, page faults, frequency
[ $have_torch = 1 ] && /usr/bin/python3 "$root/tests/bench/bench_torch.py" 0.3 > /dev/null
dt_all="" pt_all=""
for _ in $(seq "$rounds"); do
  dt_all+=$("$build/tests/bench_nn" "$secs")$'\n'
  [ $have_torch = 1 ] && pt_all+=$(/usr/bin/python3 "$root/tests/bench/bench_torch.py" "$secs")$'\n'
done
# field `key` of one program's "result: model ..." lines: "median min max" (0 0 0 when absent)
stats() {
  grep "^result: $2 " <<< "$1" | tr ' ' '\n' | grep "^$3=" | cut -d= -f2 | sort -g |
    awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)], v[1], v[NR]; else print 0, 0, 0}'
}
median() { stats "$@" | cut -d' ' -f1; }
range() { # "median (min-max)" and a * where the spread passes 20% of the median
  read -r m lo hi <<< "$(stats "$@")"
  awk -v m="$m" -v lo="$lo" -v hi="$hi" 'BEGIN {
    if (m == 0) { print "-"; exit }
    printf "%.0f (%.0f-%.0f)%s", m, lo, hi, (hi - lo > 0.2 * m ? "*" : "") }'
}
echo "single-core sgemm (1024^3): $(median "$dt_all" sgemm_1024 gflops) GFLOP/s, OpenBLAS kernels ${kernels:-unknown} (both sides);" \
  "median (min-max) of $rounds alternated runs of ${secs} s; * spread above 20% of the median"
printf '%-10s %-6s %20s %20s %8s %10s %9s\n' model mode dtrun/s pytorch/s ratio floor/s of-floor
flagged=0
for model in seed_cnn large_cnn resnet20 vgg11; do
  for mode in train eval; do
    d=$(median "$dt_all" $model $mode) p=$(median "$pt_all" $model $mode)
    dr=$(range "$dt_all" $model $mode) pr=$(range "$pt_all" $model $mode)
    [[ $dr == *'*' || $pr == *'*' ]] && flagged=1
    ratio=$( [ "$p" != 0 ] && awk "BEGIN{printf \"%.2fx\", $d/$p}" || echo "-")
    if [ $mode = train ]; then fl=$(median "$dt_all" $model floor); fr=$(median "$dt_all" $model fraction); else fl="" fr=""; fi
    printf '%-10s %-6s %20s %20s %8s %10s %9s\n' $model $mode "$dr" "$pr" "$ratio" "$fl" "$fr"
  done
done
[ $flagged = 0 ] || echo "* a side varied by more than 20% between runs: the machine was not quiet; run again before quoting"
