#!/usr/bin/env bash
# NN core benchmark: dtrun's core and PyTorch (Debian python3-torch, one thread) on the same
# machine, alternated ROUNDS times so that drift hits both alike; prints the median samples/s of
# each, their ratio, and the fraction of the GEMM floor (training FLOPs at this machine's
# single-core sgemm rate).
# usage: tests/bench/nn.sh [BUILD_DIR] [SECONDS] [ROUNDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
secs=${2:-2}
rounds=${3:-3}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
have_torch=0
/usr/bin/python3 -c 'import torch' 2>/dev/null && have_torch=1 || echo "(PyTorch not installed: scripts/setup.sh --with-torch)"
dt_all="" pt_all=""
for _ in $(seq "$rounds"); do
  dt_all+=$("$build/tests/bench_nn" "$secs")$'\n'
  [ $have_torch = 1 ] && pt_all+=$(/usr/bin/python3 "$root/tests/bench/bench_torch.py" "$secs")$'\n'
done
# median of field `key` over the "result: model ..." lines of one program
median() { grep "^result: $2 " <<< "$1" | tr ' ' '\n' | grep "^$3=" | cut -d= -f2 | sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print 0}'; }
echo "single-core sgemm (1024^3): $(median "$dt_all" sgemm_1024 gflops) GFLOP/s, OpenBLAS kernels $(grep -o 'kernels=[A-Za-z0-9]*' <<< "$dt_all" | head -1 | cut -d= -f2); medians of $rounds alternated runs"
printf '%-10s %-6s %12s %12s %8s %12s %9s\n' model mode dtrun/s pytorch/s ratio floor/s of-floor
for model in seed_cnn large_cnn resnet20 vgg11; do
  for mode in train eval; do
    d=$(median "$dt_all" $model $mode); p=$(median "$pt_all" $model $mode)
    ratio=$( [ "$p" != 0 ] && awk "BEGIN{printf \"%.2fx\", $d/$p}" || echo "-")
    if [ $mode = train ]; then fl=$(median "$dt_all" $model floor); fr=$(median "$dt_all" $model fraction); else fl="" fr=""; fi
    printf '%-10s %-6s %12s %12s %8s %12s %9s\n' $model $mode "$d" "$p" "$ratio" "$fl" "$fr"
  done
done
