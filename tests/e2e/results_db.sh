#!/usr/bin/env bash
# results.sqlite on real MNIST: its evaluations equal the CSV files value for value, are the same
# for P = 1 and P = 5, are readable while the run writes them, and a run killed with SIGKILL
# keeps every evaluation it printed. TensorBoard's event files (experiment.tensorboard) hold the
# same values, read back with python3-protobuf (tests/e2e/tb_read.py), the same for P = 1 and 5,
# and a run killed and resumed shows, after TensorBoard's purge, what an uninterrupted one does.
# `dtrun runs` lists them all, the killed one as killed, with the database's numbers.
# Skipped (77) without data/mnist.
# usage: results_db.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_begin "$@"
db=tests/e2e/db_rows.py

"$dtrun" tests/e2e/small.yaml --set experiment.tensorboard=true --output-dir "$tmp/p1" --quiet > "$tmp/p1.log" 2>&1 \
  || bad "P=1 run failed: $(tail -3 "$tmp/p1.log")"
"$mpiexec" --oversubscribe -n 5 "$dtrun" tests/e2e/small.yaml --set experiment.tensorboard=true --output-dir "$tmp/p5" --quiet \
  > "$tmp/p5.log" 2>&1 || bad "P=5 run failed: $(tail -3 "$tmp/p5.log")"
# TensorBoard: every scalar is results.sqlite's (float32), at P = 1 and 5 alike (wall times aside)
tb=tests/e2e/tb_read.py
for d in p1 p5; do
  /usr/bin/python3 $tb check "$tmp/$d" > "$tmp/$d.tb" 2>&1 && ok || bad "$d: TensorBoard's files: $(tail -2 "$tmp/$d.tb")"
done
cmp -s <(/usr/bin/python3 $tb scalars "$tmp/p1" | grep -v ' time_') <(/usr/bin/python3 $tb scalars "$tmp/p5" | grep -v ' time_') \
  && ok || bad "TensorBoard's scalars differ between P=1 and P=5"
[ "$(ls -d "$tmp/p1/tensorboard"/*/ | wc -l)" = "$(grep -c 'alg_name:' tests/e2e/small.yaml)" ] && ok || bad "not one event folder per problem"
# train_loss_recent every round between evaluations (dsgd: 60 rounds, evaluated every 20)
[ "$(/usr/bin/python3 $tb scalars "$tmp/p1" | grep -c '^dsgd train_loss_recent/mean ')" = 57 ] && ok \
  || bad "train_loss_recent: $(/usr/bin/python3 $tb scalars "$tmp/p1" | grep -c '^dsgd train_loss_recent/mean ') rounds of dsgd, expected 57"
# A sweep's TensorBoard: one logdir in the sweep folder, each point's run named by its swept values,
# the hparams plugin's experiment at its root and one session per point and problem (the swept
# values, the problem and its algorithm; the seeds of one setting in one group; the status)
cat > "$tmp/tbs.yaml" <<EOF
experiment:
  name: tbs
  data_dir: $PWD/data/mnist
  data_split_type: hetero
  tensorboard: true
  tensorboard_train_loss_every: 0
  graph: {num_nodes: 4, type: cycle}
problem_configs:
  dsgd: {evaluate_frequency: 5, evaluation: {test_samples: 200}, optimizer_config: {alg_name: dsgd, outer_iterations: 10}}
  dsgt: {evaluate_frequency: 5, evaluation: {test_samples: 200}, optimizer_config: {alg_name: dsgt, outer_iterations: 10}}
sweep:
  experiment.seed: [1, 2]
  graph:
    - {label: cycle, experiment.graph.type: cycle}
    - {label: complete, experiment.graph.type: complete}
EOF
"$dtrun" "$tmp/tbs.yaml" --output-dir "$tmp/tbs" --quiet > "$tmp/tbs.log" 2>&1 || bad "the TensorBoard sweep failed: $(tail -3 "$tmp/tbs.log")"
/usr/bin/python3 $tb hparams "$tmp/tbs/tensorboard" > "$tmp/tbs.json" 2> "$tmp/tbs.err" || bad "the sweep's hparams records: $(tail -2 "$tmp/tbs.err")"
/usr/bin/python3 - "$tmp/tbs.json" "$tmp/tbs" <<'PY' && ok || bad "the sweep's TensorBoard layout or hparams"
import json, os, sys
d = json.load(open(sys.argv[1]))
assert d["experiment"]["hparams"] == ["experiment.seed", "graph", "problem", "algorithm"], d["experiment"]
assert "top1_accuracy/mean" in d["experiment"]["metrics"], d["experiment"]
runs = sorted(d["sessions"])
want = sorted(f"seed={s},graph={g}/{p}" for s in (1, 2) for g in ("cycle", "complete") for p in ("dsgd", "dsgt"))
assert runs == want, runs
for run, sess in d["sessions"].items():
    point, prob = run.split("/")
    seed, graph = point.split(",")
    assert sess["hparams"] == {"experiment.seed": float(seed[5:]), "graph": graph[6:], "problem": prob, "algorithm": prob}, sess
    assert sess["group"] == f"{graph}/{prob}" and sess["status"] == 1, sess
assert not any(os.path.exists(os.path.join(sys.argv[2], p, "tensorboard")) for p in os.listdir(sys.argv[2])), "a point kept its own"
PY
! /usr/bin/python3 $tb scalars "$tmp/tbs/tensorboard/seed=1,graph=cycle" 2>/dev/null | grep -q train_loss_recent \
  && ok || bad "tensorboard_train_loss_every: 0 still wrote train_loss_recent"
for d in p1 p5; do
  python3 $db csv "$tmp/$d" > /dev/null && ok || bad "$d: the CSV files and results.sqlite differ"
done
python3 $db dump "$tmp/p1" > "$tmp/p1.rows" && python3 $db dump "$tmp/p5" > "$tmp/p5.rows" || bad "cannot read results.sqlite"
cmp -s "$tmp/p1.rows" "$tmp/p5.rows" && ok || { bad "results.sqlite differs between P=1 and P=5"; diff "$tmp/p1.rows" "$tmp/p5.rows" | head -5; }
[ "$(sqlite3 "$tmp/p1/results.sqlite" 'PRAGMA journal_mode')" = wal ] && ok || bad "results.sqlite is not in WAL mode"
[ "$(sqlite3 "$tmp/p1/results.sqlite" "SELECT status || ' ' || count(*) FROM runs")" = "completed 1" ] && ok \
  || bad "runs should hold one completed run"
[ ! -e "$tmp/p1/results.sqlite-wal" ] && ok || bad "a finished run leaves its WAL file behind"

# summary.yaml: the build's git description, the BLAS kernels, and each data file's SHA-256, which
# is sha256sum of the uncompressed file
grep -q '^build: "\?[0-9a-f]' "$tmp/p1/summary.yaml" && grep -q '^blas_kernels: "\?[A-Za-z]' "$tmp/p1/summary.yaml" && ok \
  || bad "summary.yaml lacks build or blas_kernels: $(head -4 "$tmp/p1/summary.yaml")"
grep -q "^blas_kernels_why: " "$tmp/p1/summary.yaml" && ok || bad "summary.yaml lacks blas_kernels_why"
# an OPENBLAS_CORETYPE the environment sets is honoured, and summary.yaml says why those kernels ran
OPENBLAS_CORETYPE=Haswell "$dtrun" tests/e2e/small.yaml --set 'problem_configs.dsgd.optimizer_config.outer_iterations=1' \
  --output-dir "$tmp/core" --quiet > /dev/null 2>&1
grep -q '^blas_kernels: Haswell' "$tmp/core/summary.yaml" && grep -q '^blas_kernels_why: OPENBLAS_CORETYPE=Haswell, as the environment sets it' \
  "$tmp/core/summary.yaml" && ok || bad "OPENBLAS_CORETYPE=Haswell not honoured: $(grep blas "$tmp/core/summary.yaml")"
# DT_BLAS_KERNELS=CORE switches OpenBLAS's kernels inside the process (no restart): the same files
# as a process that OpenBLAS loaded into with OPENBLAS_CORETYPE=CORE. Prescott's SSE3 kernels
# differ from this machine's own in their sums, so the dsgd column shows which kernels ran.
one=(tests/e2e/small.yaml --set 'problem_configs.dsgd.optimizer_config.outer_iterations=3' --problem dsgd --quiet)
DT_BLAS_KERNELS=Prescott "$dtrun" "${one[@]}" --output-dir "$tmp/pin" > /dev/null 2>&1
OPENBLAS_CORETYPE=Prescott "$dtrun" "${one[@]}" --output-dir "$tmp/env" > /dev/null 2>&1
grep -q '^blas_kernels: Prescott' "$tmp/pin/summary.yaml" && grep -q '^blas_kernels_why: DT_BLAS_KERNELS=Prescott' "$tmp/pin/summary.yaml" \
  && ok || bad "DT_BLAS_KERNELS=Prescott not applied: $(grep blas "$tmp/pin/summary.yaml")"
cols() { cut -d, -f1-6 "$1/dsgd_results.csv"; }
cmp -s <(cols "$tmp/pin") <(cols "$tmp/env") && ok || bad "DT_BLAS_KERNELS=Prescott differs from OPENBLAS_CORETYPE=Prescott"
DT_BLAS_KERNELS=NoSuchCore "$dtrun" "${one[@]}" --output-dir "$tmp/bogus" > "$tmp/bogus.log" 2>&1
[ $? = 2 ] && grep -q 'DT_BLAS_KERNELS=NoSuchCore: this OpenBLAS has no such kernels (it runs [A-Za-z0-9]*); use keep, or one of: Prescott' \
  "$tmp/bogus.log" && ok || bad "an unknown DT_BLAS_KERNELS: $(cat "$tmp/bogus.log")"
# kernels this CPU cannot run are refused before they could die of SIGILL (where it lacks AVX-512)
if ! grep -qw avx512f /proc/cpuinfo; then
  DT_BLAS_KERNELS=SkylakeX "$dtrun" "${one[@]}" --output-dir "$tmp/bogus" > "$tmp/bogus.log" 2>&1
  [ $? = 2 ] && grep -q 'DT_BLAS_KERNELS=SkylakeX: this CPU lacks the instructions they use' "$tmp/bogus.log" && ok \
    || bad "SkylakeX kernels on a CPU without AVX-512: $(cat "$tmp/bogus.log")"
fi
# the process keeps its name: nothing re-executes it
DT_BLAS_KERNELS=Prescott "$dtrun" "${one[@]}" --output-dir "$tmp/name" > /dev/null 2>&1 &
for _ in $(seq 50); do pgrep -P $$ -x dtrun > /dev/null && break; sleep 0.1; done
pgrep -P $$ -x dtrun > /dev/null && ok || bad "no process named dtrun while it runs"
wait
rm -rf "$tmp/core" "$tmp/pin" "$tmp/env" "$tmp/bogus" "$tmp/name" # (runs lists the folder's runs below)
for pair in train_images:train-images-idx3-ubyte train_labels:train-labels-idx1-ubyte test_images:t10k-images-idx3-ubyte \
            test_labels:t10k-labels-idx1-ubyte; do
  f=$(ls data/mnist/"${pair#*:}"* | head -1)
  want=$({ gzip -dc "$f" 2>/dev/null || cat "$f"; } | sha256sum | cut -d' ' -f1)
  grep -q "^  ${pair%%:*}: \"\?$want\"\?\$" "$tmp/p1/summary.yaml" && ok || bad "summary.yaml: ${pair%%:*} is not sha256sum of $f"
done

# graph.yaml's and summary.yaml's numbers are the shortest text that reads back to the double
# (0.3333333333333333, not %.17g's 0.33333333333333331), and summary.yaml's finals are the database's
python3 - "$tmp/p1" <<'PY' && ok || bad "graph.yaml or summary.yaml numbers are not the shortest exact text"
import re, sqlite3, sys, yaml
d = sys.argv[1]
for f in ("graph.yaml", "summary.yaml"):  # summary.yaml: the finals (wall times keep their 3 decimals)
    text = "".join(l for l in open(f"{d}/{f}") if f == "graph.yaml" or "{min: " in l)
    for t in re.findall(r"(?<=[ \[,])-?[0-9]+\.[0-9]+(?:e[-+][0-9]+)?(?=[,}\]\n])", text):
        assert len(t) <= len(repr(float(t))), (f, t, repr(float(t)))
s = yaml.safe_load(open(f"{d}/summary.yaml"))
db = sqlite3.connect(f"{d}/results.sqlite")
for p in s["problems"]:
    m = db.execute("SELECT max(top1_accuracy) FROM evaluations e JOIN problems q USING (run, problem) WHERE q.problem_name = ? "
                   "AND round = (SELECT max(round) FROM evaluations WHERE problem = q.problem)", (p["problem_name"],)).fetchone()[0]
    assert p["final"]["top1_accuracy"]["max"] == m, (p["problem_name"], p["final"]["top1_accuracy"], m)
PY

# SIGKILL in the middle: every evaluation printed is in the database. The long problem evaluates
# every 5 rounds; a reader opens the database while the run writes it.
"$dtrun" tests/e2e/small.yaml --output-dir "$tmp/killed" --progress never \
  --set problem_configs.dinno.optimizer_config.outer_iterations=20000 --set problem_configs.dinno.evaluate_frequency=5 \
  > "$tmp/killed.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  [ "$(grep -c '^dinno  *[0-9]* |' "$tmp/killed.log")" -ge 6 ] && break
  sleep 0.1
done
live=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM evaluations').fetchone()[0])" \
  "$tmp/killed/results.sqlite" 2>&1)
[ "${live:-0}" -ge 5 ] 2>/dev/null && ok || bad "a reader could not read the database of a running run: $live"
kill -9 $pid
wait $pid 2>/dev/null
grep '^dinno  *[0-9]* |' "$tmp/killed.log" > "$tmp/printed"
[ "$(wc -l < "$tmp/printed")" -ge 6 ] && ok || bad "the run printed too few evaluations before it was killed: $(tail -3 "$tmp/killed.log")"
python3 - "$tmp/killed/results.sqlite" "$tmp/printed" <<'PY' && ok || bad "an evaluation the killed run printed is not in results.sqlite"
import re, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n = 0
for line in open(sys.argv[2]):
    m = re.search(r"^dinno +(\d+) .*top1 ([0-9.]+)-([0-9.]+)", line)
    rnd, lo, hi = int(m.group(1)), m.group(2), m.group(3)
    got = db.execute("SELECT count(*), min(top1_accuracy), max(top1_accuracy) FROM evaluations e JOIN problems p"
                     " USING (run, problem) WHERE p.problem_name = 'dinno' AND round = ?", (rnd,)).fetchone()
    assert got[0] == 5, (rnd, got)
    assert ("%.4f" % got[1], "%.4f" % got[2]) == (lo, hi), (rnd, got, lo, hi)
    n += 1
print(n, "printed evaluations found")
PY
[ "$(sqlite3 "$tmp/killed/results.sqlite" "SELECT status FROM problems WHERE problem_name = 'dinno'")" = running ] && ok \
  || bad "the killed problem should be marked running"
# compare shows what the killed problem sent and its seconds so far (its last evaluation's), not 0
"$dtrun" compare "$tmp/killed" --csv > "$tmp/killed.csv" 2>&1
awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) col[$i] = i} $2 == "dinno" {found = 1; if ($col["mb_sent"] <= 0 || $col["wall_seconds"] <= 0) exit 1}
         END {exit !found}' "$tmp/killed.csv" && ok || bad "compare of a killed problem shows no traffic: $(cat "$tmp/killed.csv")"

# TensorBoard after a kill and a resume: the resumed problem's new file purges what the killed
# run wrote after its checkpoint, and TensorBoard then shows what an uninterrupted run's shows
sed 's/^experiment:$/experiment:\n  tensorboard: true/' tests/e2e/small.yaml > "$tmp/tb.yaml"
killed_resumed "$tmp/tb.yaml" 3 "tensorboard"
cmp -s <(/usr/bin/python3 $tb scalars "$tmp/ref" | grep -v ' time_') <(/usr/bin/python3 $tb scalars "$tmp/k" | grep -v ' time_') \
  && ok || bad "TensorBoard's scalars of a resumed run differ from an uninterrupted run's"
# a kill that lands between two problems (it comes at a random moment) leaves nothing to resume
# inside one, and so no second event file of any problem
if [ "${killed_round:-0}" -gt 0 ]; then # killed inside a problem: that problem has a second file
  [ "$(ls "$tmp"/k/tensorboard/*/events.out.tfevents.* | wc -l)" -gt "$(ls "$tmp"/ref/tensorboard/*/events.out.tfevents.* | wc -l)" ] \
    && ok || bad "the resumed run wrote no new event file (killed after round $killed_round of a problem)"
fi

# dtrun runs: every run folder here, one line each, the killed one as killed; --json's numbers are
# the database's; --where, --sort and their usage errors
"$dtrun" runs "$tmp" > "$tmp/runs.txt" 2>&1 && ok || bad "runs failed: $(cat "$tmp/runs.txt")"
for d in p1 p5 ref k; do
  grep -Eq "^[0-9-]{10} [0-9:]{5}  $d +run +completed +18/18 +top1 0\.[0-9]{4} \(" "$tmp/runs.txt" && ok \
    || bad "runs: no completed line for $d: $(cat "$tmp/runs.txt")"
done
grep -Eq "  killed +run +killed +[0-9]+/[0-9]+ " "$tmp/runs.txt" && ok || bad "runs: the killed run is not killed: $(cat "$tmp/runs.txt")"
"$dtrun" runs "$tmp" --json > "$tmp/runs.json" 2>&1 || bad "runs --json failed"
python3 - "$tmp/runs.json" "$tmp/p1/results.sqlite" <<'PY' && ok || bad "runs --json disagrees with results.sqlite"
import json, sqlite3, sys
runs = {r["name"]: r for r in json.load(open(sys.argv[1]))}
db = sqlite3.connect(sys.argv[2])
best = max(db.execute("SELECT avg(top1_accuracy) FROM evaluations e WHERE round = (SELECT max(round) FROM evaluations f "
                      "WHERE f.problem = e.problem) GROUP BY problem").fetchall())[0]
p1 = runs["p1"]
assert p1["kind"] == "run" and p1["status"] == "completed" and p1["problems"] == p1["problems_completed"] == 18, p1
assert p1["metric"] == "top1_accuracy" and p1["value"] == best, (p1, best)
assert runs["killed"]["status"] == "killed", runs["killed"]
# its problems are the 18 its config declares, not the one it had started
assert runs["killed"]["problems"] == 18 and runs["killed"]["problems_completed"] < 18, runs["killed"]
PY
[ "$("$dtrun" runs "$tmp" --sort name | awk '{print $3}' | tr '\n' ' ')" = "k killed p1 p5 ref tbs " ] && ok || bad "runs --sort name"
"$dtrun" runs "$tmp" --where experiment.graph.num_nodes=7 | grep -q "^no run or sweep folders in .* that match --where$" && ok \
  || bad "runs --where with no match"
"$dtrun" runs "$tmp" --where experiment.nokey=1 > "$tmp/runs.err" 2>&1; [ $? -eq 2 ] && grep -q "did you mean" "$tmp/runs.err" && ok \
  || bad "runs --where with an unknown key: $(cat "$tmp/runs.err")"
"$dtrun" runs "$tmp/nonexistent" > "$tmp/runs.err" 2>&1; [ $? -eq 2 ] && grep -q "no such folder" "$tmp/runs.err" && ok \
  || bad "runs of a missing folder: $(cat "$tmp/runs.err")"

# the Python module on damaged results: a truncated database, one without its evaluations table,
# and a folder given twice raise dtrun.ResultsError naming the file and what is wrong (before: a
# raw pandas DatabaseError, and every row twice)
py=${DTRUN_PYTHON:-$(sed -n 's/^#define DT_PYTHON "\(.*\)"$/\1/p' "$(dirname "$dtrun")/include/dt_config.h")}
mkdir -p "$tmp/py"
cp -r "$tmp/p1" "$tmp/py/trunc" && cp -r "$tmp/p1" "$tmp/py/notable"
rm -f "$tmp"/py/*/results.sqlite-wal "$tmp"/py/*/results.sqlite-shm
truncate -s 8192 "$tmp/py/trunc/results.sqlite"
sqlite3 "$tmp/py/notable/results.sqlite" 'DROP TABLE evaluations'
PYTHONPATH=python "$py" - "$tmp/py" "$tmp/p1" <<'PY' && ok || bad "dtrun.load_runs on damaged results"
import sys
import dtrun
d, p1 = sys.argv[1], sys.argv[2]
for folder, why in ((f"{d}/trunc", "database disk image is malformed"), (f"{d}/notable", "no such table: evaluations"),
                    (p1 + "/.", "given twice")):
    try:
        dtrun.load_runs(p1, folder) if why == "given twice" else dtrun.load_runs(folder)
        raise SystemExit(f"{folder}: no error")
    except dtrun.ResultsError as e:
        assert why in str(e) and (folder in str(e)), str(e)
assert len(dtrun.load_runs(p1)) > 0
PY

echo "$pass checks passed, $fail failed"
[ "$fail" = 0 ]
