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
# sim_time(node, round k) for each problem, from results.sqlite (full doubles; the CSV prints 9
# digits): every row must match to 1e-12 relative
check_closed() { # problem python-expression-of-k-and-node
  python3 - "$tmp/closed/results.sqlite" "$1" "$2" <<'PY' && ok || bad "$1's simulated clock is not the closed form"
import sqlite3, sys
db, problem, expr = sys.argv[1:]
rows = sqlite3.connect(db).execute("SELECT e.round, e.node, e.sim_time FROM evaluations e JOIN problems p "
                                   "ON e.run = p.run AND e.problem = p.problem WHERE p.problem_name = ?", (problem,)).fetchall()
assert len(rows) == 25, rows
for k, node, got in rows:
    want = eval(expr, {"k": k, "node": node})
    if abs(got - want) > 1e-12 * max(abs(want), 1e-300):
        sys.exit("%s: round %d node %d sim_time %.17g, expected %.17g" % (problem, k, node, got, want))
PY
}
check_closed dsgd "k * (0.008 + 0.001 + 176 / 1e6)"
check_closed dsgt "0.008 + k * (0.008 + 0.001 + 352 / 1e6)" # y0 = ∇f(x0) before round 0
check_closed centralized "k * (0.008 + 2 * (0.001 + 176 / 1e6)) - (0.001 + 176 / 1e6 if node == 0 and k > 0 else 0)"
grep -q "sim_time: {min: " "$tmp/closed/summary.yaml" && ok || bad "summary.yaml has no sim_time"
# each link has the whole bandwidth (docs/network.md): on the complete graph, where each node
# sends to 4 neighbours, DSGD's round costs what it costs on the ring
mv "$tmp/closed" "$tmp/closed_ring"
"$dtrun" "$tmp/closed.yaml" --set experiment.graph.type=complete --output-dir "$tmp/closed" --quiet > "$tmp/closed.log" 2>&1 \
  || bad "closed-form run on the complete graph: $(tail -3 "$tmp/closed.log")"
check_closed dsgd "k * (0.008 + 0.001 + 176 / 1e6)"
rm -rf "$tmp/closed" && mv "$tmp/closed_ring" "$tmp/closed"

# `dtrun check` says what was drawn
"$dtrun" check "$tmp/closed.yaml" --set experiment.network.stragglers=0.2 > "$tmp/check.txt" 2>&1
grep -q "^# network (simulated clock): node speeds 100 to 1000 samples/s; 1 straggler (10 times slower): [0-4]$" "$tmp/check.txt" \
  && ok || bad "check does not describe the network: $(grep network "$tmp/check.txt")"

# the evaluation lines' header names exactly their columns (the clock's included)
"$dtrun" "$tmp/closed.yaml" --set 'problem_configs.dsgd.metrics=[top1_accuracy]' --output-dir "$tmp/head" > "$tmp/head.log" 2>&1
grep -qx "dsgd: min-max over the nodes of: top-1 accuracy | simulated seconds (the slowest node)" "$tmp/head.log" && ok \
  || bad "the evaluation header: $(grep 'min-max' "$tmp/head.log" | head -1)"

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
# speed: 0 written out (a sweep's point without the clock) turns it off, other keys and all, and
# its archived config re-runs
"$dtrun" "$tmp/closed.yaml" --set experiment.network.speed=0 --set experiment.network.stragglers=0.2 --output-dir "$tmp/zero" --quiet \
  > "$tmp/zero.log" 2>&1 && ! grep -q sim_time "$tmp/zero/dsgd_results.csv" && ok || bad "speed 0: $(tail -3 "$tmp/zero.log")"
"$dtrun" "$tmp/zero/config.yaml" --output-dir "$tmp/zero2" --quiet > "$tmp/zero2.log" 2>&1 || bad "speed 0's archive: $(tail -3 "$tmp/zero2.log")"
cmp -s <(strip_times "$tmp/off/dsgd_results.csv") <(strip_times "$tmp/zero/dsgd_results.csv") && ok || bad "speed 0 changes the results"

# a database from before sim_time (the column dropped) is migrated by the next run into its folder,
# and compare reads it either way
cp -r "$tmp/off" "$tmp/old"
python3 -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute('ALTER TABLE evaluations DROP COLUMN sim_time'); db.commit()" \
  "$tmp/old/results.sqlite" && ok || bad "could not drop sim_time"
"$dtrun" compare "$tmp/old" > "$tmp/old.cmp" 2>&1 && grep -q dsgd "$tmp/old.cmp" && ok || bad "compare of an old database: $(cat "$tmp/old.cmp")"
"$dtrun" "$tmp/closed.yaml" --output-dir "$tmp/old" --force --quiet > "$tmp/old.log" 2>&1 || bad "a run into an old database: $(tail -3 "$tmp/old.log")"
python3 -c "import sqlite3, sys; n = sqlite3.connect(sys.argv[1]).execute('SELECT count(sim_time) FROM evaluations').fetchone()[0]; sys.exit(n != 75)" \
  "$tmp/old/results.sqlite" && ok || bad "the migrated database lacks the run's sim_time rows"

# (4) every way of sending (tests/e2e/network.yaml), every kind of spread, at P = 1, 2, 3, 5,
# re-run from its archive
cp tests/e2e/network.yaml "$tmp/net.yaml"
# every clock to the last bit (the CSV prints 9 digits)
same_clocks() { # a b what
  python3 - "$1/results.sqlite" "$2/results.sqlite" <<'PY' && ok || bad "$3: the clocks differ"
import sqlite3, sys
q = "SELECT problem, round, node, sim_time FROM evaluations ORDER BY problem, round, node"
a, b = (sqlite3.connect(f).execute(q).fetchall() for f in sys.argv[1:])
sys.exit(0 if a == b and a and all(r[3] is not None for r in a) else 1)
PY
}
ranks_and_rerun "$tmp/net.yaml" 2 "network"
same_clocks "$tmp/p1" "$tmp/p2" "network P=1 vs P=2"
for np in 3 5; do
  "$mpiexec" --oversubscribe -n $np "$dtrun" "$tmp/net.yaml" --output-dir "$tmp/q$np" --quiet > "$tmp/q$np.log" 2>&1 \
    || bad "network at P=$np failed: $(tail -3 "$tmp/q$np.log")"
  same_results "$tmp/p1" "$tmp/q$np" "network P=1 vs P=$np"
  same_clocks "$tmp/p1" "$tmp/q$np" "network P=1 vs P=$np"
done
[ "$(grep -c '^    sim_time: {min' "$tmp/p1/summary.yaml")" = "$(grep -c alg_name: "$tmp/net.yaml")" ] && ok || bad "not every problem has its sim_time"

# the seed reference's sequential sweep goes in one stage per rank; its clock must not know
seq=(--set problem_configs.dsgd.optimizer_config.update_order=sequential --set problem_configs.dsgt.optimizer_config.update_order=sequential
     --set experiment.network.stragglers=0.2 --set experiment.network.link_spread=0.5)
"$dtrun" "$tmp/closed.yaml" "${seq[@]}" --output-dir "$tmp/seq1" --quiet > "$tmp/seq1.log" 2>&1 || bad "sequential at P=1: $(tail -3 "$tmp/seq1.log")"
"$mpiexec" --oversubscribe -n 3 "$dtrun" "$tmp/closed.yaml" "${seq[@]}" --output-dir "$tmp/seq3" --quiet > "$tmp/seq3.log" 2>&1 \
  || bad "sequential at P=3: $(tail -3 "$tmp/seq3.log")"
same_results "$tmp/seq1" "$tmp/seq3" "network, a sequential sweep, P=1 vs P=3"
same_clocks "$tmp/seq1" "$tmp/seq3" "a sequential sweep, P=1 vs P=3"

# (5) compare on the simulated clock: targets in simulated seconds; a run without a clock refused
"$dtrun" compare "$tmp/p1" --x sim_time --target 0.5 > "$tmp/cmp.txt" 2>&1 && grep -q "sim_time@0.5" "$tmp/cmp.txt" && ok \
  || bad "compare --x sim_time: $(cat "$tmp/cmp.txt")"
"$dtrun" compare "$tmp/off" --x sim_time > "$tmp/cmp2.txt" 2>&1
[ $? = 2 ] && grep -q "has no simulated clock" "$tmp/cmp2.txt" && ok || bad "compare --x sim_time without a clock: $(cat "$tmp/cmp2.txt")"

# (6) killed at P = 3 and resumed at P = 2: the clocks are in the checkpoint
rm -rf "$tmp/ref"
killed_resumed "$tmp/net.yaml" 3 "network"
same_clocks "$tmp/ref" "$tmp/k" "network killed at P=3, resumed at P=2"

echo "network: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
