#!/usr/bin/env bash
# GPU benchmarks of the CUDA backend, each case run by every build given (the first is the
# baseline, so a change is measured against the commit before it on the same GPU in the same
# call) and printed as a table with each build's ratio to the first:
#  1. the paper configuration (configs/dist_mnist_paper.yaml: 10 nodes, cycle, 2000 rounds,
#     DiNNO + DSGT + DSGD, evaluation every 20) with backend cuda: wall seconds (and, with --cpu,
#     the CPU backend's, and each algorithm's final top-1 on both);
#  2. DSGD and DiNNO on 100 and 1,000 nodes of the seed CNN (random split, batch 64, cycle):
#     training rounds per second (the rounds' compute and communication time, evaluations
#     apart; they run at the start and the end only, on 1,000 test samples) and peak GPU memory;
#  3. the larger CNN (tests/unit/models.h), 100 nodes training alone (solo, sgd, batch 64):
#     training samples/s per node, in float32 and with experiment.tf32, against PyTorch on the
#     same GPU training the same 100 models (tests/bench/gpu_torch.py: a loop over models, and
#     torch.func + vmap; in PyTorch's default math, TF32 convolutions, and in float32);
#  4. with --profile, the per-round phase breakdown (`profile: true`: phases, and each layer's
#     forward and backward where the build times them) of each problem of the paper
#     configuration, of DSGD on 1,000 nodes of the seed CNN and of the larger CNN on 100 nodes,
#     for each build;
#  5. ResNet-20 with group norm (the zoo's `name: resnet20, norm: group`) on CIFAR-shaped data
#     (files tests/e2e/make_cifar.py writes), 16 and 64 nodes training alone (solo, sgd, batch 32):
#     training samples/s per node, against PyTorch on the same GPU training the same models
#     (tests/bench/gpu_torch.py --model resnet20: a loop and torch.func + vmap in its default
#     math, and torch.func + vmap in float32).
# --only LIST runs only the cases named in LIST (comma-separated: paper, scale, large, resnet,
# profile; default all; the profile case needs --profile too).
# usage: tests/bench/gpu.sh [--quick] [--cpu] [--profile] [--only LIST] [BUILD_DIR...]   (default: build)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
quick= cpu= profile= only= builds=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --cpu) cpu=1 ;;
    --profile) profile=1 ;;
    --only) [ $# -ge 2 ] || { echo "gpu.sh: --only needs a list" >&2; exit 2; }; only=$2; shift ;;
    --only=*) only=${1#--only=} ;;
    -*) echo "gpu.sh: unknown option $1" >&2; exit 2 ;;
    *) builds+=("$(cd "$1" && pwd)") ;;
  esac
  shift
done
for c in ${only//,/ }; do
  case $c in
    paper | scale | large | resnet | profile) ;;
    *) echo "gpu.sh: unknown case $c in --only (paper, scale, large, resnet, profile)" >&2; exit 2 ;;
  esac
done
# whether case $1 runs: every case without --only, else those it names
want() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }
[ ${#builds[@]} -gt 0 ] || builds=("$root/build")
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; kill $(jobs -p) 2>/dev/null' EXIT
out=$tmp/table
# peak of nvidia-smi's memory.used while a command runs (MiB; sampled every 50 ms)
peak_mem() { # command...
  (while :; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits; sleep 0.05; done) > "$tmp/mem" 2>/dev/null &
  local sampler=$!
  "$@"
  local rc=$?
  kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
  sort -n "$tmp/mem" | tail -1 > "$tmp/peak"
  return $rc
}
seconds_of() { awk -v p="$2" '$1 == p && $3 == "completed" {print $NF}' "$1"; }
# a run's training seconds: the last round's largest time_compute + time_comm in a results CSV
train_seconds() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
           { r = $c["round"] + 0; t = $c["time_compute"] + $c["time_comm"]; if (r > last) { last = r; m = 0 } if (r == last && t > m) m = t }
           END { print m + 0 }' "$1" 2>/dev/null
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", b / a; else printf "-" }'; }
label() { echo "$(basename "$(dirname "$1")")/$(basename "$1")"; }

# ---- 1. the paper configuration -------------------------------------------------------------
paper_rounds=$([ -n "$quick" ] && echo 200 || echo 2000)
if want paper; then
  paper_sets=()
  for p in problem1 problem2 problem3; do paper_sets+=(--set "problem_configs.$p.optimizer_config.outer_iterations=$paper_rounds"); done
  base=
  for b in "${builds[@]}"; do
    t0=$(date +%s.%N)
    timeout 900 "$b/dtrun" configs/dist_mnist_paper.yaml "${paper_sets[@]}" --set experiment.backend=cuda --output-dir "$tmp/paper" \
      --quiet > "$tmp/paper.log" 2>&1 || echo "paper run ($(label "$b")) failed: $(tail -3 "$tmp/paper.log")"
    t1=$(date +%s.%N)
    s=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
    base=${base:-$s}
    printf 'paper config (%d rounds), cuda, %-24s %7.1f s wall (%s of the first)   top-1: %s\n' "$paper_rounds" "$(label "$b")" "$s" \
      "$(ratio "$s" "$base")" "$(awk '$3 == "completed" {printf "%s %s  ", $1, $5}' "$tmp/paper.log")" | tee -a "$out"
    rm -rf "$tmp/paper"
  done
  if [ -n "$cpu" ]; then
    t0=$(date +%s.%N)
    "${builds[-1]}/dtrun" configs/dist_mnist_paper.yaml "${paper_sets[@]}" --set experiment.backend=cpu --output-dir "$tmp/paper_cpu" --quiet \
      > "$tmp/paper_cpu.log" 2>&1 || echo "paper run (cpu) failed: $(tail -3 "$tmp/paper_cpu.log")"
    t1=$(date +%s.%N)
    printf 'paper config (%d rounds), cpu backend            %7.1f s wall   top-1: %s\n' "$paper_rounds" \
      "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" "$(awk '$3 == "completed" {printf "%s %s  ", $1, $5}' "$tmp/paper_cpu.log")" | tee -a "$out"
  fi
fi

# ---- 2. many nodes ------------------------------------------------------------------------------
scale_config() { # nodes rounds profile -> yaml
  cat <<YEOF
experiment:
  name: gpu_scale_$1
  data_split_type: random
  backend: cuda
  seed: 1
  graph: {num_nodes: $1, type: cycle}
problem_configs:
  dsgd:
    train_batch_size: 64
    evaluate_frequency: $2
    evaluation: {test_samples: 1000}
    optimizer_config: {alg_name: dsgd, outer_iterations: $2, alpha0: 0.02, profile: $3}
YEOF
  [ "$3" = true ] && return
  cat <<YEOF
  dinno:
    train_batch_size: 64
    evaluate_frequency: $2
    evaluation: {test_samples: 1000}
    optimizer_config: {alg_name: dinno, outer_iterations: $2, primal_iterations: 2, primal_lr_start: 0.005, primal_lr_finish: 0.001}
YEOF
}
if want scale; then
  for n in 100 1000; do
    rounds=$([ "$n" = 100 ] && echo 200 || echo 60)
    [ -n "$quick" ] && rounds=20
    scale_config $n $rounds false > "$tmp/scale_$n.yaml"
    declare -A first=()
    for b in "${builds[@]}"; do
      peak_mem "$b/dtrun" "$tmp/scale_$n.yaml" --output-dir "$tmp/scale" --quiet > "$tmp/scale.log" 2>&1 \
        || echo "scale $n ($(label "$b")) failed: $(tail -3 "$tmp/scale.log")"
      for p in dsgd dinno; do
        s=$(train_seconds "$tmp/scale/${p}_results.csv")
        r=$(awk -v r="$rounds" -v s="$s" 'BEGIN {print (s > 0) ? r / s : 0}')
        first[$p]=${first[$p]:-$r}
        printf '%4d nodes %-5s %-24s %4d rounds trained in %7.2f s: %8.1f rounds/s (%s of the first; peak GPU memory %s MiB; wall %s s)\n' \
          "$n" "$p" "$(label "$b")" "$rounds" "${s:-0}" "$r" "$(ratio "${first[$p]}" "$r")" "$(cat "$tmp/peak")" "$(seconds_of "$tmp/scale.log" $p)" | tee -a "$out"
      done
      rm -rf "$tmp/scale"
    done
    unset first
  done
fi

# ---- 3. the larger CNN on 100 nodes, against PyTorch ---------------------------------------------
rounds=$([ -n "$quick" ] && echo 10 || echo 40)
cat > "$tmp/large.yaml" <<YEOF
experiment:
  name: gpu_large_cnn
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
    evaluation: {test_samples: 1000}
    optimizer_config: {alg_name: solo, outer_iterations: $rounds, optimizer: sgd, lr: 0.01}
YEOF
if want large; then
  base=
  for b in "${builds[@]}"; do
    "$b/dtrun" "$tmp/large.yaml" --output-dir "$tmp/large" --quiet > "$tmp/large.log" 2>&1 || echo "large CNN ($(label "$b")) failed: $(tail -3 "$tmp/large.log")"
    s=$(train_seconds "$tmp/large/solo_results.csv")
    r=$(awk -v r="$rounds" -v s="$s" 'BEGIN {print (s > 0) ? r * 64 / s : 0}')
    base=${base:-$r}
    printf 'large CNN, 100 nodes, %-24s %9.0f training samples/s per node (%s of the first; %d rounds trained in %.2f s)\n' "$(label "$b")" "$r" \
      "$(ratio "$base" "$r")" "$rounds" "${s:-0}" | tee -a "$out"
    rm -rf "$tmp/large"
  done
  # with experiment.tf32 (builds that know the key), against PyTorch's default math, which runs
  # convolutions in TF32 too
  for b in "${builds[@]}"; do
    "$b/dtrun" "$tmp/large.yaml" --set experiment.tf32=true --output-dir "$tmp/large" --quiet > "$tmp/large.log" 2>&1 || continue
    s=$(train_seconds "$tmp/large/solo_results.csv")
    printf 'large CNN, 100 nodes, %-24s %9.0f training samples/s per node with experiment.tf32 (%d rounds trained in %.2f s)\n' \
      "$(label "$b")" "$(awk -v r="$rounds" -v s="$s" 'BEGIN {print (s > 0) ? r * 64 / s : 0}')" "$rounds" "${s:-0}" | tee -a "$out"
    rm -rf "$tmp/large"
  done
  # PyTorch with its own libraries (the caller may have put other builds' first on the path)
  env -u LD_LIBRARY_PATH python3 tests/bench/gpu_torch.py --models 100 --steps "$rounds" | tee -a "$out"
  env -u LD_LIBRARY_PATH python3 tests/bench/gpu_torch.py --models 100 --steps "$rounds" --fp32 --no-loop | tee -a "$out"
fi

# ---- 4. where a round's time goes ------------------------------------------------------------
if [ -n "$profile" ] && want profile; then
  scale_config 1000 30 true > "$tmp/profile.yaml"
  sed 's/lr: 0.01}/lr: 0.01, profile: true}/' "$tmp/large.yaml" > "$tmp/profile_large.yaml"
  for b in "${builds[@]}"; do
    # the paper configuration: each problem's phases (evaluations included) and layers
    prof_sets=()
    for p in problem1 problem2 problem3; do
      prof_sets+=(--set "problem_configs.$p.optimizer_config.outer_iterations=$paper_rounds"
                  --set "problem_configs.$p.optimizer_config.profile=true")
    done
    "$b/dtrun" configs/dist_mnist_paper.yaml "${prof_sets[@]}" --set experiment.backend=cuda --output-dir "$tmp/profile" \
      > "$tmp/profile.log" 2>&1 || echo "profile run paper ($(label "$b")) failed"
    echo "---- the paper configuration, $(label "$b"):" | tee -a "$out"
    sed -n '/profile, /,/wall /p' "$tmp/profile.log" | tee -a "$out"
    rm -rf "$tmp/profile"
    for c in profile profile_large; do
      "$b/dtrun" "$tmp/$c.yaml" --output-dir "$tmp/profile" > "$tmp/profile.log" 2>&1 || echo "profile run $c ($(label "$b")) failed"
      echo "---- $([ $c = profile ] && echo "DSGD, 1000 nodes of the seed CNN, 30 rounds" || echo "the larger CNN, 100 nodes, $rounds rounds"), $(label "$b"):" | tee -a "$out"
      sed -n '/profile, /,/wall /p' "$tmp/profile.log" | tee -a "$out"
      rm -rf "$tmp/profile"
    done
  done
fi
# ---- 5. ResNet-20 on CIFAR-shaped data, against PyTorch ------------------------------------------
# CIFAR-10 binary files: 5 training batches of 2,048 images (make_cifar.py's 256, each file
# repeated 8 times: the pixels do not change the speed, and generating is quick), so that 16 and
# 64 nodes hold 640 and 160 images each, whole batches of 32 (a smaller last batch of an epoch
# would make rounds × 32 overstate the samples), and a test batch of 100
resnet_config() { # nodes rounds -> yaml
  cat <<YEOF
experiment:
  name: gpu_resnet20_$1
  dataset: cifar10
  data_dir: $tmp/c10
  data_split_type: random
  backend: cuda
  seed: 1
  graph: {num_nodes: $1, type: cycle}
  model: {name: resnet20, norm: group}
problem_configs:
  solo:
    train_batch_size: 32
    evaluate_frequency: $2
    evaluation: {test_samples: 100}
    optimizer_config: {alg_name: solo, outer_iterations: $2, optimizer: sgd, lr: 0.01}
YEOF
}
if want resnet; then
  c10=$tmp/c10/cifar-10-batches-bin
  mkdir -p "$c10"
  env -u LD_LIBRARY_PATH python3 tests/e2e/make_cifar.py "$c10" 256 100 || echo "make_cifar.py failed"
  for f in "$c10"/data_batch_*.bin; do
    for i in 1 2 3 4 5 6 7 8; do cat "$f"; done > "$tmp/batch.bin" && mv "$tmp/batch.bin" "$f"
  done
  resnet_rounds=$([ -n "$quick" ] && echo 5 || echo 20)
  for n in 16 64; do
    resnet_config $n $resnet_rounds > "$tmp/resnet_$n.yaml"
    base=
    for b in "${builds[@]}"; do
      "$b/dtrun" "$tmp/resnet_$n.yaml" --output-dir "$tmp/resnet" --quiet > "$tmp/resnet.log" 2>&1 \
        || echo "resnet20, $n nodes ($(label "$b")) failed: $(tail -3 "$tmp/resnet.log")"
      s=$(train_seconds "$tmp/resnet/solo_results.csv")
      r=$(awk -v r="$resnet_rounds" -v s="$s" 'BEGIN {print (s > 0) ? r * 32 / s : 0}')
      base=${base:-$r}
      printf 'resnet20 (group norm), %d nodes, %-24s %9.0f training samples/s per node (%s of the first; %d rounds trained in %.2f s)\n' \
        "$n" "$(label "$b")" "$r" "$(ratio "$base" "$r")" "$resnet_rounds" "${s:-0}" | tee -a "$out"
      rm -rf "$tmp/resnet"
    done
    # PyTorch with its own libraries, as in case 3
    env -u LD_LIBRARY_PATH python3 tests/bench/gpu_torch.py --model resnet20 --norm group --models $n --steps "$resnet_rounds" --batch 32 \
      | tee -a "$out"
    env -u LD_LIBRARY_PATH python3 tests/bench/gpu_torch.py --model resnet20 --norm group --models $n --steps "$resnet_rounds" --batch 32 \
      --fp32 --no-loop | tee -a "$out"
  done
  # with --profile, where a ResNet-20 round's time goes (16 nodes), for each build
  if [ -n "$profile" ] && want profile; then
    resnet_config 16 "$resnet_rounds" | sed 's/lr: 0.01}/lr: 0.01, profile: true}/' > "$tmp/profile_resnet.yaml"
    for b in "${builds[@]}"; do
      "$b/dtrun" "$tmp/profile_resnet.yaml" --output-dir "$tmp/profile" > "$tmp/profile.log" 2>&1 || echo "profile run resnet ($(label "$b")) failed"
      echo "---- ResNet-20 (group norm), 16 nodes, $resnet_rounds rounds, $(label "$b"):" | tee -a "$out"
      sed -n '/profile, /,/wall /p' "$tmp/profile.log" | tee -a "$out"
      rm -rf "$tmp/profile"
    done
  fi
fi
echo
echo "==== summary ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)) ===="
cat "$out"
