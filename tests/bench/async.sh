#!/usr/bin/env bash
# The asynchronous engine's speed (optimizers/async.h): AD-PSGD, and asynchronous Downpour (a
# centre with node 0), on N = 100 and 1,000 nodes of a ring, logistic regression on synthetic data (44 parameters: the engine's own cost, not the
# model's, dominates), 20 simulated rounds with stragglers and jitter; events per second of wall
# time (every node's step ends and message arrivals), from `profile: true`. The per-event cost
# must not grow with N: the schedule is a heap (O(log N) per event).
# usage: tests/bench/async.sh BUILD_DIR
set -eu
build=${1:-build}
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
  "$build/dtrun" "$tmp/a$n.yaml" > "$tmp/a$n.log"
  grep -o 'events .*' "$tmp/a$n.log" | paste - - | awk -v n="$n" -F'\t' '{printf "N = %4d: adpsgd %s\nN = %4d: downpour %s\n", n, $1, n, $2}'
done
