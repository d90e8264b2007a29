#!/usr/bin/env bash
# Checkpoints and `dtrun resume` on real MNIST: runs killed with SIGKILL at random moments under
# mpirun -np 5 and resumed at P = 2 and P = 1 (a resumed run killed again, and resumed again,
# too) end with files identical to a run never interrupted (timing columns aside); SIGTERM
# checkpoints and exits 130; SIGUSR1 checkpoints and goes on; the status commands tell killed
# from running. The kill moments come from RESUME_SEED (printed), so a failure can be replayed.
# Skipped (77) without data/mnist.
# usage: resume.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_begin "$@"
seed=${RESUME_SEED:-$RANDOM}
RANDOM=$seed
echo "RESUME_SEED=$seed"
# The last lines of a log that dtrun wrote: under mpirun the log ends in OpenMPI's help boxes and
# "[host:pid] ... help message" lines, which say nothing about why.
last_words() { grep -vE '^(\[[^]]*\] |-{20,}$)' "$1" | tail -8; }
same_files() { # reference run resumed what
  local f b
  for f in "$1"/*_results.csv; do
    b=$(basename "$f")
    if ! cmp -s <(strip_times "$f") <(strip_times "$2/$b"); then
      bad "$3: $b differs"; diff <(strip_times "$f") <(strip_times "$2/$b") 2>/dev/null | head -4; return
    fi
  done
  for f in "$1"/*.npy "$1"/*_consensus.csv "$1"/split.csv "$1"/graph.yaml "$1"/config.yaml; do
    [ -e "$f" ] || continue # a config without dinno has no models or consensus files
    cmp -s "$f" "$2/$(basename "$f")" || { bad "$3: $(basename "$f") differs"; return; }
  done
  # results.sqlite: what the killed runs committed after their checkpoints was measured again
  if ! cmp -s <(python3 tests/e2e/db_rows.py dump "$1") <(python3 tests/e2e/db_rows.py dump "$2"); then
    bad "$3: results.sqlite differs"; diff <(python3 tests/e2e/db_rows.py dump "$1") <(python3 tests/e2e/db_rows.py dump "$2") | head -4
    return
  fi
  [ "$(grep -c '^  status: completed' "$2/summary.yaml")" = "$(grep -c "alg_name:" "$config")" ] && grep -q '^status: completed' "$2/summary.yaml" \
    || { bad "$3: summary.yaml does not say completed"; return; }
  [ ! -e "$2/checkpoint" ] && [ ! -e "$2/dtrun.lock" ] || { bad "$3: checkpoint or lock left behind: $(ls "$2")"; return; }
  ok
}
config=tests/e2e/small.yaml
every="--set experiment.checkpoint_every=7"

"$dtrun" $config $every --output-dir "$tmp/ref" --quiet > "$tmp/ref.log" 2>&1 || { bad "reference run failed: $(tail -3 "$tmp/ref.log")"; }


# (1) killed at P = 5, resumed at P = 2
kill_later $((RANDOM % 4)) "$tmp/a" "$tmp/a.log" "$mpiexec" --oversubscribe -n 5 "$dtrun" $config $every --output-dir "$tmp/a" --quiet
"$dtrun" check "$tmp/a" > "$tmp/a.check" 2>&1
if grep -q "completed" "$tmp/a.check"; then echo "note: run (1) completed before the kill"; else
  grep -q ": killed" "$tmp/a.check" && ok || bad "check does not say killed: $(cat "$tmp/a.check")"
fi
echo "(1) killed at: $(grep checkpoint: "$tmp/a.check")"
# a kill inside a checkpoint's swap can leave a stale checkpoint.old/ beside checkpoint/
[ -d "$tmp/a/checkpoint" ] && rm -rf "$tmp/a/checkpoint.old" && cp -r "$tmp/a/checkpoint" "$tmp/a/checkpoint.old"
"$mpiexec" --oversubscribe -n 2 "$dtrun" resume "$tmp/a" --quiet > "$tmp/a2.log" 2>&1 || bad "resume at P=2 failed: $(last_words "$tmp/a2.log")"
same_files "$tmp/ref" "$tmp/a" "killed at P=5, resumed at P=2"

# (2) killed at P = 5, resumed at P = 2 and killed again, resumed at P = 1
kill_later $((RANDOM % 3)) "$tmp/b" "$tmp/b.log" "$mpiexec" --oversubscribe -n 5 "$dtrun" $config $every --output-dir "$tmp/b" --quiet
echo "(2) killed at: $("$dtrun" check "$tmp/b" | grep checkpoint:)"
# ... or only checkpoint.old/ (between the two renames) and a partial checkpoint.tmp/
if [ -d "$tmp/b/checkpoint" ]; then
  rm -rf "$tmp/b/checkpoint.old" && mv "$tmp/b/checkpoint" "$tmp/b/checkpoint.old"
  mkdir -p "$tmp/b/checkpoint.tmp" && echo partial > "$tmp/b/checkpoint.tmp/node_0.ckpt"
fi
kill_later 4 "$tmp/b" "$tmp/b2.log" "$mpiexec" --oversubscribe -n 2 "$dtrun" resume "$tmp/b" --quiet
echo "(2) killed again at: $("$dtrun" check "$tmp/b" | grep checkpoint:)"
"$dtrun" resume "$tmp/b" --quiet > "$tmp/b3.log" 2>&1 || bad "resume at P=1 failed: $(tail -3 "$tmp/b3.log")"
same_files "$tmp/ref" "$tmp/b" "killed at P=5, at P=2, resumed at P=1"

# (3) SIGUSR2 to mpirun (forwarded as it is): a checkpoint, the files marked interrupted,
# mpirun exits 130; resume at P = 1. SIGTERM to a run without mpirun: the same, exit 130.
# (SIGTERM to OpenMPI 4.1's mpirun is not tested: mpirun exits 1 whatever the ranks do, and
# kills them after odls_base_sigkill_timeout; README "Checkpoints and resume" says so.)
signal_run() { # signal dir launcher...
  local sig=$1 dir=$2
  shift 2
  "$@" $config $every --output-dir "$dir" --quiet > "$dir.log" 2>&1 &
  local pid=$!
  for _ in $(seq 600); do [ -f "$dir/dsgd_results.csv" ] && break; sleep 0.05; done
  sleep "0.$((RANDOM % 10))"
  kill -"$sig" $pid
  wait $pid
}
signal_run USR2 "$tmp/c" "$mpiexec" --oversubscribe -n 5 "$dtrun"
rc=$?
[ $rc = 130 ] && ok || bad "SIGUSR2 to mpirun: exit $rc, expected 130 ($(tail -2 "$tmp/c.log"))"
grep -q "^status: interrupted" "$tmp/c/summary.yaml" && ok || bad "SIGUSR2: summary.yaml does not say interrupted"
"$dtrun" resume "$tmp/c" --quiet > "$tmp/c2.log" 2>&1 || bad "resume after SIGUSR2 failed: $(tail -3 "$tmp/c2.log")"
same_files "$tmp/ref" "$tmp/c" "SIGUSR2 at P=5, resumed at P=1"
signal_run TERM "$tmp/t1" "$dtrun"
rc=$?
[ $rc = 130 ] && grep -q "^status: interrupted" "$tmp/t1/summary.yaml" && ok || bad "SIGTERM without mpirun: exit $rc"
"$mpiexec" --oversubscribe -n 2 "$dtrun" resume "$tmp/t1" --quiet > "$tmp/t2.log" 2>&1 || bad "resume after SIGTERM failed: $(last_words "$tmp/t2.log")"
same_files "$tmp/ref" "$tmp/t1" "SIGTERM at P=1, resumed at P=2"

# (5) a time-varying graph, killed in choco's per-edge state (an estimate per directed edge, its
# rows grouped by node in the checkpoint) at P = 5, resumed at P = 2: the same files
config=tests/e2e/schedules.yaml
sched="--set experiment.graph.schedule=random_matching --set experiment.graph.type=random --set experiment.graph.p=0.6
  --set problem_configs.choco.optimizer_config.outer_iterations=300 $every"
"$dtrun" $config $sched --output-dir "$tmp/sref" --quiet > "$tmp/sref.log" 2>&1 || bad "schedule reference run failed: $(tail -3 "$tmp/sref.log")"
kill_later 4 "$tmp/s" "$tmp/s.log" "$mpiexec" --oversubscribe -n 5 "$dtrun" $config $sched --output-dir "$tmp/s" --quiet
echo "(5) killed at: $("$dtrun" check "$tmp/s" | grep checkpoint:)"
if "$dtrun" check "$tmp/s" | grep -q completed; then echo "note: run (5) completed before the kill"; else
  "$mpiexec" --oversubscribe -n 2 "$dtrun" resume "$tmp/s" --quiet > "$tmp/s2.log" 2>&1 || bad "schedule resume at P=2 failed: $(last_words "$tmp/s2.log")"
  same_files "$tmp/sref" "$tmp/s" "time-varying graph killed at P=5, resumed at P=2"
fi
config=tests/e2e/small.yaml

# (6) SIGUSR2 to ONE rank, at random moments of a run of short problems (most of its time is
# between problems): every rank stops, the files say interrupted, the job exits 130 and resumes
# to the same files. (Deciding on each rank's own flag between problems hung such a job.)
short="--set problem_configs.*.optimizer_config.outer_iterations=2"
"$dtrun" $config $short --output-dir "$tmp/oref" --quiet > "$tmp/oref.log" 2>&1 || bad "short reference run failed"
for it in 1 2 3; do
  dir=$tmp/o$it
  timeout -s KILL 120 "$mpiexec" --oversubscribe -n 3 "$dtrun" $config $short --output-dir "$dir" --quiet > "$dir.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do [ -f "$dir/split.csv" ] && break; sleep 0.02; done
  sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
  kill -USR2 "$(pgrep -f "^$dtrun $config.*$dir" | sed -n 3p)" 2>/dev/null
  wait $pid
  rc=$?
  if [ $rc = 0 ]; then echo "note: run (6.$it) completed before the signal"; continue; fi
  [ $rc = 130 ] && grep -q "^status: interrupted" "$dir/summary.yaml" && ok \
    || { bad "SIGUSR2 to one rank: exit $rc (137: hung), summary $(grep -m1 '^status' "$dir/summary.yaml")"; continue; }
  "$dtrun" resume "$dir" --quiet > "$dir.r.log" 2>&1 || bad "resume after SIGUSR2 to one rank failed: $(tail -3 "$dir.r.log")"
  same_files "$tmp/oref" "$dir" "SIGUSR2 to one rank of 3, resumed at P=1"
done

# (4) SIGUSR1: a checkpoint while the run goes on
"$dtrun" $config --set problem_configs.dinno.optimizer_config.outer_iterations=100000 --output-dir "$tmp/d" --quiet > "$tmp/d.log" 2>&1 &
pid=$!
for _ in $(seq 600); do [ -f "$tmp/d/dinno_results.csv" ] || [ -n "$(grep -l dinno "$tmp/d/summary.yaml" 2>/dev/null)" ] && break; [ -f "$tmp/d/split.csv" ] && break; sleep 0.05; done
sleep 1
kill -USR1 $pid
for _ in $(seq 200); do [ -f "$tmp/d/checkpoint/node_4.ckpt" ] && break; sleep 0.05; done
[ -f "$tmp/d/checkpoint/node_4.ckpt" ] && kill -0 $pid 2>/dev/null && ok || bad "SIGUSR1 did not checkpoint, or the run stopped"
"$dtrun" check "$tmp/d" > "$tmp/d.check" 2>&1
grep -q ": running (pid $pid on host" "$tmp/d.check" && ok || bad "check of a live run: $(head -1 "$tmp/d.check")"
# a second run into the same folder is refused, --force or not, and a resume too
"$dtrun" $config --output-dir "$tmp/d" --force --quiet > "$tmp/d2.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "is in use by another dtrun (pid $pid" "$tmp/d2.log" && ok || bad "second run into a busy folder: exit $rc: $(cat "$tmp/d2.log")"
"$dtrun" resume "$tmp/d" > "$tmp/d3.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "is still running" "$tmp/d3.log" && ok || bad "resume of a live run: exit $rc: $(cat "$tmp/d3.log")"
kill -9 $pid
wait $pid 2>/dev/null
"$dtrun" check "$tmp/d" 2>&1 | grep -q ": killed" && ok || bad "check after SIGKILL does not say killed"
"$dtrun" compare "$tmp/d" 2>&1 | grep -q "killed" && ok || bad "compare does not say killed"

# a completed run has nothing to resume; --output-dir into a non-empty folder needs --force
"$dtrun" resume "$tmp/ref" > "$tmp/e.log" 2>&1 && grep -q "completed; nothing to resume" "$tmp/e.log" && ok || bad "resume of a completed run: $(cat "$tmp/e.log")"
"$dtrun" $config --output-dir "$tmp/ref" --quiet > "$tmp/f.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "is not empty (it holds .*--force" "$tmp/f.log" && ok || bad "non-empty --output-dir: exit $rc: $(cat "$tmp/f.log")"

# an output folder name longer than its buffer: a clear error, not an endless retry loop
long=$tmp; for c in d e f g h; do long=$long/$(printf "$c%.0s" $(seq 190)); done
timeout 60 "$dtrun" $config --set experiment.output_metadir="$long" --set experiment.name="$(printf "n%.0s" $(seq 127))" --quiet \
  > "$tmp/long.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "would have names of up to" "$tmp/long.log" && ok || bad "long output folder: exit $rc: $(head -c 300 "$tmp/long.log")"
# a models file that cannot be written (here a folder in its place) fails the run, but the
# problem's results are on disk
mkdir -p "$tmp/m/dinno_models.npy"
"$dtrun" $config --set problem_configs.dinno.optimizer_config.outer_iterations=3 --output-dir "$tmp/m" --force --quiet > "$tmp/m.log" 2>&1
rc=$?
[ $rc = 1 ] && [ -s "$tmp/m/dinno_results.csv" ] && grep -q "^status: failed" "$tmp/m/summary.yaml" && ok \
  || bad "failed models write: exit $rc, results $(ls "$tmp/m"), $(tail -1 "$tmp/m.log")"

# an archived config with a relative edge_file re-runs (and so resumes) from its run folder
mkdir -p "$tmp/eg"
printf '0 1\n1 2\n2 3\n3 4\n4 0\n' > "$tmp/eg/ring.txt"
sed 's/graph: {num_nodes: 5, type: cycle}/graph: {num_nodes: 5, type: file, edge_file: ring.txt}/' $config > "$tmp/eg/eg.yaml"
one="--set problem_configs.dinno.optimizer_config.outer_iterations=2"
"$dtrun" "$tmp/eg/eg.yaml" $one --output-dir "$tmp/eg/run" --quiet > "$tmp/eg.log" 2>&1 || bad "edge-file run failed: $(tail -2 "$tmp/eg.log")"
"$dtrun" "$tmp/eg/run/config.yaml" --output-dir "$tmp/eg/rerun" --quiet > "$tmp/eg2.log" 2>&1 && ok \
  || bad "the archived config of an edge-file run does not re-run: $(tail -1 "$tmp/eg2.log")"

echo "resume: $pass passed, $fail failed (RESUME_SEED=$seed)"
[ $fail = 0 ]
