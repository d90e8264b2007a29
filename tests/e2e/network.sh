#!/usr/bin/env bash
# The simulated clock (experiment.network) end to end: closed forms (synchronous DSGD on a ring
# takes rounds x (step + latency + bytes/bandwidth), DSGT the same with its two vectors and its
# start-up gradient, centralized a round trip through the centre); a straggler paces the ring;
# algorithms with stragglers, jitter, spread links and two host classes give
# the same files at P = 1, 2, 3 and 5, on an archived re-run and after a kill and resume
# (tests/e2e/network.yaml: every way an algorithm sends);
# `compare --x sim_time` and its targets; without network: no sim_time column. Skipped (77)
# without data/mnist.
# usage: network.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_begin "$@"

# (1) closed forms on the convex problem: speed 1000 samples/s, batch 8, latency 1 ms, 1 MB/s,
# d = 44 floats (176 bytes)
cat > "$tmp/closed.yaml" <<'YAML'
experiment:
  name: closed
  dataset: synthetic
  synthetic: {samples: 400, features: 10}
  seed: 3
  graph: {num_nodes: 5, type: cycle}
  network: {speed: 1000, latency: 0.001, bandwidth: 1e6}
problem_configs:
  dsgd:
    train_batch_size: 8
    evaluate_frequency: 25
    optimizer_config: {alg_name: dsgd, outer_iterations: 100, alpha0: 0.1}
  dsgt:
    train_batch_size: 8
    evaluate_frequency: 25
    optimizer_config: {alg_name: dsgt, outer_iterations: 100, alpha: 0.1}
  centralized:
    train_batch_size: 8
    evaluate_frequency: 25
    optimizer_config: {alg_name: centralized, outer_iterations: 100, lr: 0.1}
YAML
"$dtrun" "$tmp/closed.yaml" --output-dir "$tmp/closed" --quiet > "$tmp/closed.log" 2>&1 || bad "closed-form run: $(tail -3 "$tmp/closed.log")"
# sim_time(node, round k) for each problem; every row must match to 1e-12 relative
check_closed() { # problem awk-expression-of-k-and-node
  awk -F, -v what="$1" "NR == 1 {for (i = 1; i <= NF; i++) if (\$i == \"sim_time\") c = i; next}
       {k = \$1; node = \$2; want = $2; got = \$c; if (want == 0 ? got != 0 : (got - want) / want > 1e-12 || (want - got) / want > 1e-12)
          {print what \": round \" k \" node \" node \" sim_time \" got \", expected \" want; bad = 1}; rows++}
       END {exit bad || rows != 25}" "$tmp/closed/$1_results.csv" && ok || bad "$1's simulated clock is not the closed form"
}
check_closed dsgd "k * (0.008 + 0.001 + 176 / 1e6)"
check_closed dsgt "k == 0 ? 0.008 : 0.008 + k * (0.008 + 0.001 + 352 / 1e6)" # y0 = ∇f(x0) before round 0
check_closed centralized "k * (0.008 + 2 * (0.001 + 176 / 1e6)) - (node == 0 && k > 0 ? 0.001 + 176 / 1e6 : 0)"
grep -q "sim_time: {min: " "$tmp/closed/summary.yaml" && ok || bad "summary.yaml has no sim_time"

# `dtrun check` says what was drawn
"$dtrun" check "$tmp/closed.yaml" --set experiment.network.stragglers=0.2 > "$tmp/check.txt" 2>&1
grep -q "^# network (simulated clock): node speeds 100 to 1000 samples/s; 1 straggler (10 times slower): [0-4]$" "$tmp/check.txt" \
  && ok || bad "check does not describe the network: $(grep network "$tmp/check.txt")"

# (2) one straggler (10x slower) paces the whole ring: the slowest clock after 100 rounds lies
# between its compute alone and its compute plus one message per round, and no node is more than
# two rounds (its distance from the straggler) behind it
"$dtrun" "$tmp/closed.yaml" --set experiment.network.stragglers=0.2 --set problem_configs.dsgd.optimizer_config.outer_iterations=100 \
  --output-dir "$tmp/slow" --quiet > "$tmp/slow.log" 2>&1 || bad "straggler run: $(tail -3 "$tmp/slow.log")"
awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "sim_time") c = i; next}
         $1 == 100 {if ($c > m) m = $c; if (min == "" || $c < min) min = $c}
         END {exit !(m >= 100 * 0.08 && m <= 100 * (0.08 + 0.001176) && min >= 100 * 0.08 - 2 * 0.081176)}' "$tmp/slow/dsgd_results.csv" \
  && ok || bad "a straggler does not pace the ring: $(awk -F, '$1 == 100' "$tmp/slow/dsgd_results.csv" | tr '\n' ' ')"

# (3) no network: no sim_time anywhere
grep -v "network:" "$tmp/closed.yaml" > "$tmp/off.yaml"
"$dtrun" "$tmp/off.yaml" --output-dir "$tmp/off" --quiet > "$tmp/off.log" 2>&1 && ok || bad "a run without network failed: $(tail -3 "$tmp/off.log")"
! grep -q sim_time "$tmp/off/dsgd_results.csv" "$tmp/off/summary.yaml" "$tmp/off/config.yaml" && ok || bad "a run without network records sim_time"

# (4) every way of sending (tests/e2e/network.yaml), every kind of spread, at P = 1, 2, 3, 5,
# re-run from its archive
cp tests/e2e/network.yaml "$tmp/net.yaml"
ranks_and_rerun "$tmp/net.yaml" 2 "network"
for np in 3 5; do
  "$mpiexec" --oversubscribe -n $np "$dtrun" "$tmp/net.yaml" --output-dir "$tmp/q$np" --quiet > "$tmp/q$np.log" 2>&1 \
    || bad "network at P=$np failed: $(tail -3 "$tmp/q$np.log")"
  same_results "$tmp/p1" "$tmp/q$np" "network P=1 vs P=$np"
done
[ "$(grep -c '      sim_time: {min' "$tmp/p1/summary.yaml")" = "$(grep -c alg_name: "$tmp/net.yaml")" ] && ok || bad "not every problem has its sim_time"

# the seed reference's sequential sweep goes in one stage per rank; its clock must not know
seq=(--set problem_configs.dsgd.optimizer_config.update_order=sequential --set experiment.network.stragglers=0.2
     --set experiment.network.link_spread=0.5)
"$dtrun" "$tmp/closed.yaml" "${seq[@]}" --output-dir "$tmp/seq1" --quiet > "$tmp/seq1.log" 2>&1 || bad "sequential at P=1: $(tail -3 "$tmp/seq1.log")"
"$mpiexec" --oversubscribe -n 3 "$dtrun" "$tmp/closed.yaml" "${seq[@]}" --output-dir "$tmp/seq3" --quiet > "$tmp/seq3.log" 2>&1 \
  || bad "sequential at P=3: $(tail -3 "$tmp/seq3.log")"
same_results "$tmp/seq1" "$tmp/seq3" "network, a sequential sweep, P=1 vs P=3"

# (5) compare on the simulated clock: targets in simulated seconds; a run without a clock refused
"$dtrun" compare "$tmp/p1" --x sim_time --target 0.5 > "$tmp/cmp.txt" 2>&1 && grep -q "sim_time@0.5" "$tmp/cmp.txt" && ok \
  || bad "compare --x sim_time: $(cat "$tmp/cmp.txt")"
"$dtrun" compare "$tmp/off" --x sim_time > "$tmp/cmp2.txt" 2>&1
[ $? = 2 ] && grep -q "has no simulated clock" "$tmp/cmp2.txt" && ok || bad "compare --x sim_time without a clock: $(cat "$tmp/cmp2.txt")"

# (6) killed at P = 3 and resumed at P = 2: the clocks are in the checkpoint
rm -rf "$tmp/ref"
killed_resumed "$tmp/net.yaml" 3 "network"

echo "network: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
