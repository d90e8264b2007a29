# Checks the e2e and cluster tests share (sourced): the ok / bad count, result files compared
# with their timing columns aside, and the e2e scripts' common start.

fail=0 pass=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
strip_times() { # a results CSV without its time_* columns (wall-clock times); every other column kept
  awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) keep[i] = $i !~ /^time_/}
           {s = ""; for (i = 1; i <= NF; i++) if (keep[i]) s = s (s == "" ? "" : ",") $i; print s}' "$1"
}
# same_results DIR_A DIR_B WHAT: every results CSV (timing aside), config, graph and split are
# the same, and so are the pairwise consensus files and saved models either side has; counts one
# ok, or one bad and returns 1.
same_results() {
  local f n=0
  for f in "$1"/*_results.csv; do
    [ -e "$f" ] || break # the glob matched nothing
    n=$((n + 1))
    cmp -s <(strip_times "$f") <(strip_times "$2/$(basename "$f")") || {
      bad "$3: $(basename "$f") differs"
      diff <(strip_times "$f") <(strip_times "$2/$(basename "$f")") | head -5
      return 1
    }
  done
  for f in config.yaml graph.yaml split.csv; do
    cmp -s "$1/$f" "$2/$f" || { bad "$3: $f differs"; return 1; }
  done
  for f in $( (cd "$1" && ls -- *_consensus.csv *_models.npy; cd "$2" && ls -- *_consensus.csv *_models.npy) 2>/dev/null | sort -u); do
    cmp -s "$1/$f" "$2/$f" || { bad "$3: $f differs"; return 1; }
  done
  [ $n -gt 0 ] || { bad "$3: no result files"; return 1; }
  ok
}

# e2e_start DTRUN MPIEXEC SOURCE_ROOT: sets dtrun and mpiexec, works from the source root, and
# makes $tmp, removed (its processes killed) when the test ends.
e2e_start() {
  dtrun=$(realpath "$1") mpiexec=$2
  cd "$3" || exit 1
  tmp=$(mktemp -d)
  trap 'pkill -9 -f "$tmp/" 2>/dev/null; rm -rf "$tmp"' EXIT
}

# e2e_begin DTRUN MPIEXEC SOURCE_ROOT: e2e_start, for a test on real MNIST: skips (77) without
# data/mnist.
e2e_begin() {
  [ -f "$3/data/mnist/train-images-idx3-ubyte" ] || { echo "no data/mnist: run scripts/setup.sh"; exit 77; }
  e2e_start "$@"
}

# Starts a run in the background (the rest of the arguments), waits until its checkpoint is of
# problem >= $1, sleeps a random 0-0.4 s more and kills every process of it with SIGKILL. (The
# e2e configs' runs evaluate on a test subset: the last problems of tests/e2e/async.yaml take
# under a second, so a longer wait let the run finish before the kill.)
kill_later() {
  local at=$1 dir=$2 log=$3
  shift 3
  "$@" > "$log" 2>&1 &
  local pid=$! p=-1
  for _ in $(seq 600); do
    p=$(od -An -t u8 -j 16 -N 8 "$dir/checkpoint/run.ckpt" 2>/dev/null | tr -d ' ')
    [ -n "$p" ] && [ "$p" -ge "$at" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  sleep "0.$((RANDOM % 5))"
  pkill -9 -f "dtrun.*$dir" 2>/dev/null
  wait $pid 2>/dev/null
  # the ranks are mpirun's children, not ours: wait until they are gone (one caught in an fsync
  # dies when the write ends, and holds the folder's lock until then)
  for _ in $(seq 300); do pgrep -f "dtrun.*$dir" > /dev/null || break; sleep 0.1; done
  # an exiting process has no command line for pgrep but still holds its files until its
  # threads are gone: wait until the folder's lock is free too
  for _ in $(seq 300); do [ ! -e "$dir/dtrun.lock" ] || flock -n "$dir/dtrun.lock" true && break; sleep 0.1; done
}

# ranks_and_rerun CONFIG P WHAT: CONFIG run at P = 1 (into $tmp/p1) and at P ranks (into $tmp/pP),
# and $tmp/p1's archived config re-run (into $tmp/again), give the same files.
ranks_and_rerun() {
  local cfg=$1 np=$2 what=$3
  "$dtrun" "$cfg" --output-dir "$tmp/p1" --quiet > "$tmp/p1.log" 2>&1 || bad "$what at P=1 failed: $(tail -3 "$tmp/p1.log")"
  "$mpiexec" --oversubscribe -n "$np" "$dtrun" "$cfg" --output-dir "$tmp/p$np" --quiet > "$tmp/p$np.log" 2>&1 \
    || bad "$what at P=$np failed: $(tail -3 "$tmp/p$np.log")"
  same_results "$tmp/p1" "$tmp/p$np" "$what P=1 vs P=$np"
  "$dtrun" "$tmp/p1/config.yaml" --output-dir "$tmp/again" --quiet > "$tmp/again.log" 2>&1 \
    || bad "$what: re-run of the archived config failed: $(tail -3 "$tmp/again.log")"
  same_results "$tmp/p1" "$tmp/again" "$what archived config re-run"
}

# killed_resumed CONFIG AT WHAT: CONFIG checkpointing every 5 rounds, killed at P = 3 once its
# checkpoint is of problem >= AT and resumed at P = 2 (in $tmp/k), gives the files of a run that
# was not interrupted ($tmp/ref). Sets killed_round: the round of its problem the checkpoint it was
# killed with holds (0: the kill fell between two problems, nothing is resumed inside one).
killed_resumed() {
  local cfg=$1 at=$2 what=$3
  kill_later "$at" "$tmp/k" "$tmp/k.log" "$mpiexec" --oversubscribe -n 3 "$dtrun" "$cfg" --set experiment.checkpoint_every=5 \
    --output-dir "$tmp/k" --quiet
  [ -e "$tmp/k/checkpoint" ] && ok || bad "$what: the run was not killed with a checkpoint: $(ls "$tmp/k")"
  killed_round=$(od -An -t u8 -j 24 -N 8 "$tmp/k/checkpoint/run.ckpt" 2>/dev/null | tr -d ' ')
  "$mpiexec" --oversubscribe -n 2 "$dtrun" resume "$tmp/k" --quiet > "$tmp/k2.log" 2>&1 || bad "$what: resume failed: $(tail -3 "$tmp/k2.log")"
  "$dtrun" "$cfg" --set experiment.checkpoint_every=5 --output-dir "$tmp/ref" --quiet > "$tmp/ref.log" 2>&1 || bad "$what: reference failed"
  same_results "$tmp/ref" "$tmp/k" "$what killed at P=3, resumed at P=2"
}

# final_top1 RESULTS_CSV: the last evaluation's top-1 accuracy, averaged over the nodes (%.3f).
final_top1() {
  awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "top1_accuracy") a = i; next}
           {last = $1; v[$1] += $a; n[$1]++} END {printf "%.3f", v[last] / n[last]}' "$1"
}

# cifar_config TEMPLATE OUT DIR [TRAIN_PER_BATCH TEST]: writes small CIFAR-10-format files under
# DIR (tests/e2e/make_cifar.py) and TEMPLATE with its data_dir pointing at them into OUT.
cifar_config() {
  mkdir -p "$3/cifar-10-batches-bin"
  python3 tests/e2e/make_cifar.py "$3/cifar-10-batches-bin" "${@:4}"
  sed "s|data_dir: cifar_data.*|data_dir: $3|" "$1" > "$2"
}
