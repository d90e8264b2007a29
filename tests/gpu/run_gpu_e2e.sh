#!/usr/bin/env bash
# gpu suite, end to end: tests/e2e/small.yaml (every algorithm) with backend: cuda.
# - identical result files on a re-run, and for P = 1, 2 and 5 ranks sharing the GPU;
# - each problem's final mean top-1 within 0.02 of the CPU backend's (float rounding in another
#   order moves a 60-round run a little; a wrong op moves it far), reported per problem;
# - with experiment.tf32: identical files on a re-run and at P = 1 and 2, and each final top-1
#   within 0.05 of the CPU's (TF32 products round to about 1e-3).
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
  for f in graph.yaml split.csv dinno_consensus.csv dinno_models.npy; do
    cmp -s "$1/$f" "$2/$f" || { bad "$3: $f differs"; return; }
  done
  echo "ok: $3"
}
run() { # output-dir [mpiexec args...]
  local out=$1; shift
  "$@" "$dtrun" tests/e2e/small.yaml --set experiment.backend=cuda ${extra[@]+"${extra[@]}"} --output-dir "$tmp/$out" --quiet \
    > "$tmp/$out.log" 2>&1
}

extra=()
run g1
rc=$?
if [ $rc = 2 ] && grep -q "backend" "$tmp/g1.log"; then echo "SKIP: $(grep -m1 backend "$tmp/g1.log")"; exit 77; fi
[ $rc = 0 ] || { bad "P=1 on the GPU: exit $rc: $(tail -3 "$tmp/g1.log")"; exit 1; }
run g1b && same_results "$tmp/g1" "$tmp/g1b" "re-run on the GPU" || bad "re-run failed: $(tail -3 "$tmp/g1b.log")"
for P in 2 5; do
  run g$P "$mpiexec" --oversubscribe -n $P && same_results "$tmp/g1" "$tmp/g$P" "P=1 vs P=$P on the GPU" \
    || bad "P=$P on the GPU failed: $(tail -3 "$tmp/g$P.log")"
done
"$dtrun" tests/e2e/small.yaml --set experiment.backend=cpu --output-dir "$tmp/c1" --quiet > "$tmp/c1.log" 2>&1 || bad "CPU run failed"
# final round's mean top-1 per problem, GPU (folder $1) against CPU, within $2
top1_close() {
  for f in "$tmp/$1"/*_results.csv; do
    b=$(basename "$f" _results.csv)
    awk -F, -v name="$b" -v tol="$2" -v what="$1" 'FNR == 1 { for (i = 1; i <= NF; i++) if ($i == "top1_accuracy") c = i; next }
      { if ($1 != last[FILENAME]) { s[FILENAME] = 0; n[FILENAME] = 0; last[FILENAME] = $1 } s[FILENAME] += $c; n[FILENAME]++ }
      END { k = 0; for (f in s) m[k++] = s[f] / n[f]; d = m[0] - m[1]; if (d < 0) d = -d;
            printf "%-12s %s top1 gpu-cpu |diff| %.4f\n", name, what, d; exit (d > tol) }' "$f" "$tmp/c1/$b"_results.csv \
      || bad "$b ($1): final top-1 differs from the CPU's by more than $2"
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
[ $fail = 0 ] && echo "gpu e2e: all passed" || echo "gpu e2e: $fail failed"
exit $((fail > 0))
