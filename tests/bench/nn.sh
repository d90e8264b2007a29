#!/usr/bin/env bash
# NN core benchmark: dtrun's core and PyTorch (Debian python3-torch, one thread) on the same
# machine in the same run; prints samples/s, the ratio to PyTorch and the fraction of the GEMM
# floor. usage: tests/bench/nn.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
secs=${2:-3}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
dt=$("$build/tests/bench_nn" "$secs")
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  pt=$(/usr/bin/python3 "$root/tests/bench/bench_torch.py" "$secs")
else
  pt=""
  echo "(PyTorch not installed: scripts/setup.sh --with-torch)"
fi
get() { grep "^result: $2 " <<< "$1" | tr ' ' '\n' | grep "^$3=" | cut -d= -f2; }
echo "single-core sgemm (1024^3): $(get "$dt" sgemm_1024 gflops) GFLOP/s, OpenBLAS kernels $(get "$dt" sgemm_1024 kernels)"
printf '%-10s %-6s %12s %12s %8s %12s %9s\n' model mode dtrun/s pytorch/s ratio floor/s of-floor
for model in seed_cnn large_cnn; do
  for mode in train eval; do
    d=$(get "$dt" $model $mode); p=$(get "$pt" $model $mode); p=${p:-0}
    ratio=$( [ "$p" != 0 ] && awk "BEGIN{printf \"%.2fx\", $d/$p}" || echo "-")
    if [ $mode = train ]; then fl=$(get "$dt" $model floor); fr=$(get "$dt" $model fraction); else fl="" fr=""; fi
    printf '%-10s %-6s %12s %12s %8s %12s %9s\n' $model $mode "$d" "$p" "$ratio" "$fl" "$fr"
  done
done
