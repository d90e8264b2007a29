#!/usr/bin/env bash
# What `dtrun resume` reads back is verified (issue "Trust what is on disk"). A run killed with
# checkpoints (the newest in checkpoint/, the one before in checkpoint.old/), then in copies of
# its folder:
#  (a) one changed byte in a node's checkpoint: `dtrun check` and resume say so, resume takes
#      checkpoint.old/ and ends with the files of a run never interrupted (check of the intact
#      folder says every checksum verified);
#  (b) the round counter of run.ckpt changed and a node file of checkpoint.old/ damaged: check
#      says no checkpoint is intact; resume exits 2, the file named, nothing run;
#  (c) a node's checkpoint replaced by a link to /dev/zero (in both): exit 2 at once ("not a
#      regular file"), not a read that never ends;
#  (d) a changed byte in the training images after the run started: exit 2, the file named,
#      summary.yaml and the checkpoint untouched;
#  (d2) the same with the file's size and modification time put back: its change time differs, so
#      the data digests' cache (keyed by it as well) does not hide the change;
#  (d3) that cache: an entry per IDX file holding its sha256sum; a damaged entry is ignored
#      (summary.yaml records the true digest) and written again;
#  (e) a folder holding only a config.yaml is not resumed (exit 2);
#  (f) a checkpoint file truncated to nothing, in checkpoint/ only: resumed from checkpoint.old/;
#  (g) the disk fills (a small tmpfs) while the run evaluates: exit 1 with every printed
#      evaluation in results.sqlite; resumed once there is room, to the same files;
#  (h) killed before its first checkpoint inside the problem (the start's only): resumed;
#  (i) SIGTERM during the last problem's last round: the run completes (exit 0), not interrupted;
#  (j) results.sqlite deleted after a kill, or damaged after the run, or missing its evaluations
#      table or some rows: resume restores the rows;
#  (k) a rank stopped (SIGSTOP) under mpirun: the watchdog ends the job within seconds, naming the
#      stopped rank (from the ranks' records of life in <run>/.alive/); resumed;
#  (l) a stop signal during a long evaluation: it stops between nodes; resume measures it again;
#  (m) a node file grown past the record its node can have: refused before it is read (the bound
#      is the record's exact size), resumed from checkpoint.old/;
#  (n) run.ckpt grown past what this run can write (its CSV text, state and node table for the
#      config, graph and model): refused before it is read, resumed from checkpoint.old/; check
#      (which has no model to bound it by) streams its checksum without holding it;
#  (o) a rank stopped during the set-up: the watchdog watches the set-up too;
#  (q) a node file of the newest checkpoint that is a folder or a FIFO: resumed from
#      checkpoint.old/; one that is a link: read through it, its target kept;
#  (r) a stop signal during the set-up of a large graph (1,024 nodes, complete) under mpirun:
#      every rank stops at the end of the phase it is in (exit 130, the phase named), nothing
#      is computed, summary.yaml and `dtrun check` say interrupted, and resume runs it whole;
#  (p) a rank that works long while another waits for it (rank 0 computing a 250-node consensus
#      matrix, several seconds) does not end the job at --watchdog 1: the waiting rank reads rank
#      0's record of life and waits (before, it ended a healthy job after 1 s).
# A run is stopped (SIGSTOP) where no checkpoint is being written before it is killed, so what
# the kill leaves is known.
# Skipped (77) without data/mnist.
# usage: faults.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_begin "$@"
cp -r data/mnist "$tmp/mnist"
export XDG_CACHE_HOME=$tmp/cache DT_DIGEST_CACHE=1 # the data digests' cache, this test's own
cfg=$tmp/faults.yaml
cat > "$cfg" <<EOF
experiment:
  name: faults
  data_dir: $tmp/mnist
  seed: 3
  checkpoint_every: 100
  graph: {num_nodes: 4, type: cycle}
problem_configs:
  dsgd:
    train_batch_size: 16
    evaluate_frequency: 100
    evaluation: {test_samples: 200}
    optimizer_config: {alg_name: dsgd, outer_iterations: 1500}
EOF
same_run() { # reference resumed what: results CSV (timing aside) and database rows
  same_results "$1" "$2" "$3" || return
  cmp -s <(python3 tests/e2e/db_rows.py dump "$1") <(python3 tests/e2e/db_rows.py dump "$2") && ok || bad "$3: results.sqlite differs"
}
flip() { # file offset: changes one byte
  local b
  b=$(od -An -t u1 -j "$2" -N 1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $(((b + 1) % 256)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
round_of() { od -An -t u8 -j 24 -N 8 "$1/run.ckpt" 2>/dev/null | tr -d ' '; }

"$dtrun" "$cfg" --output-dir "$tmp/ref" --quiet > "$tmp/ref.log" 2>&1 || bad "reference run failed: $(tail -3 "$tmp/ref.log")"

# stop_when PID DIR MIN_ROUND NEED_OLD: stops the run (SIGSTOP) once DIR/checkpoint/ is at round
# MIN_ROUND or later (and DIR/checkpoint.old/ exists, with NEED_OLD) and no checkpoint is being
# written (no checkpoint.tmp/), so that what a kill leaves is known; 1 if the run ended first
stop_when() {
  for _ in $(seq 2400); do
    r=$(round_of "$2/checkpoint")
    if [ -n "$r" ] && [ "$r" -ge "$3" ] && { [ "$4" = 0 ] || [ -e "$2/checkpoint.old/run.ckpt" ]; }; then
      kill -STOP "$1" 2>/dev/null
      [ ! -e "$2/checkpoint.tmp" ] && [ -e "$2/checkpoint/run.ckpt" ] && return 0
      kill -CONT "$1" 2>/dev/null
    fi
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.02
  done
  return 1
}

# the killed run: checkpoint/ at round 200 or later, checkpoint.old/ the one before
"$dtrun" "$cfg" --output-dir "$tmp/k" --quiet > "$tmp/k.log" 2>&1 &
pid=$!
stop_when $pid "$tmp/k" 200 1
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
if [ ! -e "$tmp/k/checkpoint/run.ckpt" ] || [ ! -e "$tmp/k/checkpoint.old/run.ckpt" ]; then
  bad "the run was not killed with two checkpoints: $(ls "$tmp/k")"
  echo "faults: $pass passed, $fail failed"
  exit 1
fi
echo "killed with checkpoints at rounds $(round_of "$tmp/k/checkpoint") and $(round_of "$tmp/k/checkpoint.old")"
for c in a b c d e f m n q1 q2 q3; do cp -r "$tmp/k" "$tmp/$c"; done

# (h) killed before its first checkpoint inside the problem (only the start's, round 0): resumed
"$dtrun" "$cfg" --output-dir "$tmp/h" --quiet > "$tmp/h.log" 2>&1 &
pid=$!
stop_when $pid "$tmp/h" 0 0
echo "(h) killed with its checkpoint at round $(round_of "$tmp/h/checkpoint")"
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
"$dtrun" resume "$tmp/h" --quiet > "$tmp/h2.log" 2>&1 && ok || bad "(h) resume failed: $(tail -3 "$tmp/h2.log")"
same_run "$tmp/ref" "$tmp/h" "(h) killed early, resumed"

# (a) a changed byte inside node 1's state: check says so; resumed from the checkpoint before
"$dtrun" check "$tmp/k" > "$tmp/k.check" 2>&1
grep -q "^  checkpoint: .*/k/checkpoint: problem 'dsgd' (1 of 1) after round [0-9]* of 1500 (every file's checksum verified)$" \
  "$tmp/k.check" && ok || bad "check of an intact checkpoint: $(cat "$tmp/k.check")"
flip "$tmp/a/checkpoint/node_1.ckpt" 100
"$dtrun" check "$tmp/a" > "$tmp/a.check" 2>&1
grep -q "^  checkpoint: .*checkpoint/node_1.ckpt: damaged or changed.*; resume continues from .*/a/checkpoint.old: problem" \
  "$tmp/a.check" && ok || bad "(a) check does not name the damaged checkpoint: $(cat "$tmp/a.check")"
"$dtrun" resume "$tmp/a" --quiet > "$tmp/a.log" 2>&1 && ok || bad "(a) resume failed: $(tail -3 "$tmp/a.log")"
grep -q "checkpoint/node_1.ckpt: damaged or changed" "$tmp/a.log" && grep -q "resuming from .*checkpoint.old" "$tmp/a.log" && ok \
  || bad "(a) resume did not say it passed over the damaged checkpoint: $(tail -3 "$tmp/a.log")"
same_run "$tmp/ref" "$tmp/a" "(a) resumed from checkpoint.old"

# (b) run.ckpt's round counter, and node 0 of the one before: nothing intact, exit 2
flip "$tmp/b/checkpoint/run.ckpt" 24
flip "$tmp/b/checkpoint.old/node_0.ckpt" 40
"$dtrun" check "$tmp/b" > "$tmp/b.check" 2>&1
grep -q "^  checkpoint: .*checkpoint/run.ckpt: damaged or changed.*; no earlier checkpoint is intact$" "$tmp/b.check" && ok \
  || bad "(b) check: $(cat "$tmp/b.check")"
"$dtrun" resume "$tmp/b" --quiet > "$tmp/b.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "checkpoint/run.ckpt: damaged or changed" "$tmp/b.log" && grep -q "no earlier checkpoint is intact" "$tmp/b.log" && ok \
  || bad "(b) exit $rc, not 2 naming run.ckpt: $(tail -3 "$tmp/b.log")"
[ "$(round_of "$tmp/b/checkpoint.old")" = "$(round_of "$tmp/k/checkpoint.old")" ] && ok || bad "(b) the refused resume changed the checkpoint"

# (c) a checkpoint file that never ends
for d in checkpoint checkpoint.old; do ln -sf /dev/zero "$tmp/c/$d/node_2.ckpt"; done
timeout 60 "$dtrun" resume "$tmp/c" --quiet > "$tmp/c.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "node_2.ckpt: cannot read: not a regular file" "$tmp/c.log" && ok || bad "(c) exit $rc: $(tail -3 "$tmp/c.log")"

# (f) an emptied file in the newest checkpoint only
: > "$tmp/f/checkpoint/node_3.ckpt"
"$dtrun" resume "$tmp/f" --quiet > "$tmp/f.log" 2>&1 && grep -q "resuming from .*checkpoint.old" "$tmp/f.log" && ok \
  || bad "(f) an emptied node file: $(tail -3 "$tmp/f.log")"
same_run "$tmp/ref" "$tmp/f" "(f) resumed from checkpoint.old"

# (q) a node file of the newest checkpoint replaced by a folder (with a file in it) or a FIFO:
#     resumed from checkpoint.old/, the damaged checkpoint removed whole (before: "cannot remove
#     .../node_2.ckpt: Is a directory", exit 1, and never resumable); replaced by a link to its
#     content elsewhere: read through the link, and the file it names kept when the checkpoint
#     folders rotate
rm "$tmp/q1/checkpoint/node_2.ckpt" && mkdir "$tmp/q1/checkpoint/node_2.ckpt" && touch "$tmp/q1/checkpoint/node_2.ckpt/x"
rm "$tmp/q2/checkpoint/node_2.ckpt" && mkfifo "$tmp/q2/checkpoint/node_2.ckpt"
for c in q1 q2; do
  timeout 120 "$dtrun" resume "$tmp/$c" --quiet > "$tmp/$c.log" 2>&1 && grep -q "node_2.ckpt: .*resuming from .*checkpoint.old" "$tmp/$c.log" \
    && ok || bad "($c) a node file that is not a file: exit $?, $(tail -3 "$tmp/$c.log")"
  same_run "$tmp/ref" "$tmp/$c" "($c) resumed from checkpoint.old"
done
mv "$tmp/q3/checkpoint/node_2.ckpt" "$tmp/q3.node_2" && ln -s "$tmp/q3.node_2" "$tmp/q3/checkpoint/node_2.ckpt"
timeout 120 "$dtrun" resume "$tmp/q3" --quiet > "$tmp/q3.log" 2>&1 && [ -f "$tmp/q3.node_2" ] && ok \
  || bad "(q3) a node file that is a link: exit $?, $(ls "$tmp/q3.node_2" 2>&1), $(tail -3 "$tmp/q3.log")"
same_run "$tmp/ref" "$tmp/q3" "(q3) resumed through a link"

# (m) a node file grown past its record (64 MB appended): not read past what the node's record can
# be; resumed from checkpoint.old/
truncate -s +64M "$tmp/m/checkpoint/node_1.ckpt"
"$dtrun" resume "$tmp/m" --quiet > "$tmp/m.log" 2>&1 && grep -q "node_1.ckpt: cannot read: larger than a checkpoint can be" "$tmp/m.log" \
  && grep -q "resuming from .*checkpoint.old" "$tmp/m.log" && ok || bad "(m) a grown node file: $(tail -3 "$tmp/m.log")"
same_run "$tmp/ref" "$tmp/m" "(m) resumed from checkpoint.old"

# (n) run.ckpt grown past its bound (256 MB appended, a sparse file): refused unread; check
#     streams it (its checksum fails); resumed from checkpoint.old/
truncate -s +256M "$tmp/n/checkpoint/run.ckpt"
"$dtrun" check "$tmp/n" > "$tmp/n.check" 2>&1
grep -q "^  checkpoint: .*checkpoint/run.ckpt: damaged or changed.*; resume continues from .*/n/checkpoint.old: problem" \
  "$tmp/n.check" && ok || bad "(n) check of a grown run.ckpt: $(cat "$tmp/n.check")"
"$dtrun" resume "$tmp/n" --quiet > "$tmp/n.log" 2>&1 \
  && grep -q "run.ckpt: cannot read: larger than a checkpoint of this run can be ([0-9]* bytes; at most [0-9]*)" "$tmp/n.log" \
  && grep -q "resuming from .*checkpoint.old" "$tmp/n.log" && ok || bad "(n) a grown run.ckpt: $(tail -3 "$tmp/n.log")"
same_run "$tmp/ref" "$tmp/n" "(n) resumed from checkpoint.old"

# (e) only a config.yaml
mkdir "$tmp/e2"
cp "$tmp/e/config.yaml" "$tmp/e2/"
"$dtrun" resume "$tmp/e2" > "$tmp/e.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "not a run folder dtrun wrote" "$tmp/e.log" && [ ! -e "$tmp/e2/summary.yaml" ] && ok || bad "(e) exit $rc: $(tail -3 "$tmp/e.log")"

# (d) the training images changed after the run started (the data is shared: put back after)
cp "$tmp/mnist/train-images-idx3-ubyte" "$tmp/train-images.orig"
flip "$tmp/mnist/train-images-idx3-ubyte" 5000
"$dtrun" resume "$tmp/d" --quiet > "$tmp/d.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "the data changed since this run started: train_images" "$tmp/d.log" && ok || bad "(d) exit $rc: $(tail -3 "$tmp/d.log")"
cmp -s "$tmp/k/summary.yaml" "$tmp/d/summary.yaml" && ok || bad "(d) the refused resume changed summary.yaml"
cmp -s "$tmp/k/checkpoint/run.ckpt" "$tmp/d/checkpoint/run.ckpt" && ok || bad "(d) the refused resume changed the checkpoint"
cp "$tmp/train-images.orig" "$tmp/mnist/train-images-idx3-ubyte"

# (d2) the byte changed again, the size and modification time put back (as `cp -p` or a tool
#      that restores timestamps would): only the change time tells, and the cache keys on it
m=$(stat -c %y "$tmp/mnist/train-images-idx3-ubyte")
"$dtrun" "$cfg" --set problem_configs.dsgd.optimizer_config.outer_iterations=1 --output-dir "$tmp/d2a" --quiet > /dev/null 2>&1 # an entry for it
flip "$tmp/mnist/train-images-idx3-ubyte" 5000
touch -d "$m" "$tmp/mnist/train-images-idx3-ubyte"
[ "$(stat -c %y "$tmp/mnist/train-images-idx3-ubyte")" = "$m" ] || bad "(d2) touch did not put the modification time back"
cp -r "$tmp/k" "$tmp/d2"
"$dtrun" resume "$tmp/d2" --quiet > "$tmp/d2.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "the data changed since this run started: train_images" "$tmp/d2.log" && ok \
  || bad "(d2) a change behind a restored modification time: exit $rc: $(tail -3 "$tmp/d2.log")"
cp "$tmp/train-images.orig" "$tmp/mnist/train-images-idx3-ubyte"

# (d3) the cache's entries hold each file's sha256sum; a damaged one is ignored and written again
digests=$tmp/cache/dtrun/digests
entry() { ls "$digests/$(stat -c %d-%i-%s "$1")"-*.idx 2> /dev/null | tail -1; }
"$dtrun" "$cfg" --set problem_configs.dsgd.optimizer_config.outer_iterations=1 --output-dir "$tmp/d3a" --quiet > /dev/null 2>&1
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  e=$(entry "$tmp/mnist/$f")
  [ -n "$e" ] && [ "$(cat "$e")" = "$(sha256sum < "$tmp/mnist/$f" | cut -d' ' -f1)" ] && ok || bad "(d3) no entry holding $f's sha256sum: '$e'"
done
e=$(entry "$tmp/mnist/t10k-labels-idx1-ubyte")
echo "not a digest" > "$e"
"$dtrun" "$cfg" --set problem_configs.dsgd.optimizer_config.outer_iterations=1 --output-dir "$tmp/d3b" --quiet > /dev/null 2>&1
want=$(sha256sum < "$tmp/mnist/t10k-labels-idx1-ubyte" | cut -d' ' -f1)
grep -q "^  test_labels: \"\?$want\"\?\$" "$tmp/d3b/summary.yaml" && [ "$(cat "$e")" = "$want" ] && ok \
  || bad "(d3) a damaged entry: summary.yaml says $(grep test_labels "$tmp/d3b/summary.yaml"), the entry $(cat "$e")"

# (g) the disk fills while the run evaluates: it stops (exit 1) with every printed evaluation
#     stored, and resumes to the files of a run never interrupted once there is room
mkdir "$tmp/full"
if mount -t tmpfs -o size=6m tmpfs "$tmp/full" 2>/dev/null; then
  trap 'umount -l "$tmp/full" 2>/dev/null; pkill -9 -f "$tmp/" 2>/dev/null; rm -rf "$tmp"' EXIT
  # checkpoints come with the evaluations, after them in a round: the disk fills between two
  # rounds that do both, so the next thing to fail is the evaluation's commit
  "$dtrun" "$cfg" --output-dir "$tmp/full/g" > "$tmp/g.log" 2>&1 &
  pid=$!
  stop_when $pid "$tmp/full/g" 200 0 # the checkpoint of round 200 written, the run held
  dd if=/dev/zero of="$tmp/full/filler" bs=64k > /dev/null 2>&1 # until the disk is full
  kill -CONT $pid
  wait $pid
  rc=$?
  printed=$(grep -cE '^dsgd +[0-9]+ \|' "$tmp/g.log")
  stored=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(DISTINCT round) FROM evaluations").fetchone()[0])' \
    "$tmp/full/g/results.sqlite" 2>&1)
  [ $rc = 1 ] && [ "$printed" = "$stored" ] && grep -q "results.sqlite: COMMIT: database or disk is full" "$tmp/g.log" && ok \
    || bad "(g) a full disk: exit $rc, $printed evaluations printed, $stored stored: $(tail -3 "$tmp/g.log")"
  rm -f "$tmp/full/filler"
  "$dtrun" resume "$tmp/full/g" --quiet > "$tmp/g2.log" 2>&1 && ok || bad "(g) resume after the disk had room again: $(tail -3 "$tmp/g2.log")"
  same_run "$tmp/ref" "$tmp/full/g" "(g) stopped by a full disk, resumed"
else
  echo "note: (g) skipped: no tmpfs could be mounted here"
fi

# (i) a signal while the last problem runs its last (here: only) round: the problem finishes and
#     the run is complete (exit 0, status completed, no checkpoint left), not interrupted
cat > "$tmp/last.yaml" <<EOF
experiment:
  name: last
  data_dir: $tmp/mnist
  seed: 3
  graph: {num_nodes: 4, type: cycle}
problem_configs:
  dsgd: # one long round (2 full-batch steps per node), short evaluations: the signal lands in the round
    full_batch: true
    evaluate_frequency: 1
    evaluation: {test_samples: 100}
    optimizer_config: {alg_name: local_dsgd, outer_iterations: 1, local_steps: 2}
EOF
"$dtrun" "$tmp/last.yaml" --output-dir "$tmp/i" --progress never > "$tmp/i.log" 2>&1 &
pid=$!
for _ in $(seq 1200); do grep -qE '^dsgd +0 [|]' "$tmp/i.log" && break; sleep 0.02; done # round 0 evaluated: in the round
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 0 ] && grep -q '^status: completed' "$tmp/i/summary.yaml" && [ ! -e "$tmp/i/checkpoint" ] \
  && grep -q 'arrived as the last problem finished: the run is complete' "$tmp/i.log" && ok \
  || bad "(i) a signal in the last round: exit $rc, $(grep '^status' "$tmp/i/summary.yaml"), $(tail -2 "$tmp/i.log")"

# (j) results.sqlite deleted after a kill, then damaged after the run completed: resume rebuilds
#     the run's rows from its files (the finished problems' CSVs and summary.yaml, the current
#     problem's rows so far from the checkpoint), never a database silently missing what came
#     before; a damaged database is kept as results.sqlite.damaged. Rows as the uninterrupted
#     run's, at the CSVs' 9 significant digits.
cat > "$tmp/two.yaml" <<EOF
experiment:
  name: two
  data_dir: $tmp/mnist
  seed: 3
  checkpoint_every: 50
  graph: {num_nodes: 4, type: cycle}
problem_configs:
  a:
    train_batch_size: 16
    evaluate_frequency: 50
    evaluation: {test_samples: 200}
    optimizer_config: {alg_name: dsgd, outer_iterations: 400}
  b:
    train_batch_size: 16
    evaluate_frequency: 50
    evaluation: {test_samples: 200}
    optimizer_config: {alg_name: dsgt, outer_iterations: 400}
EOF
same_rows() { # reference run what: every row as the reference's, reals at the CSVs' 9 digits
  cmp -s <(python3 tests/e2e/db_rows.py dump9 "$1") <(python3 tests/e2e/db_rows.py dump9 "$2") \
    && [ "$(sqlite3 "$1/results.sqlite" 'SELECT COUNT(*) FROM evaluations')" = 72 ] && ok || bad "$3: the rebuilt rows differ from the reference's"
}
"$dtrun" "$tmp/two.yaml" --output-dir "$tmp/two_ref" --quiet > /dev/null 2>&1 || bad "(j) the reference run failed"
two_killed() { # FOLDER: two.yaml killed inside the second problem, after a checkpoint of it
  "$dtrun" "$tmp/two.yaml" --output-dir "$1" --quiet > /dev/null 2>&1 &
  local pid=$! p r
  for _ in $(seq 2400); do
    p=$(od -An -t u8 -j 16 -N 8 "$1/checkpoint/run.ckpt" 2>/dev/null | tr -d ' ')
    r=$(round_of "$1/checkpoint")
    [ -n "$p" ] && [ "$p" -ge 1 ] && [ -n "$r" ] && [ "$r" -ge 100 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.02
  done
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
}
two_killed "$tmp/j"
rm -f "$tmp/j/results.sqlite" "$tmp/j/results.sqlite-wal" "$tmp/j/results.sqlite-shm"
"$dtrun" resume "$tmp/j" --quiet > "$tmp/j.log" 2>&1 && grep -q "results.sqlite had no rows of this run: rebuilt from its files (1 finished problem" \
  "$tmp/j.log" && ok || bad "(j) resume without results.sqlite: $(tail -3 "$tmp/j.log")"
same_rows "$tmp/two_ref" "$tmp/j" "(j) killed, results.sqlite deleted, resumed"
printf 'not a database: these bytes replace the file that was one, and resume must notice it ......\n' > "$tmp/j/results.sqlite"
"$dtrun" resume "$tmp/j" > "$tmp/j2.log" 2>&1 && grep -q "results.sqlite was damaged (file is not a database): kept as results.sqlite.damaged" \
  "$tmp/j2.log" && [ -f "$tmp/j/results.sqlite.damaged" ] && ok || bad "(j) resume of a completed run with a damaged database: $(tail -3 "$tmp/j2.log")"
same_rows "$tmp/two_ref" "$tmp/j" "(j) completed, results.sqlite damaged, resumed"
#     A database that opens and passes quick_check but lost its evaluations table (or some rows)
#     is repaired too: resume puts back what the files hold and it lacks, and keeps the rows it
#     has (before: the table came back empty, exit 0 and no word, 28 of the 72 rows)
two_killed "$tmp/j3"
sqlite3 "$tmp/j3/results.sqlite" 'DROP TABLE evaluations'
"$dtrun" resume "$tmp/j3" --quiet > "$tmp/j3.log" 2>&1 && grep -q "results.sqlite lacked rows of this run: 1 finished problem restored" \
  "$tmp/j3.log" && grep -q "lacked [0-9]* evaluation rows of problem b before the checkpoint" "$tmp/j3.log" && ok \
  || bad "(j) resume of a killed run whose database lost its evaluations table: $(tail -3 "$tmp/j3.log")"
same_rows "$tmp/two_ref" "$tmp/j3" "(j) killed, evaluations table dropped, resumed"
sqlite3 "$tmp/j3/results.sqlite" 'DELETE FROM evaluations WHERE problem = 1 AND round < 200; DELETE FROM problems WHERE problem = 0'
"$dtrun" resume "$tmp/j3" --quiet > "$tmp/j4.log" 2>&1 && grep -q "results.sqlite lacked rows of this run: 2 finished problems restored" \
  "$tmp/j4.log" && ok || bad "(j) resume of a completed run whose database lost rows: $(tail -3 "$tmp/j4.log")"
same_rows "$tmp/two_ref" "$tmp/j3" "(j) completed, rows deleted, resumed"

# (k) a rank that stops answering (SIGSTOP) under mpirun: the others' watchdog ends the job
#     after --watchdog seconds without progress, saying where it waited; the last checkpoint is
#     kept and resume (at P = 1) ends with the files and rows of a run never interrupted
"$mpiexec" --oversubscribe -n 2 "$dtrun" "$tmp/two.yaml" --output-dir "$tmp/wd" --watchdog 3 --quiet > "$tmp/wd.log" 2>&1 &
pid=$!
for _ in $(seq 2400); do
  r=$(round_of "$tmp/wd/checkpoint")
  [ -n "$r" ] && [ "$r" -ge 100 ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.02
done
for p in $(pgrep -f "$tmp/two.yaml --output-dir $tmp/wd"); do
  tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=1$' && kill -STOP "$p" && stopped=$p
done
t0=$(date +%s)
for _ in $(seq 600); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
waited=$(($(date +%s) - t0))
kill -0 $pid 2>/dev/null && { pkill -9 -f "$tmp/wd"; bad "(k) the job still runs 60 s after a rank stopped"; }
wait $pid
rc=$?
[ $rc != 0 ] && [ $waited -le 30 ] && grep -q "rank 0 of 2 (.*): no progress for [0-9]* s, in .* of problem .*; rank 1 (.*, pid $stopped) stopped answering: no sign of life for [0-9]* s, its last in .*: ending the job (--watchdog 3 s)" \
  "$tmp/wd.log" && ok || bad "(k) a frozen rank: exit $rc after $waited s: $(head -3 "$tmp/wd.log")"
[ -f "$tmp/wd/.alive/rank_1" ] && ok || bad "(k) the ranks' records of life are not in the run folder"
"$dtrun" resume "$tmp/wd" --quiet > "$tmp/wd2.log" 2>&1 && ok || bad "(k) resume after the watchdog: $(tail -3 "$tmp/wd2.log")"
same_run "$tmp/two_ref" "$tmp/wd" "(k) ended by the watchdog, resumed"
[ ! -e "$tmp/wd/.alive" ] && ok || bad "(k) the records of life outlived the run that completed"

# (o) a rank stopped during the set-up (as soon as its watchdog thread exists, before it loads
#     the data): the other rank's watchdog ends the job, saying it waited in the set-up
"$mpiexec" --oversubscribe -n 2 "$dtrun" "$tmp/two.yaml" --output-dir "$tmp/wo" --watchdog 3 --quiet > "$tmp/wo.log" 2>&1 &
pid=$!
stopped=
for _ in $(seq 3000); do
  for p in $(pgrep -f "$tmp/two.yaml --output-dir $tmp/wo"); do
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=1$' && grep -qx dt-watchdog /proc/$p/task/*/comm 2>/dev/null \
      && kill -STOP "$p" && stopped=$p
  done
  [ -n "$stopped" ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.005
done
for _ in $(seq 600); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
kill -0 $pid 2>/dev/null && { pkill -9 -f "$tmp/wo"; bad "(o) the job still runs 60 s after a rank stopped in its set-up"; }
wait $pid
rc=$?
[ -n "$stopped" ] && [ $rc != 0 ] && grep -q "rank 0 of 2 (.*): no progress for [0-9]* s, in the set-up.*: ending the job (--watchdog 3 s)" "$tmp/wo.log" \
  && ok || bad "(o) a rank stopped in the set-up (pid ${stopped:-none}): exit $rc: $(head -3 "$tmp/wo.log")"

# (p) a rank alive and making progress keeps the job going while the others wait for it
cat > "$tmp/cm.yaml" <<EOF
experiment: {name: cm, data_dir: $tmp/mnist, seed: 1, graph: {num_nodes: 250, type: cycle}}
problem_configs:
  p:
    evaluate_frequency: 1
    evaluation: {test_samples: 10}
    metrics: [consensus_error, consensus_matrix]
    optimizer_config: {alg_name: dsgd, outer_iterations: 1}
EOF
"$mpiexec" --oversubscribe -n 2 "$dtrun" "$tmp/cm.yaml" --watchdog 1 --output-dir "$tmp/cm" --quiet > "$tmp/cm.log" 2>&1 \
  && [ -s "$tmp/cm/p_consensus.csv" ] && [ ! -e "$tmp/cm/.alive" ] && ok || bad "(p) a rank waiting for a busy rank 0 ended the job: $(head -2 "$tmp/cm.log")"

# (l) a stop signal during a long evaluation (128 nodes, the whole test set each): it stops
#     between nodes, on every rank, nothing of it recorded; the state after its round is
#     checkpointed and resume measures that evaluation again, to the files and rows of a run
#     never interrupted
cat > "$tmp/ev.yaml" <<EOF
experiment:
  name: ev
  data_dir: $tmp/mnist
  seed: 3
  graph: {num_nodes: 128, type: cycle}
problem_configs:
  dsgd:
    train_batch_size: 16
    evaluate_frequency: 5
    optimizer_config: {alg_name: dsgd, outer_iterations: 10}
EOF
"$dtrun" "$tmp/ev.yaml" --output-dir "$tmp/ev_ref" --quiet > /dev/null 2>&1 || bad "(l) the reference run failed"
"$mpiexec" --oversubscribe -n 2 "$dtrun" "$tmp/ev.yaml" --output-dir "$tmp/ev" --progress never > "$tmp/ev.log" 2>&1 &
pid=$!
for _ in $(seq 1500); do grep -qE '^dsgd +0 [|]' "$tmp/ev.log" && break; sleep 0.02; done
sleep 0.5 # rounds 1-5 take a fraction of that; the evaluation of round 5 several times more
kill -USR2 $pid # mpirun forwards SIGUSR2 as it is and exits with the ranks' 130 (docs/guide.md)
wait $pid
rc=$?
[ $rc = 130 ] && grep -q "interrupted during the evaluation of round 5" "$tmp/ev.log" && ! grep -qE '^dsgd +5 [|]' "$tmp/ev.log" && ok \
  || bad "(l) a signal during an evaluation: exit $rc, $(grep -E 'interrupt|^dsgd' "$tmp/ev.log" | tail -3)"
"$dtrun" resume "$tmp/ev" --quiet > "$tmp/ev2.log" 2>&1 && ok || bad "(l) resume: $(tail -3 "$tmp/ev2.log")"
same_run "$tmp/ev_ref" "$tmp/ev" "(l) stopped in an evaluation, resumed"

# (r) a stop signal in the set-up (before, it went unheeded until the first round had ended)
cat > "$tmp/su.yaml" <<EOF
experiment:
  name: su
  data_dir: $tmp/mnist
  seed: 3
  graph: {num_nodes: 1024, type: complete}
problem_configs:
  dsgd:
    evaluation: {test_samples: 50}
    optimizer_config: {alg_name: dsgd, outer_iterations: 1}
EOF
# set_up_signal WHEN NAME: a 2-rank run of su.yaml into $tmp/NAME, sent SIGUSR2 (mpirun forwards
# it) once its log shows WHEN; its exit code
set_up_signal() {
  "$mpiexec" --oversubscribe -n 2 "$dtrun" "$tmp/su.yaml" --output-dir "$tmp/$2" --log-level debug > "$tmp/$2.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1500); do grep -q "$1" "$tmp/$2.log" && break; sleep 0.01; done
  kill -USR2 $pid
  wait $pid
}
set_up_signal 'set-up: backend' su1 # in the graph's construction: no folder yet
rc=$?
[ $rc = 130 ] && grep -q "interrupted by signal 12 in set-up (graph); no run folder was made" "$tmp/su1.log" && [ ! -e "$tmp/su1" ] && ok \
  || bad "(r) a signal in the graph's set-up: exit $rc, $(grep -E 'interrupt|^==|set-up' "$tmp/su1.log" | tail -3)"
set_up_signal '^output: ' su2 # writing graph.yaml: a folder that says so
rc=$?
[ $rc = 130 ] && grep -q "interrupted by signal 12 in set-up (.*); nothing was computed yet" "$tmp/su2.log" && ! grep -q '^== dsgd' "$tmp/su2.log" && ok \
  || bad "(r) a signal in set-up: exit $rc, $(grep -E 'interrupt|^==|set-up' "$tmp/su2.log" | tail -3)"
"$dtrun" check "$tmp/su2" > "$tmp/su_check.log" 2>&1
grep -q ": interrupted" "$tmp/su_check.log" && grep -q "^status: interrupted" "$tmp/su2/summary.yaml" && ok \
  || bad "(r) the folder's state after a signal in set-up: $(head -2 "$tmp/su_check.log")"
"$dtrun" resume "$tmp/su2" --quiet > "$tmp/su2_resume.log" 2>&1 && [ -s "$tmp/su2/dsgd_results.csv" ] && ok \
  || bad "(r) resume: $(tail -3 "$tmp/su2_resume.log")"

echo "faults: $pass passed, $fail failed"
exit $((fail > 0))
