#!/usr/bin/env bash
# experiment.network's faults end to end (tests/e2e/lossy.yaml: every algorithm that runs under
# them, with bursty loss, failing links and churn, on the simulated clock): the same files at
# P = 1, 2, 3 and 5, on an archived re-run and after a kill at P = 3 and a resume at P = 2; every
# message sent is lost or received, at every evaluation; faults that lose nothing change no
# metric; an offline node does not train; `check` describes the faults; algorithms without a
# rule for a missing message, and impossible bursts, are refused before anything runs. Then the
# asynchronous algorithms (tests/e2e/async.yaml) alike, with and without faults.
# Skipped (77) without data/mnist.
# usage: lossy.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_begin "$@"

# every_rank_count CONFIG AT WHAT: the same files at P = 1, 2, 3 and 5, on an archived re-run,
# and killed at P = 3 (in problem AT or later) and resumed at P = 2 (into $tmp/p1, q3, q5, k, ref)
every_rank_count() {
  ranks_and_rerun "$1" 2 "$3"
  for np in 3 5; do
    "$mpiexec" --oversubscribe -n $np "$dtrun" "$1" --output-dir "$tmp/q$np" --quiet > "$tmp/q$np.log" 2>&1 \
      || bad "$3 at P=$np failed: $(tail -3 "$tmp/q$np.log")"
    same_results "$tmp/p1" "$tmp/q$np" "$3 P=1 vs P=$np"
  done
  killed_resumed "$1" "$2" "$3"
}
cp tests/e2e/lossy.yaml "$tmp/lossy.yaml"
# (1) the same files for every rank count, on a re-run, and after a kill and a resume
every_rank_count "$tmp/lossy.yaml" 3 "faults"

# (2) the counters: at every evaluation, the messages sent = lost + received over all nodes, some
# of each, and summary.yaml's totals are the last evaluation's
python3 - "$tmp/p1/results.sqlite" "$tmp/p1/summary.yaml" <<'PY' && ok || bad "the message counters do not add up"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT problem, round, sum(messages_sent), sum(messages_lost), sum(messages_received) FROM evaluations "
                  "GROUP BY problem, round").fetchall()
assert len(rows) == 51, len(rows)
for p, k, s, l, r in rows:
    assert s == l + r, (p, k, s, l, r)
    assert k == 0 or p == 9 or (l > 0 and r > 0), (p, k, s, l, r)  # solo (9) sends nothing
last = db.execute("SELECT sum(messages_sent), sum(messages_lost), sum(messages_received) FROM evaluations "
                  "WHERE problem = 1 AND round = 30").fetchone()
want = "messages: {sent: %d, lost: %d, received: %d}" % tuple(int(v) for v in last)
assert want in open(sys.argv[2]).read(), want
PY

# (3) faults that lose nothing (a node leaves after 1e12 rounds on average) change no metric:
# every algorithm but Choco and BEER (which keep their estimates per edge under faults: the same
# arithmetic in another order) gives the files of the run without network
sed 's/^  network: .*/  network: {node_up_rounds: 1e12}/' "$tmp/lossy.yaml" | awk '/^  [a-z_]+:/ {skip = /^  (choco|beer):/} !skip' > "$tmp/none.yaml"
grep -v "^  network:" "$tmp/none.yaml" > "$tmp/off.yaml"
"$dtrun" "$tmp/none.yaml" --output-dir "$tmp/none" --quiet > "$tmp/none.log" 2>&1 || bad "faults losing nothing: $(tail -3 "$tmp/none.log")"
"$dtrun" "$tmp/off.yaml" --output-dir "$tmp/off" --quiet > "$tmp/off.log" 2>&1 || bad "no network: $(tail -3 "$tmp/off.log")"
metrics() { strip_times "$1" | cut -d, -f1-10; } # round .. bytes_sent
for f in "$tmp"/off/*_results.csv; do
  cmp -s <(metrics "$f") <(metrics "$tmp/none/$(basename "$f")") || bad "$(basename "$f"): faults that lose nothing change it"
done && ok
grep -q "messages_lost" "$tmp/none/dsgd_results.csv" && ! grep -q "messages_lost\|sim_time" "$tmp/off/dsgd_results.csv" \
  && ! grep -q sim_time "$tmp/none/dsgd_results.csv" && ok || bad "the columns of faults without a clock"

# (4) an offline node neither trains nor sends: under churn some node of solo has seen fewer
# samples than 30 rounds' worth, and every count is a whole number of minibatches
awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "forward_pass_count") c = i; next}
         $1 == 30 {if ($c % 64) bad = 1; if ($c < 30 * 64) short = 1} END {exit bad || !short}' "$tmp/p1/solo_results.csv" \
  && ok || bad "churn does not pause solo's nodes: $(awk -F, '$1 == 30' "$tmp/p1/solo_results.csv" | cut -d, -f1-3 | tr '\n' ' ')"

# (5) check describes the faults; what cannot run under them is refused with its position
"$dtrun" check "$tmp/lossy.yaml" > "$tmp/check.txt" 2>&1
grep -q "^# network faults: 20% of the messages lost in bursts of 3 on average;$" "$tmp/check.txt" \
  && grep -q "^#   nodes leave after 12 rounds on average, for 4 (offline 25% of rounds)$" "$tmp/check.txt" && ok \
  || bad "check does not describe the faults: $(grep -A2 'faults' "$tmp/check.txt")"
refused() { # what expected-message dtrun-arguments...
  local what=$1 want=$2
  shift 2
  "$dtrun" "$@" --output-dir "$tmp/refused" --quiet > "$tmp/refused.log" 2>&1
  local rc=$?
  [ $rc -eq 2 ] && grep -q "$want" "$tmp/refused.log" && [ ! -e "$tmp/refused" ] && ok \
    || bad "$what: exit $rc, $(head -c 300 "$tmp/refused.log")"
}
refused "a sequential sweep under loss" "dsgd's update_order: sequential cannot run under experiment.network's faults" \
  "$tmp/lossy.yaml" --set problem_configs.dsgd.optimizer_config.update_order=sequential
refused "bursts that cannot average the loss" "experiment.network.loss: expected at most 0.6 with loss_burst 1.5" \
  "$tmp/lossy.yaml" --set experiment.network.loss=0.7 --set experiment.network.loss_burst=1.5
# (6) the asynchronous algorithms (tests/e2e/async.yaml: AD-PSGD, asynchronous push-sum,
# Downpour and EASGD on a clock with stragglers and jitter): the same files at P = 1, 2, 3 and 5,
# re-run, killed at P = 3 and resumed at P = 2; all also under bursty loss, failing links and
# churn at P = 1, 3 and 5, and killed at P = 3 and resumed at P = 2
tmp_sync=$tmp
tmp=$tmp/async && mkdir -p "$tmp"
cp tests/e2e/async.yaml "$tmp/async.yaml"
every_rank_count "$tmp/async.yaml" 1 "async" # killed in push_sum, whose inbox rows hold d + 1 floats
sed -e 's/^  network: .*/  network: {speed: 2000, stragglers: 0.2, slowdown: 3, jitter: 0.3, loss: 0.1, loss_burst: 2, link_up_rounds: 10, link_down_rounds: 2, node_up_rounds: 6, node_down_rounds: 2}/' \
  "$tmp/async.yaml" > "$tmp/async_faults.yaml"
grep -q "node_up_rounds: 6" "$tmp/async_faults.yaml" && ok || bad "async_faults.yaml not made"
for np in 1 3 5; do
  "$mpiexec" --oversubscribe -n $np "$dtrun" "$tmp/async_faults.yaml" --output-dir "$tmp/f$np" --quiet > "$tmp/f$np.log" 2>&1 \
    || bad "async with faults at P=$np: $(tail -3 "$tmp/f$np.log")"
done
same_results "$tmp/f1" "$tmp/f3" "async with faults P=1 vs P=3"
same_results "$tmp/f1" "$tmp/f5" "async with faults P=1 vs P=5"
tmp=$tmp/fk && mkdir -p "$tmp"
killed_resumed "$tmp/../async_faults.yaml" 2 "async with faults and churn" # killed in Downpour or EASGD: a centre
tmp=$tmp/..
python3 - "$tmp/f1/results.sqlite" <<'PY' && ok || bad "AD-PSGD's message counters under faults"
import sqlite3, sys
s, l, r = sqlite3.connect(sys.argv[1]).execute("SELECT sum(messages_sent), sum(messages_lost), sum(messages_received) FROM "
                                               "evaluations WHERE problem = 0 AND round = 30").fetchone()
assert l > 0 and r > 0 and 0 <= s - l - r <= 10, (s, l, r)  # a few messages still in flight at the end
# Downpour and EASGD (problems 2, 3): pushes and replies, at most one per node in flight
for p in (2, 3):
    s, l, r = sqlite3.connect(sys.argv[1]).execute("SELECT sum(messages_sent), sum(messages_lost), sum(messages_received) FROM "
                                                   "evaluations WHERE problem = ? AND round = 30", (p,)).fetchone()
    assert l > 0 and r > 0 and 0 <= s - l - r <= 5, (p, s, l, r)
PY
# churn takes steps away: without it (the same loss and link failures) the nodes see more samples
sed 's/, node_up_rounds: 6, node_down_rounds: 2//' "$tmp/async_faults.yaml" > "$tmp/async_nochurn.yaml"
"$dtrun" "$tmp/async_nochurn.yaml" --output-dir "$tmp/nc" --quiet > "$tmp/nc.log" 2>&1 || bad "async without churn: $(tail -3 "$tmp/nc.log")"
python3 - "$tmp/f1/results.sqlite" "$tmp/nc/results.sqlite" <<'PY' && ok || bad "AD-PSGD's nodes under churn trained as much as without it"
import sqlite3, sys
q = "SELECT sum(current_epoch), sum(forward_pass_count) FROM evaluations WHERE problem = 0 AND round = 30"
(e1, f1), (e0, f0) = (sqlite3.connect(p).execute(q).fetchone() for p in sys.argv[1:])
assert e1 < 0.95 * e0 and f1 < 0.95 * f0, (e1, e0, f1, f0)
PY
# push-sum under the same faults: a lost push's mass goes back to its sender, so the weights
# stay whole and x / w finite (without it every model was NaN: the convex cases
# adpsgd_push_sum_loss10 and adpsgd_push_sum_churn check it reaches the optimum)
python3 - "$tmp/f1/results.sqlite" <<'PY' && ok || bad "push-sum under faults"
import math, sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("SELECT validation_loss, messages_lost FROM evaluations WHERE problem = 1").fetchall()
assert len(rows) == 65 and all(v is not None and math.isfinite(v) and v < 1e4 for v, _ in rows), rows
assert sum(l for _, l in rows[-5:]) > 0, rows[-5:]
PY
tmp=$tmp_sync
refused "an asynchronous algorithm without the clock" "adpsgd is asynchronous: .* it needs experiment.network with a speed" \
  tests/e2e/async.yaml --set 'experiment.network={loss: 0.05}'
refused "an asynchronous algorithm mixing buffers" "adpsgd is asynchronous: its nodes have no common rounds in which to mix" \
  tests/e2e/async.yaml --set problem_configs.adpsgd.buffers=mix
cat > "$tmp/centre.yaml" <<'YAML'
experiment:
  graph: {num_nodes: 4, type: cycle}
  network: {loss: 0.05}
problem_configs:
  server: {optimizer_config: {alg_name: downpour, asynchronous: true, outer_iterations: 2}}
YAML
refused "asynchronous Downpour without the clock" "centre.yaml:5:41: downpour is asynchronous: .* it needs experiment.network with a speed" \
  "$tmp/centre.yaml"
refused "asynchronous Downpour with a fixed staleness" "max_staleness is the rounds' fixed staleness; with asynchronous: true the clock produces it" \
  tests/e2e/async.yaml --set problem_configs.downpour.optimizer_config.max_staleness=2

echo "lossy: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
