#!/usr/bin/env bash
# End-to-end on real MNIST: files as DESIGN.md "Files" says, loss falls, the same results for
# P = 1 and P = 4 and for a re-run of the archived config (timing columns aside), writeout:
# false writes nothing, SIGINT saves and exits 130, compare tabulates and plots, save_models
# writes a NumPy array. Skipped (77) without data/mnist.
# usage: run_e2e.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_begin "$@"

nprob=$(grep -c "alg_name:" tests/e2e/small.yaml) # problems in small.yaml
"$dtrun" tests/e2e/small.yaml --output-dir "$tmp/p1" --quiet > "$tmp/p1.log" 2>&1 || bad "P=1 run failed: $(tail -3 "$tmp/p1.log")"
# every problem of small.yaml writes its results file (the list comes from the config, not from here)
results=$(awk '/^problem_configs:/ {p = 1; next} p && /^  [A-Za-z0-9_]+:/ {sub(/^  /, ""); sub(/:.*/, ""); print $0 "_results.csv"}' tests/e2e/small.yaml)
[ "$(wc -w <<< "$results")" = "$nprob" ] && ok || bad "small.yaml: $nprob problems but $(wc -w <<< "$results") problem names"
for f in config.yaml graph.yaml split.csv summary.yaml $results dinno_consensus.csv dinno_models.npy; do
  [ -s "$tmp/p1/$f" ] && ok || bad "missing $f"
done
ls "$tmp/p1" | grep -q '\.tmp' && bad "temporary files left behind" || ok
# every problem completed; the validation loss falls; rows = (evaluations) x nodes
grep -c "^  status: completed" "$tmp/p1/summary.yaml" | grep -qx "$nprob" && ok || bad "not every problem completed"
awk -F, 'NR>1 && $1==0 {a+=$4; n++} NR>1 && $1==60 {b+=$4; m++} END {exit !(n==5 && m==5 && b/m < a/n - 0.3)}' "$tmp/p1/dinno_results.csv" \
  && ok || bad "dinno's validation loss did not fall"
[ "$(wc -l < "$tmp/p1/dinno_results.csv")" = 21 ] && ok || bad "dinno_results.csv should hold 4 evaluations x 5 nodes + header"
[ "$(wc -l < "$tmp/p1/dinno_consensus.csv")" = 101 ] && ok || bad "dinno_consensus.csv should hold 4 evaluations x 25 pairs + header"
# models: NumPy header, 4 x 28440 float32
python3 - "$tmp/p1/dinno_models.npy" <<'PY' && ok || bad "dinno_models.npy is not a 5 x 28440 float32 array"
import sys, ast, struct
raw = open(sys.argv[1], "rb").read()
assert raw[:6] == b"\x93NUMPY"
hl = struct.unpack("<H", raw[8:10])[0]
h = ast.literal_eval(raw[10:10 + hl].decode())
assert h["descr"] == "<f4" and h["shape"] == (5, 28440) and len(raw) == 10 + hl + 4 * 5 * 28440
PY

# the same experiment on 5 ranks, and a re-run of the archived config
"$mpiexec" --oversubscribe -n 5 "$dtrun" tests/e2e/small.yaml --output-dir "$tmp/p5" --quiet > "$tmp/p5.log" 2>&1 || bad "P=5 run failed: $(tail -3 "$tmp/p5.log")"
same_results "$tmp/p1" "$tmp/p5" "P=1 vs P=5"
"$dtrun" "$tmp/p1/config.yaml" --output-dir "$tmp/rerun" --quiet > "$tmp/rerun.log" 2>&1 || bad "re-run failed: $(tail -3 "$tmp/rerun.log")"
same_results "$tmp/p1" "$tmp/rerun" "re-run of config.yaml"
"$mpiexec" --oversubscribe -n 2 "$dtrun" "$tmp/p1/config.yaml" --output-dir "$tmp/p2" --quiet > "$tmp/p2.log" 2>&1 || bad "P=2 re-run failed"
same_results "$tmp/p1" "$tmp/p2" "P=2 re-run"

# time-varying graphs: each schedule gives the same files on 1 and 5 ranks, graph.yaml records
# it, and the exchange carried only the round's edges (one-peer: one message per node and round)
for sched in one_peer_exponential random_matching resample; do
  set_sched="--set experiment.graph.schedule=$sched"
  [ $sched = one_peer_exponential ] || set_sched="$set_sched --set experiment.graph.type=random --set experiment.graph.p=0.6"
  "$dtrun" tests/e2e/schedules.yaml $set_sched --output-dir "$tmp/s1_$sched" --quiet > "$tmp/s1_$sched.log" 2>&1 \
    || bad "$sched run failed: $(tail -3 "$tmp/s1_$sched.log")"
  "$mpiexec" --oversubscribe -n 5 "$dtrun" tests/e2e/schedules.yaml $set_sched --output-dir "$tmp/s5_$sched" --quiet \
    > "$tmp/s5_$sched.log" 2>&1 || bad "$sched on 5 ranks failed: $(tail -3 "$tmp/s5_$sched.log")"
  same_results "$tmp/s1_$sched" "$tmp/s5_$sched" "schedule $sched, P=1 vs P=5"
  grep -q "^  kind: $sched" "$tmp/s1_$sched/graph.yaml" && ok || bad "graph.yaml does not record schedule $sched"
  [ "$(grep -c '^  status: completed' "$tmp/s1_$sched/summary.yaml")" = "$(grep -c alg_name: tests/e2e/schedules.yaml)" ] \
    && ok || bad "$sched: not every problem completed"
done
# one-peer exponential: DSGD sends 40 rounds x 5 nodes x one message of 28440 floats
grep -A40 'problem_name: dsgd' "$tmp/s1_one_peer_exponential/summary.yaml" | grep -m1 "bytes_sent:" | grep -q " $((40 * 5 * 28440 * 4))$" \
  && ok || bad "one-peer DSGD bytes: $(grep -A40 'problem_name: dsgd' "$tmp/s1_one_peer_exponential/summary.yaml" | grep -m1 bytes_sent)"

# one-peer exponential: choco sends one top-k message (k = 285 of 28440: 285 indices and values)
grep -A40 'problem_name: choco' "$tmp/s1_one_peer_exponential/summary.yaml" | grep -m1 "bytes_sent:" | grep -q " $((40 * 5 * 285 * 8))$" \
  && ok || bad "one-peer choco bytes: $(grep -A40 'problem_name: choco' "$tmp/s1_one_peer_exponential/summary.yaml" | grep -m1 bytes_sent)"
# a directed graph: push-sum gives the same files on 1, 3 and 5 ranks, sends [x, w] (d + 1
# floats) along each arc once per round, and an algorithm that needs a symmetric W is refused
"$dtrun" tests/e2e/directed.yaml --output-dir "$tmp/d1" --quiet > "$tmp/d1.log" 2>&1 || bad "directed run failed: $(tail -3 "$tmp/d1.log")"
for np in 3 5; do
  "$mpiexec" --oversubscribe -n $np "$dtrun" tests/e2e/directed.yaml --output-dir "$tmp/d$np" --quiet > "$tmp/d$np.log" 2>&1 \
    || bad "directed run on $np ranks failed: $(tail -3 "$tmp/d$np.log")"
  same_results "$tmp/d1" "$tmp/d$np" "directed graph, P=1 vs P=$np"
done
grep -q "^directed: true" "$tmp/d1/graph.yaml" && ok || bad "graph.yaml does not say directed"
arcs=$(awk '/^num_arcs:/ {print $2}' "$tmp/d1/graph.yaml")
grep -A40 'problem_name: sgp' "$tmp/d1/summary.yaml" | grep -m1 "bytes_sent:" | grep -q " $((40 * arcs * 28441 * 4))$" \
  && ok || bad "directed sgp bytes: $(grep -A40 'problem_name: sgp' "$tmp/d1/summary.yaml" | grep -m1 bytes_sent) for $arcs arcs"
"$dtrun" tests/e2e/directed.yaml --set problem_configs.sgp.optimizer_config.alg_name=dsgd --output-dir "$tmp/dsgd_dir" > "$tmp/dd.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "dsgd mixes with a symmetric, doubly stochastic W and cannot run on a directed graph" "$tmp/dd.log" && [ ! -e "$tmp/dsgd_dir" ] \
  && ok || bad "dsgd on a directed graph: exit $rc, $(cat "$tmp/dd.log")"

# per-edge messages through host staging (the device backend's path), on 2 ranks
DT_CPU_STAGED=1 "$mpiexec" --oversubscribe -n 2 "$dtrun" tests/e2e/schedules.yaml --set experiment.graph.schedule=random_matching \
  --set experiment.graph.type=random --set experiment.graph.p=0.6 --output-dir "$tmp/s2_staged" --quiet > "$tmp/s2_staged.log" 2>&1 \
  || bad "staged random_matching on 2 ranks failed: $(tail -3 "$tmp/s2_staged.log")"
same_results "$tmp/s1_random_matching" "$tmp/s2_staged" "random_matching, staged on P=2 vs P=1"

# The paths a device backend takes (memory the host cannot address: batch uploads, exchange
# staging, host copies for writers, ordered sums and the consensus matrix), run by the CPU
# backend with DT_CPU_STAGED=1, give the same files, in one process and on 2 ranks
DT_CPU_STAGED=1 "$dtrun" tests/e2e/small.yaml --output-dir "$tmp/staged1" --quiet > "$tmp/staged1.log" 2>&1 \
  || bad "staged run failed: $(tail -3 "$tmp/staged1.log")"
same_results "$tmp/p1" "$tmp/staged1" "staged backend memory, P=1"
"$mpiexec" --oversubscribe -n 2 -x DT_CPU_STAGED=1 "$dtrun" tests/e2e/small.yaml --output-dir "$tmp/staged2" --quiet \
  > "$tmp/staged2.log" 2>&1 || bad "staged run on 2 ranks failed: $(tail -3 "$tmp/staged2.log")"
same_results "$tmp/p1" "$tmp/staged2" "staged backend memory, P=2"

# update_order: sequential (the seed's in-place sweep, staged over ranks) gives the same files
# in one process and on 2 ranks
seq="--set problem_configs.dsgt.optimizer_config.update_order=sequential --set problem_configs.dsgd.optimizer_config.update_order=sequential"
"$dtrun" tests/e2e/small.yaml $seq --output-dir "$tmp/seq1" --quiet > "$tmp/seq1.log" 2>&1 || bad "sequential run failed: $(tail -2 "$tmp/seq1.log")"
"$mpiexec" --oversubscribe -n 2 "$dtrun" tests/e2e/small.yaml $seq --output-dir "$tmp/seq2" --quiet > "$tmp/seq2.log" 2>&1 \
  || bad "sequential on 2 ranks failed: $(tail -2 "$tmp/seq2.log")"
same_results "$tmp/seq1" "$tmp/seq2" "sequential sweep, P=1 vs P=2"
cmp -s <(strip_times "$tmp/seq1/dsgt_results.csv") <(strip_times "$tmp/p1/dsgt_results.csv") && bad "sequential dsgt equals synchronous" || ok

# a diverging problem is marked and the experiment goes on
"$dtrun" tests/e2e/small.yaml --set problem_configs.dsgd.optimizer_config.alpha0=1e30 --output-dir "$tmp/div" --quiet > "$tmp/div.out" 2>&1 \
  && ok || bad "a run with a diverging problem should still exit 0"
# where it diverged, NaN statistics (not inf/-inf or a consensus of 0), no -nan in the table
grep -A6 'problem_name: dsgd' "$tmp/div/summary.yaml" | grep -q "diverged_at_round: [0-9]" && ok || bad "summary lacks diverged_at_round"
grep -A22 'problem_name: dsgd' "$tmp/div/summary.yaml" | grep -E "consensus_error: \{min: .nan" > /dev/null && ok \
  || bad "a diverged problem's consensus is not NaN"
! grep -Eq ": -?inf|: -?\.inf" "$tmp/div/summary.yaml" && ok || bad "summary.yaml shows an infinite statistic"
! grep -q -- "-nan" "$tmp/div.out" && grep -q "^dsgd .* diverged .* nan" "$tmp/div.out" && ok || bad "the table: $(grep dsgd "$tmp/div.out")"
"$dtrun" compare "$tmp/div" > "$tmp/div.cmp" 2>&1
grep -E "^div +dsgd .* diverged .* nan +nan " "$tmp/div.cmp" > /dev/null && ! grep -q -- "-nan" "$tmp/div.cmp" && ok \
  || bad "compare of a diverged problem: $(grep dsgd "$tmp/div.cmp")"
grep -A2 'problem_name: dsgd' "$tmp/div/summary.yaml" | grep -q "status: diverged" && ok || bad "dsgd not marked diverged"
[ "$(grep -c '^  status: completed' "$tmp/div/summary.yaml")" = $((nprob - 1)) ] && ok || bad "the problems after the diverged one did not complete"
grep -q ',nan,' "$tmp/div/dsgd_results.csv" && ! grep -q -- '-nan' "$tmp/div/dsgd_results.csv" && ok || bad "NaN not written as nan"

# more ranks than nodes: a clear usage error, no hang
timeout 120 "$mpiexec" --oversubscribe -n 6 "$dtrun" tests/e2e/small.yaml --output-dir "$tmp/p6" > "$tmp/p6.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "6 MPI ranks for a graph of 5 nodes" "$tmp/p6.log" && ok || bad "6 ranks for 5 nodes: exit $rc: $(head -2 "$tmp/p6.log")"

# Fashion-MNIST (gzip IDX from the Debian package)
if [ -e data/fashion_mnist/train-images-idx3-ubyte.gz ]; then
  "$dtrun" tests/e2e/small.yaml --set experiment.dataset=fashion_mnist --set experiment.data_dir=data/fashion_mnist \
    --set problem_configs.dinno.optimizer_config.outer_iterations=20 --output-dir "$tmp/fm" --quiet > "$tmp/fm.log" 2>&1 \
    && grep -q "^  status: completed" "$tmp/fm/summary.yaml" && ok || bad "fashion_mnist run failed: $(tail -2 "$tmp/fm.log")"
fi

# RMSprop, Adadelta and NAdam as local optimizers (gossip, solo, DiNNO's primal step): the same
# files at P = 1 and P = 5, and each learns (mean top-1 after 60 rounds 0.05 above round 0's;
# solo's nodes see two digits each, so about 0.2 is its ceiling)
lo="--set problem_configs.gossip.optimizer_config.local_optimizer=rmsprop --set problem_configs.gossip.optimizer_config.lr=0.0005
    --set problem_configs.solo.optimizer_config.optimizer=adadelta --set problem_configs.solo.optimizer_config.lr=1
    --set problem_configs.dinno.optimizer_config.primal_optimizer=nadam"
"$dtrun" tests/e2e/small.yaml $lo --output-dir "$tmp/lo1" --quiet > "$tmp/lo1.log" 2>&1 || bad "local optimizers at P=1: $(tail -2 "$tmp/lo1.log")"
"$mpiexec" --oversubscribe -n 5 "$dtrun" tests/e2e/small.yaml $lo --output-dir "$tmp/lo5" --quiet > "$tmp/lo5.log" 2>&1 \
  || bad "local optimizers at P=5: $(tail -2 "$tmp/lo5.log")"
same_results "$tmp/lo1" "$tmp/lo5" "rmsprop, adadelta, nadam: P=1 vs P=5"
for p in gossip solo dinno; do
  awk -F, 'NR > 1 {sum[$1] += $5; n[$1]++; last = $1} END {exit !(sum[last] / n[last] > sum[0] / n[0] + 0.05)}' \
    "$tmp/lo1/${p}_results.csv" && ok || bad "$p with its new local optimizer did not learn: $(grep "^$p " "$tmp/lo1.log")"
done

# writeout: false writes nothing
mkdir "$tmp/meta"
"$dtrun" tests/e2e/small.yaml --set experiment.writeout=false --set experiment.output_metadir="$tmp/meta" \
  --set problem_configs.dinno.optimizer_config.outer_iterations=2 --quiet > /dev/null 2>&1 || bad "writeout false run failed"
[ -z "$(ls -A "$tmp/meta")" ] && ok || bad "writeout: false wrote $(ls "$tmp/meta")"

# signalled SIGNAL DIR: a long run into DIR, sent SIGNAL a second after it has started; its exit
# code in rc
signalled() {
  "$dtrun" tests/e2e/small.yaml --set problem_configs.dinno.optimizer_config.outer_iterations=100000 \
    --output-dir "$2" --quiet > "$2.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do [ -f "$2/split.csv" ] && break; sleep 0.1; done
  sleep 1
  kill -"$1" $pid
  wait $pid
  rc=$?
}

# SIGINT: the current round finishes, results are saved marked interrupted, exit 130
signalled INT "$tmp/int"
[ $rc = 130 ] && ok || bad "interrupted run exited $rc, expected 130"
grep -q "status: interrupted" "$tmp/int/summary.yaml" 2>/dev/null && ok || bad "summary.yaml does not say interrupted"
[ "$(wc -l < "$tmp/int/dinno_results.csv" 2>/dev/null || echo 0)" -gt 5 ] && ok || bad "no results saved after SIGINT"

# SIGHUP (a closed terminal) saves and stops as SIGTERM does; a closed pipe (| head) loses the
# output quietly and the run goes on to write every file
signalled HUP "$tmp/hup"
[ $rc = 130 ] && grep -q "status: interrupted" "$tmp/hup/summary.yaml" 2>/dev/null && [ -d "$tmp/hup/checkpoint" ] && ok \
  || bad "SIGHUP: exit $rc (expected 130), $(grep -m1 status: "$tmp/hup/summary.yaml" 2>/dev/null), $(ls "$tmp/hup")"
"$dtrun" tests/e2e/small.yaml --output-dir "$tmp/pipe" | head -1 > /dev/null
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] && [ "$(grep -c '^  status: completed' "$tmp/pipe/summary.yaml")" = "$nprob" ] && ok \
  || bad "a run piped into head: exit $rc, $(grep -c '^  status: completed' "$tmp/pipe/summary.yaml" 2>/dev/null) of $nprob completed"

# exit codes a script can trust: every problem diverged → 3 (files written); check RUN_DIR → 0 for
# a completed run, 4 for one that did not complete (interrupted here)
printf 'experiment: {name: dv, seed: 7, graph: {num_nodes: 5, type: cycle}}\nproblem_configs:\n  dsgd: {evaluate_frequency: 10, optimizer_config: {alg_name: dsgd, outer_iterations: 20, alpha0: 1e30}}\n  dsgt: {evaluate_frequency: 10, optimizer_config: {alg_name: dsgt, outer_iterations: 20, alpha: 1e30}}\n' > "$tmp/dv.yaml"
"$dtrun" "$tmp/dv.yaml" --output-dir "$tmp/dv" --quiet > /dev/null 2> "$tmp/dv.err"; rc=$?
[ $rc = 3 ] && grep -q "every problem diverged" "$tmp/dv.err" && [ "$(grep -c '^  status: diverged' "$tmp/dv/summary.yaml")" = 2 ] && ok \
  || bad "a run whose every problem diverged: exit $rc (expected 3), $(cat "$tmp/dv.err")"
"$dtrun" check "$tmp/p1" > /dev/null 2>&1; rc=$?
[ $rc = 0 ] && ok || bad "check of a completed run: exit $rc (expected 0)"
"$dtrun" check "$tmp/hup" > "$tmp/hup.check" 2>&1; rc=$?
[ $rc = 4 ] && grep -q ": interrupted" "$tmp/hup.check" && ok || bad "check of an interrupted run: exit $rc (expected 4), $(head -2 "$tmp/hup.check")"

# compare: a table and a figure
"$dtrun" compare "$tmp/p1" "$tmp/p5" --target 0.3 > "$tmp/cmp.txt" 2>&1 && ok || bad "compare failed: $(cat "$tmp/cmp.txt")"
[ "$(grep -c "dinno" "$tmp/cmp.txt")" = 2 ] && ok || bad "compare table lacks rows: $(cat "$tmp/cmp.txt")"
"$dtrun" compare "$tmp/p1" --plot "$tmp/plot.png" > /dev/null 2>&1 && [ -s "$tmp/plot.png" ] && ok || bad "compare --plot made no PNG"
"$dtrun" compare "$tmp/nonexistent" > /dev/null 2>&1; [ $? = 2 ] && ok || bad "compare of a missing folder should exit 2"
# usage errors exit 2 before anything is read or drawn: a run given twice (it would count as two
# seeds of itself), an empty metric, a file for a folder, a --plot folder that is not there (and
# no temporary file is left behind)
for args in "$tmp/p1 $tmp/p1" "$tmp/p1 $tmp/p1/../p1" "$tmp/p1 --metric top1_accuracy,,validation_loss" \
            "$tmp/p1/config.yaml" "$tmp/p1 --plot $tmp/no/such/folder/x.png"; do
  # shellcheck disable=SC2086
  "$dtrun" compare $args > "$tmp/usage.out" 2> "$tmp/usage.err"
  rc=$?
  [ $rc = 2 ] && [ ! -s "$tmp/usage.out" ] && ok || bad "compare $args: exit $rc (expected 2), $(head -2 "$tmp/usage.err")"
done
"$dtrun" compare "$tmp/p1" --metric "" > /dev/null 2> "$tmp/usage.err"; rc=$?
[ $rc = 2 ] && grep -q "an empty metric name" "$tmp/usage.err" && ok || bad "compare --metric '': exit $rc, $(head -2 "$tmp/usage.err")"
[ -z "$(ls -A "$tmp" | grep dtrun_plot)" ] && ok || bad "compare left a temporary figure file"

# The progress bar and its control codes only on a terminal: mpirun gives its ranks a
# pseudo-terminal even when its own output goes to a file, so auto looks at mpirun's output.
esc=$(printf '\033')
short=tests/cluster/cluster.yaml
"$mpiexec" --oversubscribe -n 2 "$dtrun" $short --output-dir "$tmp/bar1" > "$tmp/bar1.log" 2>&1 || bad "progress run failed: $(tail -3 "$tmp/bar1.log")"
grep -q "$esc" "$tmp/bar1.log" && bad "mpirun's log to a file holds terminal control codes" || ok
"$dtrun" $short --output-dir "$tmp/bar2" --progress always > "$tmp/bar2.log" 2>&1
grep -q "$esc" "$tmp/bar2.log" && ok || bad "--progress always drew no progress bar"
if command -v script > /dev/null; then # mpirun on a real terminal: the bar is drawn
  script -qec "$mpiexec --oversubscribe -n 2 $dtrun $short --output-dir $tmp/bar3" /dev/null > "$tmp/bar3.log" 2>&1
  grep -q "$esc" "$tmp/bar3.log" && ok || bad "no progress bar under mpirun on a terminal"
  script -qec "$mpiexec --oversubscribe -n 2 $dtrun $short --output-dir $tmp/bar4 --progress never" /dev/null > "$tmp/bar4.log" 2>&1
  grep -q "$esc\[K" "$tmp/bar4.log" && bad "--progress never still drew the bar" || ok
fi
"$dtrun" $short --progress sometimes > "$tmp/bar5.log" 2>&1; [ $? = 2 ] && grep -q "expected auto, always or never, found 'sometimes'" "$tmp/bar5.log" \
  && ok || bad "--progress sometimes should exit 2 with a message: $(cat "$tmp/bar5.log")"

# What the bar and the run print: elapsed time, rounds/s and an ETA on the bar; lines within 100
# columns; "-" in the closing table for a metric not recorded; profile's breakdown; check's torus
# shape and full-batch problems; every environment variable the sources read is in README.md
grep -q "elapsed .* rounds/s  ETA [0-9]*:[0-9][0-9]" "$tmp/bar2.log" && ok || bad "the bar lacks elapsed, rounds/s or ETA: $(tail -c 300 "$tmp/bar2.log")"
"$dtrun" tests/e2e/small.yaml --output-dir "$tmp/show" --progress never --set 'problem_configs.*.optimizer_config.outer_iterations=4' \
  --set 'problem_configs.*.verbose_evals=true' --set 'problem_configs.dsgd.metrics=[top1_accuracy]' \
  --set problem_configs.gossip.optimizer_config.profile=true > "$tmp/show.log" 2>&1 || bad "display run failed: $(tail -3 "$tmp/show.log")"
long=$(awk 'length > 100' "$tmp/show.log")
[ -z "$long" ] && ok || bad "lines over 100 columns: $long"
grep -Eq '^dsgd +dsgd +completed +4 +[0-9.]+ +- +- ' "$tmp/show.log" && ok || bad "metrics not recorded should show '-': $(grep '^dsgd ' "$tmp/show.log")"
for w in "gossip profile, 4 rounds on 5 nodes" "  round time    mean" "  per round     compute" "  evaluation    " "  traffic       " "  wall          "; do
  grep -q "^$w" "$tmp/show.log" || { bad "profile: true printed no '$w'"; break; }
done && ok
"$dtrun" check tests/e2e/small.yaml --set experiment.graph.type=torus --set experiment.graph.num_nodes=6 \
  --set problem_configs.dsgd.full_batch=true > "$tmp/show.check" 2>&1
grep -q "^# graph: torus (2 rows x 3 columns), 6 nodes" "$tmp/show.check" && grep -q "^# problem dsgd: dsgd, 60 rounds, evaluate every 20 on 2000 test samples, full batch," \
  "$tmp/show.check" && grep -q "^# problem dsgt: dsgt, 60 rounds, evaluate every 20 on 2000 test samples, batch 64," "$tmp/show.check" && ok \
  || bad "check should show the torus shape and full batch: $(grep '^# [gp]' "$tmp/show.check")"
for v in $(grep -rhoE 'getenv\("[A-Z_]+"\)' src experiments problems optimizers | sed 's/getenv("//; s/")//' | sort -u); do
  grep -q "\`$v" docs/guide.md || { bad "docs/guide.md does not document the environment variable $v"; break; }
done && ok

# A seed-format config running DSGD or DSGT without update_order gets one note, in check and at
# the run's start; once the order is given, or in dtrun's own format, none.
"$dtrun" check tests/e2e/seed_format.yaml > "$tmp/seed.check" 2>&1
grep -q "^# note: dsgd (dsgd), dsgt (dsgt) run the synchronous update" "$tmp/seed.check" && grep -q "^#   in optimizer_config reproduces it" \
  "$tmp/seed.check" && ok || bad "check of a seed config should note the update order: $(tail -4 "$tmp/seed.check")"
"$dtrun" check tests/e2e/seed_format.yaml --set problem_configs.problem2.optimizer_config.update_order=sequential 2>&1 \
  | grep -q "^# note: dsgt (dsgt) runs the synchronous" && ok || bad "the note should name only the problem without update_order"
"$dtrun" tests/e2e/seed_format.yaml --output-dir "$tmp/seed" --progress never --set 'problem_configs.*.optimizer_config.outer_iterations=1' \
  --set problem_configs.problem1.metrics_config.evaluate_frequency=1 > "$tmp/seed.log" 2>&1 || bad "seed config run failed: $(tail -3 "$tmp/seed.log")"
[ "$(grep -c "^note: dsgd (dsgd), dsgt (dsgt) run the synchronous update" "$tmp/seed.log")" = 1 ] && ok \
  || bad "the run should print the note once: $(head -8 "$tmp/seed.log")"
for c in configs/dist_mnist.yaml configs/dist_mnist_paper.yaml tests/e2e/small.yaml "$tmp/seed/config.yaml"; do
  ! "$dtrun" check "$c" 2>&1 | grep -q "note:" || { bad "$c should get no update-order note"; break; }
done && ok

# check warns about full-batch gradient steps above 2/L on softmax regression (L bounded from the
# data: tests/unit/test_curvature.c checks the bound), and only about those
"$dtrun" check configs/logreg_mnist.yaml > "$tmp/lr.check" 2>&1 || bad "check of logreg_mnist failed: $(tail -3 "$tmp/lr.check")"
! grep -q "warning" "$tmp/lr.check" && ok || bad "the shipped logreg rates should be stable: $(grep -A1 warning "$tmp/lr.check")"
"$dtrun" check configs/logreg_mnist.yaml --set problem_configs.dsgt.optimizer_config.alpha=0.5 \
  --set problem_configs.centralized.optimizer_config.optimizer=adam --set problem_configs.centralized.optimizer_config.lr=0.5 \
  > "$tmp/lr2.check" 2>&1
[ "$(grep -c '^# warning: ' "$tmp/lr2.check")" = 1 ] && grep -q "^# warning: problem dsgt: step 0.5 is above 2/L = 0.0158" "$tmp/lr2.check" \
  && ok || bad "check should warn about dsgt's step 0.5 alone: $(grep -A1 warning "$tmp/lr2.check")"

echo "e2e: $pass passed, $fail failed"
[ $fail = 0 ]
