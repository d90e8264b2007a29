#!/usr/bin/env bash
# Compares two result trees of tests/identity/run.sh: every file byte for byte, except the
# timing columns of *_results.csv (time_compute, time_comm, time_eval) and of results.sqlite (with
# its dates, folders, hosts and build), and the timing, date and command lines, the placement
# (hosts, threads_rank0) and the build (git describe) of summary.yaml. Run both trees from the
# same source path (config.yaml holds absolute data paths). Exit 0 when identical.
set -uo pipefail
a=$1 b=$2
strip() { # file
  case "$1" in
    *_results.csv)
      awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) if ($i !~ /^time_/) keep[i] = 1}
               {s = ""; for (i = 1; i <= NF; i++) if (keep[i]) s = s (s == "" ? "" : ",") $i; print s}' "$1" ;;
    *.sqlite) # the tables in key order, without timings, dates, folders, hosts and the build
      sqlite3 -batch "$1" \
        "SELECT run, point, swept, seed, experiment, config, config_hash, ranks, nodes, status FROM runs ORDER BY run;
         SELECT * FROM sweep_values ORDER BY run, key;
         SELECT run, problem, problem_name, alg_name, status, rounds, rounds_completed, bytes_sent FROM problems
           ORDER BY run, problem;
         SELECT run, problem, round, node, forward_pass_count, validation_loss, top1_accuracy, consensus_error,
                consensus_error_raw, current_epoch, train_loss, bytes_sent FROM evaluations
           ORDER BY run, problem, round, node;" ;;
    */summary.yaml) # the command with its continuation lines (a longer path wraps it differently)
      awk '/^command:/ {cmd = 1; next} cmd && /^  / && !/^  [a-z_]+:/ {next} {cmd = 0; print}' "$1" |
        grep -Ev '^ *(wall_seconds|time_compute|time_comm|time_eval|started|updated|checkpoints|checkpoint_seconds|hosts|threads_rank0|build):' ;;
    *) cat "$1" ;;
  esac
}
status=0 files=0
while IFS= read -r f; do
  files=$((files + 1))
  if [ ! -f "$b/$f" ]; then echo "missing in $b: $f"; status=1; continue; fi
  if ! cmp -s <(strip "$a/$f") <(strip "$b/$f"); then echo "DIFFERS: $f"; status=1; fi
done < <(cd "$a" && find . -type f | sort)
extra=$(comm -13 <(cd "$a" && find . -type f | sort) <(cd "$b" && find . -type f | sort))
[ -z "$extra" ] || { echo "only in $b:"; echo "$extra"; status=1; }
echo "$files files compared: $([ $status = 0 ] && echo identical || echo DIFFERENT)"
exit $status
