#!/usr/bin/env bash
# dtrun under SLURM on the namespace cluster (lib.sh): slurmctld on h1, a slurmd on each of
# three hosts. `srun -n 5` (PMIx), one task per host on two threads, and the shipped batch script scripts/slurm/dtrun.sbatch, run
# as written, give the same files as one process; `scancel --signal=TERM` makes dtrun save and
# exit 130, and submitting the same batch command again finishes the run with the same files; a
# sweep as a job array (one point per job, at once) gives the sweep's files and rows.
# Installs slurm-wlm and munge when missing. Skipped (77) without data/mnist or namespaces.
# usage: test_slurm.sh DTRUN SOURCE_ROOT
set -u
. "$(dirname "$0")/lib.sh"
cluster_enter "$@"
dtrun=$(realpath "$1")
cd "$2" || exit 1
[ -f data/mnist/train-images-idx3-ubyte ] || cluster_skip "no data/mnist: run scripts/setup.sh"
cluster_up 3 2 2 2
tmp=$DTC_DIR/work
mkdir -p "$tmp"
# wait_job ID SECONDS: until the job has left the queue
wait_job() {
  local t
  for ((t = 0; t < $2 * 10; t++)); do
    [ -z "$(slurm_on squeue -h -j "$1" 2>/dev/null)" ] && return 0
    sleep 0.1
  done
  return 1
}
cfg=tests/cluster/cluster.yaml
slurm_up || { echo "FAIL: could not start SLURM"; exit 1; }
"$dtrun" $cfg --output-dir "$tmp/p1" --quiet > "$tmp/p1.log" 2>&1 || bad "P=1 run failed: $(tail -40 "$tmp/p1.log")"

# srun -n 5 over three hosts
slurm_on timeout 300 srun --mpi=pmix -n 5 "$dtrun" $cfg --output-dir "$tmp/srun" --quiet > "$tmp/srun.log" 2>&1 \
  || bad "srun -n 5 failed: $(tail -40 "$tmp/srun.log")"
same_results "$tmp/p1" "$tmp/srun" "srun -n 5 vs P=1"
grep -q '^hosts: 3$' "$tmp/srun/summary.yaml" && ok || bad "srun run: summary.yaml should say hosts: 3"

# hybrid: one task per host, its nodes on the task's cores
slurm_on timeout 300 srun --mpi=pmix -N 3 --ntasks-per-node=1 --cpus-per-task=2 "$dtrun" $cfg --output-dir "$tmp/hybrid" --quiet \
  > "$tmp/hybrid.log" 2>&1 || bad "srun one task per host failed: $(tail -40 "$tmp/hybrid.log")"
same_results "$tmp/p1" "$tmp/hybrid" "srun -N 3 --ntasks-per-node=1 x 2 threads vs P=1"
grep -q '^threads_rank0: 2$' "$tmp/hybrid/summary.yaml" && ok || bad "one task per 2-CPU host should run 2 threads"

# the shipped batch script, as written
export DTRUN=$dtrun
job=$(slurm_on sbatch --parsable --output="$tmp/batch-%j.out" scripts/slurm/dtrun.sbatch $cfg "$tmp/batch" --quiet)
wait_job "$job" 300 || bad "batch job $job did not end in 300 s"
grep -q "dtrun exited 0" "$tmp/batch-$job.out" && ok || bad "batch job: $(tail -40 "$tmp/batch-$job.out")"
same_results "$tmp/p1" "$tmp/batch" "sbatch dtrun.sbatch vs P=1"

# Preemption: SIGTERM from scancel while the second problem runs; the job saves and exits 130,
# and the same sbatch command again finishes the run with P = 1's files.
long="--set problem_configs.dsgd.optimizer_config.outer_iterations=400"
"$dtrun" $cfg $long --output-dir "$tmp/long1" --quiet > "$tmp/long1.log" 2>&1 || bad "P=1 long run failed"
job=$(slurm_on sbatch --parsable --output="$tmp/pre-%j.out" scripts/slurm/dtrun.sbatch $cfg "$tmp/pre" $long --quiet)
for ((t = 0; t < 1200; t++)); do [ -f "$tmp/pre/dinno_results.csv" ] && break; sleep 0.1; done
sleep 1
slurm_on scancel --signal=TERM "$job"
wait_job "$job" 120 || bad "preempted job $job still queued 120 s after SIGTERM"
grep -q "dtrun exited 130" "$tmp/pre-$job.out" && ok || bad "preempted job should exit 130: $(tail -40 "$tmp/pre-$job.out")"
status=$("$dtrun" check "$tmp/pre" 2>&1 | head -1)
case "$status" in *interrupted*) ok ;; *) bad "after scancel --signal=TERM: $status" ;; esac
job2=$(slurm_on sbatch --parsable --output="$tmp/pre-%j.out" scripts/slurm/dtrun.sbatch $cfg "$tmp/pre" $long --quiet)
wait_job "$job2" 300 || bad "resumed batch job $job2 did not end in 300 s"
grep -q "resuming it" "$tmp/pre-$job2.out" && grep -q "dtrun exited 0" "$tmp/pre-$job2.out" && ok \
  || bad "the resubmitted job should resume and finish: $(tail -40 "$tmp/pre-$job2.out")"
same_results "$tmp/long1" "$tmp/pre" "preempted and resubmitted vs P=1"

# A sweep as a job array (scripts/slurm/dtrun_array.sbatch): one job per point into one folder,
# the jobs running at once, gives the files and rows of the sweep run in one go; the same folder
# through dtrun.sbatch is a sweep to resume (every point done: nothing to run)
sweep="--sweep experiment.seed=0,1,2"
"$dtrun" $cfg $sweep --output-dir "$tmp/sweep1" --quiet > "$tmp/sweep1.log" 2>&1 || bad "the sweep in one go failed"
job=$(slurm_on sbatch --parsable --array=0-2 --ntasks=2 --output="$tmp/arr-%A_%a.out" scripts/slurm/dtrun_array.sbatch $cfg "$tmp/arr" \
      $sweep --quiet)
wait_job "$job" 300 || bad "array job $job did not end in 300 s"
for k in 0 1 2; do
  grep -q "dtrun exited 0" "$tmp/arr-${job}_$k.out" && ok || bad "array task $k: $(tail -40 "$tmp/arr-${job}_$k.out")"
  same_results "$tmp/sweep1/00$k" "$tmp/arr/00$k" "array task $k vs the sweep in one go"
done
cmp -s <(python3 tests/e2e/db_rows.py dump "$tmp/sweep1") <(python3 tests/e2e/db_rows.py dump "$tmp/arr") && ok \
  || bad "the array's results.sqlite differs from the sweep's"
job=$(slurm_on sbatch --parsable --output="$tmp/again-%j.out" scripts/slurm/dtrun.sbatch $cfg "$tmp/arr" --quiet)
wait_job "$job" 120 || bad "dtrun.sbatch of a sweep folder did not end"
grep -q "holds a sweep: resuming it" "$tmp/again-$job.out" && grep -q "dtrun exited 0" "$tmp/again-$job.out" && ok \
  || bad "dtrun.sbatch should resume a sweep folder: $(tail -40 "$tmp/again-$job.out")"

echo "cluster slurm: $pass passed, $fail failed"
[ $fail -eq 0 ]
