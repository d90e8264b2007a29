#!/usr/bin/env bash
# The exact methods' cost per round (issue 61): EXTRA, NIDS, D² and BEER beside DSGD and DSGT
# (one gradient and one exchange per round: the floor they are measured against), on the seed CNN
# over MNIST (hetero split, 8-node wheel, minibatch 64: compute-bound) and on the convex problem
# (logreg, full batch, 8-node wheel: overhead-bound). Each problem's training time per round is
# its summary.yaml's wall_seconds − time_eval over its rounds. The runs alternate ROUNDS times,
# two builds A and B alternating too when both are given; the table gives the median and the
# min–max of each, B's median against A's, and flags a spread above 20%.
# usage: tests/bench/exact.sh [BUILD_A [BUILD_B]] [ROUNDS]   (run anywhere; default: build, 5)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_args 5 "$@"
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OPENBLAS_NUM_THREADS=1

methods="dsgd dsgt extra nids d2 beer"
config() { # workload -> YAML
  local data rounds opts
  if [ "$1" = cnn ]; then
    data='dataset: mnist, data_split_type: hetero, model: {num_filters: 3, kernel_size: 5, linear_width: 64}' rounds=200
    opts='train_batch_size: 64'
  else
    data='dataset: synthetic, synthetic: {samples: 2000, features: 20}, data_split_type: hetero' rounds=10000
    opts='full_batch: true, l2: 0.01'
  fi
  echo "experiment: {name: exact_$1, seed: 1, graph: {type: wheel, num_nodes: 8}, $data}"
  echo "problem_configs:"
  for m in $methods; do
    local alg="{alg_name: $m, outer_iterations: $rounds, alpha: 0.01}"
    [ $m = dsgd ] && alg="{alg_name: dsgd, outer_iterations: $rounds, alpha0: 0.01}"
    [ $m = beer ] && alg="{alg_name: beer, outer_iterations: $rounds, alpha: 0.01, compression: {operator: top_k, ratio: 0.1}}"
    echo "  $m: {$opts, evaluate_frequency: $rounds, optimizer_config: $alg}"
  done
}
for w in cnn convex; do config $w > "$tmp/$w.yaml"; done

# per_round SUMMARY -> "problem ms_per_round" lines
per_round() {
  awk '/^- problem_name:/ {p = $3} /^  rounds:/ {r = $2} /^  wall_seconds:/ {t = $2}
       /^  time_eval:/ {printf "%s %.4f\n", p, 1000 * (t - $2) / r}' "$1"
}
for r in $(seq "$rounds"); do
  for b in "${!builds[@]}"; do
    for w in cnn convex; do
      "${builds[$b]}/dtrun" "$tmp/$w.yaml" --output-dir "$tmp/out" --quiet > /dev/null
      per_round "$tmp/out/summary.yaml" | sed "s/^/$w $b /" >> "$tmp/times"
      rm -rf "$tmp/out"
    done
  done
  echo "round $r of $rounds done" >&2
done

echo "ms per training round (median [min-max] of $rounds alternated runs; 8-node wheel, OMP_NUM_THREADS=$OMP_NUM_THREADS)"
for b in "${!builds[@]}"; do echo "  build $(printf "\\x$(printf %x $((65 + b)))"): ${builds[$b]}"; done
/usr/bin/env python3 - "$tmp/times" "${#builds[@]}" "$root/tests/bench" $methods <<'EOF'
import statistics, sys
times, nb, methods = sys.argv[1], int(sys.argv[2]), sys.argv[4:]
sys.path.insert(0, sys.argv[3])
from spread import spread
t = {}
for line in open(times):
    w, b, m, ms = line.split()
    t.setdefault((w, int(b), m), []).append(float(ms))
for w in ("cnn", "convex"):
    print(f"{w}:")
    ref = {b: statistics.median(t[(w, b, "dsgd")]) for b in range(nb)}
    for m in methods:
        cols = []
        for b in range(nb):
            med, lo, hi, flag = spread(t[(w, b, m)])
            cols.append(f"{med:8.3f} [{lo:.3f}-{hi:.3f}] {med / ref[b]:5.2f}x dsgd{flag}")
        ab = ""
        if nb == 2:
            a, b = statistics.median(t[(w, 0, m)]), statistics.median(t[(w, 1, m)])
            ab = f"   B/A {b / a:5.3f}"
        print(f"  {m:6s} " + "   ".join(cols) + ab)
EOF
