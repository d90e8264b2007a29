#!/usr/bin/env bash
# The asynchronous engine's speed (optimizers/async.h): AD-PSGD, and asynchronous Downpour (a
# centre with node 0), on N = 100 and 1,000 nodes of a ring, logistic regression on synthetic
# data (44 parameters: the engine's own cost, not the model's, dominates), 200 rounds with
# stragglers and jitter; events per second of the rounds' wall time (every node's step ends and
# message arrivals), from `profile: true`. The per-event cost must not grow with N: the schedule
# is a heap (O(log N) per event). After one warm-up run per build, the runs alternate ROUNDS
# times (two builds A and B alternating too when both are given); the table gives the median and
# the min–max of each, B's median against A's, and flags a spread above 20%.
# usage: tests/bench/async.sh [BUILD_A [BUILD_B]] [ROUNDS]   (run anywhere; default: build, 5)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_args 5 "$@"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 100 1000; do
  cat > "$tmp/a$n.yaml" <<YAML
experiment:
  name: bench_async
  dataset: synthetic
  synthetic: {samples: $((n * 50)), features: 10}
  writeout: false
  seed: 1
  graph: {num_nodes: $n, type: cycle}
  network: {speed: 1000, stragglers: 0.1, slowdown: 5, jitter: 0.3, latency: 0.0005}
problem_configs:
  adpsgd:
    train_batch_size: 8
    evaluate_frequency: 1000
    metrics: [top1_accuracy]
    optimizer_config: {alg_name: adpsgd, outer_iterations: 200, lr: 0.1, profile: true}
  downpour:
    train_batch_size: 8
    evaluate_frequency: 1000
    metrics: [top1_accuracy]
    optimizer_config: {alg_name: downpour, asynchronous: true, outer_iterations: 200, lr: 0.01, profile: true}
YAML
done

# run BUILD_INDEX N -> "N algorithm events_per_second" lines (the profile's events line, in the
# problems' order)
run() {
  "${builds[$1]}/dtrun" "$tmp/a$2.yaml" > "$tmp/log"
  grep -o 'events  *[0-9]*, [0-9.e+]* per second' "$tmp/log" | awk -v n="$2" '{split("adpsgd downpour", alg); print n, alg[NR], $3}'
}
for b in "${!builds[@]}"; do for n in 100 1000; do run "$b" $n > /dev/null; done; done # warm-up
for r in $(seq "$rounds"); do
  for b in "${!builds[@]}"; do
    for n in 100 1000; do run "$b" $n | sed "s/^/$b /" >> "$tmp/rates"; done
  done
  echo "round $r of $rounds done" >&2
done

echo "events per second of the rounds' wall time (median [min-max] of $rounds alternated runs)"
for b in "${!builds[@]}"; do echo "  build $(printf "\\x$(printf %x $((65 + b)))"): ${builds[$b]}"; done
/usr/bin/env python3 - "$tmp/rates" "${#builds[@]}" "$root/tests/bench" <<'EOF'
import statistics, sys
rates, nb = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
from spread import spread
t = {}
for line in open(rates):
    b, n, alg, v = line.split()
    t.setdefault((int(n), alg, int(b)), []).append(float(v))
for n in (100, 1000):
    for alg in ("adpsgd", "downpour"):
        cols = []
        for b in range(nb):
            med, lo, hi, flag = spread(t[(n, alg, b)])
            cols.append(f"{med:10.4g} [{lo:.4g}-{hi:.4g}]{flag}")
        ab = f"   B/A {statistics.median(t[(n, alg, 1)]) / statistics.median(t[(n, alg, 0)]):.3f}" if nb == 2 else ""
        print(f"N = {n:4d}  {alg:9s}" + "   ".join(cols) + ab)
EOF
