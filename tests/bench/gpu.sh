#!/usr/bin/env bash
# GPU benchmarks of the CUDA backend (issue "CUDA and cuBLAS backend"), on the machine that runs
# them, printed as a table at the end:
#  1. the paper configuration (configs/dist_mnist_paper.yaml: 10 nodes, cycle, 2000 rounds,
#     DiNNO + DSGT + DSGD, evaluation every 20) with backend cuda and cpu: wall seconds and each
#     algorithm's final top-1;
#  2. DSGD and DiNNO on 100 and 1,000 nodes of the seed CNN (random split, batch 64, cycle):
#     rounds per second (training rounds, evaluation at the end only) and peak GPU memory;
#  3. the larger CNN (tests/unit/models.h), 100 nodes training alone (solo, sgd, batch 64):
#     training samples/s per node, against PyTorch on the same GPU training the same 100 models
#     (tests/bench/gpu_torch.py: a loop over models, and torch.func + vmap).
# usage: tests/bench/gpu.sh [BUILD_DIR] [--quick]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
quick=${2:-}
dtrun=$build/dtrun
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; kill $(jobs -p) 2>/dev/null' EXIT
out=$tmp/table
# peak of nvidia-smi's memory.used while a command runs (MiB; sampled every 50 ms)
peak_mem() { # command...
  (while :; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits; sleep 0.05; done) > "$tmp/mem" &
  local sampler=$!
  "$@"
  local rc=$?
  kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
  sort -n "$tmp/mem" | tail -1 > "$tmp/peak"
  return $rc
}
seconds_of() { awk -v p="$2" '$1 == p {print $NF}' "$1"; }

# ---- 1. the paper configuration -------------------------------------------------------------
for b in cuda cpu; do
  t0=$(date +%s.%N)
  timeout 900 "$dtrun" configs/dist_mnist_paper.yaml --set experiment.backend=$b --output-dir "$tmp/paper_$b" --quiet \
    > "$tmp/paper_$b.log" 2>&1 || echo "paper run ($b) failed: $(tail -3 "$tmp/paper_$b.log")"
  t1=$(date +%s.%N)
  printf 'paper config, backend %-4s  %7.1f s wall   top-1: %s\n' "$b" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" \
    "$(awk '$3 == "completed" {printf "%s %s  ", $1, $5}' "$tmp/paper_$b.log")" | tee -a "$out"
done

# ---- 2. many nodes ------------------------------------------------------------------------------
scale_config() { # nodes rounds -> yaml
  cat <<YEOF
experiment:
  name: gpu_scale_$1
  data_dir: data/mnist
  data_split_type: random
  backend: cuda
  seed: 1
  graph: {num_nodes: $1, type: cycle}
problem_configs:
  dsgd:
    train_batch_size: 64
    evaluate_frequency: $2
    optimizer_config: {alg_name: dsgd, outer_iterations: $2, alpha0: 0.02}
  dinno:
    train_batch_size: 64
    evaluate_frequency: $2
    optimizer_config: {alg_name: dinno, outer_iterations: $2, primal_iterations: 2, primal_lr_start: 0.005, primal_lr_finish: 0.001}
YEOF
}
for n in 100 1000; do
  rounds=$([ "$n" = 100 ] && echo 500 || echo 200)
  [ -n "$quick" ] && rounds=50
  scale_config $n $rounds > "$tmp/scale_$n.yaml"
  peak_mem "$dtrun" "$tmp/scale_$n.yaml" --output-dir "$tmp/scale_$n" --quiet > "$tmp/scale_$n.log" 2>&1 \
    || echo "scale $n failed: $(tail -3 "$tmp/scale_$n.log")"
  for p in dsgd dinno; do
    s=$(seconds_of "$tmp/scale_$n.log" $p)
    printf '%4d nodes %-5s %5d rounds in %7.2f s: %8.1f rounds/s   (peak GPU memory of the run %s MiB)\n' "$n" "$p" "$rounds" \
      "$s" "$(awk -v r="$rounds" -v s="$s" 'BEGIN {print (s > 0) ? r / s : 0}')" "$(cat "$tmp/peak")" | tee -a "$out"
  done
done

# ---- 3. the larger CNN on 100 nodes, against PyTorch ---------------------------------------------
rounds=$([ -n "$quick" ] && echo 20 || echo 100)
cat > "$tmp/large.yaml" <<YEOF
experiment:
  name: gpu_large_cnn
  data_dir: data/mnist
  data_split_type: random
  backend: cuda
  seed: 1
  graph: {num_nodes: 100, type: cycle}
  model:
    layers:
      - {type: conv2d, out_channels: 32, kernel_size: 3}
      - {type: relu}
      - {type: conv2d, out_channels: 64, kernel_size: 3}
      - {type: relu}
      - {type: maxpool2d, kernel_size: 2}
      - {type: flatten}
      - {type: linear, out_features: 128}
      - {type: relu}
      - {type: linear, out_features: 10}
problem_configs:
  solo:
    train_batch_size: 64
    evaluate_frequency: $rounds
    optimizer_config: {alg_name: solo, outer_iterations: $rounds, optimizer: sgd, lr: 0.01}
YEOF
"$dtrun" "$tmp/large.yaml" --output-dir "$tmp/large" --quiet > "$tmp/large.log" 2>&1 || echo "large CNN failed: $(tail -3 "$tmp/large.log")"
s=$(seconds_of "$tmp/large.log" solo)
printf 'large CNN, 100 nodes, dtrun cuda:        %9.0f training samples/s per node (%d rounds in %.2f s, evaluation included)\n' \
  "$(awk -v r="$rounds" -v s="$s" 'BEGIN {print (s > 0) ? r * 64 / s : 0}')" "$rounds" "$s" | tee -a "$out"
python3 tests/bench/gpu_torch.py --models 100 --steps "$rounds" | tee -a "$out"
echo
echo "==== summary ===="
cat "$out"
