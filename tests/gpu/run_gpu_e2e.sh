#!/usr/bin/env bash
# gpu suite, end to end: tests/e2e/small.yaml (every algorithm) with backend: cuda.
# - identical result files on a re-run, without CUDA graphs (DT_CUDA_GRAPHS=0), and for P = 1, 2
#   and 5 ranks sharing the GPU;
# - each problem's final mean top-1 within 0.02 of the CPU backend's (float rounding in another
#   order moves a 60-round run a little; a wrong op moves it far), reported per problem;
# - with experiment.tf32: identical files on a re-run and at P = 1 and 2, and each final top-1
#   within 0.05 of the CPU's (TF32 products round to about 1e-3);
# - a residual network with batch norm (tests/e2e/resnet.yaml on CIFAR-10-format files written
#   here: identity and projection skips, running statistics saved with the models, augmentation,
#   buffers: mix, mean-model and sampled evaluation): identical files on a re-run and at P = 1
#   and 2, the first evaluation (the same initial weights) within 0.02 of the CPU's and each
#   final top-1 within 0.15 (a 40-round run of a small network on 300 images amplifies rounding);
# - LeNet-5 on CIFAR-10-format files (tests/e2e/cifar.yaml, the e2e suite's CIFAR run): identical
#   files on a re-run and at P = 1 and 2, the first evaluation within 0.02 of the CPU's and the
#   final top-1 within 0.05.
# Skipped (77) without data/mnist, without the CUDA backend, or without a usable GPU.
# usage: run_gpu_e2e.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
dtrun=$(realpath "$1") mpiexec=$2
cd "$3" || exit 1
[ -e data/mnist/train-images-idx3-ubyte ] || [ -e data/mnist/train-images-idx3-ubyte.gz ] || { echo "SKIP: no data/mnist: run scripts/setup.sh"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../checks.sh" # fail, bad, strip_times
same_results() { # dirA dirB what
  for f in "$1"/*_results.csv; do
    b=$(basename "$f")
    cmp -s <(strip_times "$f") <(strip_times "$2/$b") || { bad "$3: $b differs"; diff <(strip_times "$f") <(strip_times "$2/$b") | head -4; return; }
  done
  for f in "${files[@]}"; do
    [ -e "$1/$f" ] && [ -e "$2/$f" ] || { bad "$3: $f missing"; return; }
    cmp -s "$1/$f" "$2/$f" || { bad "$3: $f differs"; return; }
  done
  echo "ok: $3"
}
cfg=tests/e2e/small.yaml files=(graph.yaml split.csv dinno_consensus.csv dinno_models.npy)
run() { # output-dir [mpiexec args...]
  local out=$1; shift
  "$@" "$dtrun" "$cfg" --set experiment.backend=cuda ${extra[@]+"${extra[@]}"} --output-dir "$tmp/$out" --quiet \
    > "$tmp/$out.log" 2>&1
}

extra=()
run g1
rc=$?
if [ $rc = 2 ] && grep -q "backend" "$tmp/g1.log"; then echo "SKIP: $(grep -m1 backend "$tmp/g1.log")"; exit 77; fi
[ $rc = 0 ] || { bad "P=1 on the GPU: exit $rc: $(tail -3 "$tmp/g1.log")"; exit 1; }
run g1b && same_results "$tmp/g1" "$tmp/g1b" "re-run on the GPU" || bad "re-run failed: $(tail -3 "$tmp/g1b.log")"
# model calls replay captured CUDA graphs: launch by launch, the same files
DT_CUDA_GRAPHS=0 run g1n && same_results "$tmp/g1" "$tmp/g1n" "without CUDA graphs (DT_CUDA_GRAPHS=0)" \
  || bad "the run without graphs failed: $(tail -3 "$tmp/g1n.log")"
for P in 2 5; do
  run g$P "$mpiexec" --oversubscribe -n $P && same_results "$tmp/g1" "$tmp/g$P" "P=1 vs P=$P on the GPU" \
    || bad "P=$P on the GPU failed: $(tail -3 "$tmp/g$P.log")"
done
"$dtrun" "$cfg" --set experiment.backend=cpu --output-dir "$tmp/c1" --quiet > "$tmp/c1.log" 2>&1 || bad "CPU run failed"
# a round's mean top-1 over the nodes evaluated, GPU against CPU: |difference| (round: the last,
# or with `first` 1 the first evaluation)
top1_diff() { # gpu_csv cpu_csv first
  awk -F, -v first="$3" 'FNR == 1 { for (i = 1; i <= NF; i++) if ($i == "top1_accuracy") c = i; r0[FILENAME] = ""; next }
    $c == "" || $c == "nan" { next }
    { if (r0[FILENAME] == "") r0[FILENAME] = $1
      if (first && $1 != r0[FILENAME]) next
      if ($1 != last[FILENAME]) { s[FILENAME] = 0; n[FILENAME] = 0; last[FILENAME] = $1 } s[FILENAME] += $c; n[FILENAME]++ }
    END { k = 0; for (f in s) m[k++] = s[f] / n[f]; d = m[0] - m[1]; printf "%.4f\n", d < 0 ? -d : d }' "$1" "$2"
}
# each problem's final top-1 of run folder $1 within $2 of the CPU's (c1), or the first
# evaluation's with $3 = 1; problems: the rest of the arguments, or every one
top1_close() { # folder tolerance [first [problem...]]
  local folder=$1 tol=$2 first=${3:-0} probs=("${@:4}")
  [ ${#probs[@]} -gt 0 ] || for f in "$tmp/$folder"/*_results.csv; do probs+=("$(basename "$f" _results.csv)"); done
  for b in "${probs[@]}"; do
    d=$(top1_diff "$tmp/$folder/${b}_results.csv" "$tmp/c1/${b}_results.csv" "$first")
    printf '%-14s %s top1 gpu-cpu |diff| %s%s\n' "$b" "$folder" "$d" "$([ "$first" = 1 ] && echo ' (first evaluation)')"
    awk -v d="$d" -v t="$tol" 'BEGIN { exit !(d != "" && d <= t) }' || bad "$b ($folder): top-1 differs from the CPU's by more than $tol"
  done
}
top1_close g1 0.02
extra=(--set experiment.tf32=true)
if run t1 && run t1b && run t2 "$mpiexec" --oversubscribe -n 2; then
  same_results "$tmp/t1" "$tmp/t1b" "tf32: re-run on the GPU"
  same_results "$tmp/t1" "$tmp/t2" "tf32: P=1 vs P=2 on the GPU"
  top1_close t1 0.05
else
  bad "tf32 runs failed: $(tail -3 "$tmp/t1.log" "$tmp/t1b.log" "$tmp/t2.log" 2>/dev/null)"
fi
# A config on generated CIFAR files ($cfg, $files, $extra): runs TAG1, TAG1b and TAG2 (P = 2) on
# the GPU give the same files; against the CPU's run, the first evaluation within FIRST_TOL and
# the final top-1 within FINAL_TOL (of the problems named, else of every one).
cifar_case() { # what tag first_tol final_tol [problem...]
  local what=$1 tag=$2 first_tol=$3 final_tol=$4
  shift 4
  rm -rf "$tmp/c1"
  if ! run "${tag}1" || ! run "${tag}1b" || ! run "${tag}2" "$mpiexec" --oversubscribe -n 2; then
    bad "$what runs failed: $(tail -3 "$tmp/${tag}1.log" "$tmp/${tag}1b.log" "$tmp/${tag}2.log" 2>/dev/null)"
    return
  fi
  same_results "$tmp/${tag}1" "$tmp/${tag}1b" "$what: re-run on the GPU"
  same_results "$tmp/${tag}1" "$tmp/${tag}2" "$what: P=1 vs P=2 on the GPU"
  if "$dtrun" "$cfg" --set experiment.backend=cpu --output-dir "$tmp/c1" --quiet > "$tmp/c1.log" 2>&1; then
    top1_close "${tag}1" "$first_tol" 1
    top1_close "${tag}1" "$final_tol" 0 "$@"
  else
    bad "$what: CPU run failed: $(tail -3 "$tmp/c1.log")"
  fi
}
# ---- a residual network with batch norm ----------------------------------------------------------
mkdir -p "$tmp/c10/cifar-10-batches-bin"
python3 tests/e2e/make_cifar.py "$tmp/c10/cifar-10-batches-bin" 60 100 || bad "make_cifar.py failed"
sed "s|data_dir: cifar_data.*|data_dir: $tmp/c10|" tests/e2e/resnet.yaml > "$tmp/resnet.yaml"
cfg=$tmp/resnet.yaml files=(graph.yaml split.csv dsgd_models.npy gossip_models.npy mixed_buffers_models.npy mean_model_models.npy)
extra=()
cifar_case resnet r 0.02 0.15 dsgd gossip mixed_buffers
# ---- the e2e suite's CIFAR run: LeNet-5 on CIFAR-10-format files, 4 nodes ------------------------
cifar_config tests/e2e/cifar.yaml "$tmp/cifar.yaml" "$tmp/c10l"
cfg=$tmp/cifar.yaml files=(graph.yaml split.csv dsgd_models.npy)
extra=(--set experiment.save_models=true)
cifar_case cifar l 0.02 0.05
[ $fail = 0 ] && echo "gpu e2e: all passed" || echo "gpu e2e: $fail failed"
exit $((fail > 0))
