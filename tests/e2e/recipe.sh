#!/usr/bin/env bash
# The training recipe (tests/e2e/recipe.yaml): DSGD's local step as SGD with Nesterov momentum and
# weight decay gives DSGDm's files to the bit; a schedule in epochs gives the files of the same
# schedule written in rounds; a rate cut to 0 at half the run freezes the models from there; DSGT
# stepping along its tracker with Adam under a warmed-up cosine learns; the same files at P = 1
# and P = 3, for a re-run of the archived config (which spells every schedule out), and for a run
# killed after a checkpoint and resumed at another rank count (the local optimizers' momentum
# travels in the checkpoint). Skipped (77) without data/mnist.
# usage: recipe.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_begin "$@"
cfg=tests/e2e/recipe.yaml

ranks_and_rerun "$cfg" 3 recipe
grep -q "lr_schedule:" "$tmp/p1/config.yaml" && grep -q "milestones: \[0.25, 0.5\]" "$tmp/p1/config.yaml" && ok \
  || bad "config.yaml should spell the schedules out: $(grep -n -A8 'lr_schedule' "$tmp/p1/config.yaml" | head -20)"

same_problem() { # A B: the two problems' result files are the same, timing aside
  cmp -s <(strip_times "$tmp/p1/$1_results.csv") <(strip_times "$tmp/p1/$2_results.csv") && ok \
    || bad "$1 and $2 should give the same results: $(diff <(strip_times "$tmp/p1/$1_results.csv") <(strip_times "$tmp/p1/$2_results.csv") | head -4)"
}
same_problem dsgd_nesterov dsgdm_nesterov
same_problem gossip_epochs gossip_rounds

# solo_frozen: rate 0 from round 20 of 40: each node's loss at rounds 30 and 40 is its loss at 20,
# and the loss did change between 10 and 20
awk -F, 'NR == 1 {next} {v[$1 "," $2] = $4} END {
           for (i = 0; i < 5; i++) {if (v["30," i] != v["20," i] || v["40," i] != v["20," i]) bad = 1; if (v["10," i] == v["20," i]) bad = 1}
           exit bad}' "$tmp/p1/solo_frozen_results.csv" && ok \
  || bad "a rate of 0 should freeze the models: $(cut -d, -f1-4 "$tmp/p1/solo_frozen_results.csv" | head -12)"

acc=$(final_top1 "$tmp/p1/dsgt_adam_results.csv")
awk -v a="$acc" 'BEGIN {exit !(a > 0.6)}' && ok || bad "DSGT with Adam did not learn: final mean top-1 $acc"

# killed after a checkpoint at P = 3, resumed at P = 2: the reference's files
killed_resumed "$cfg" 2 recipe

echo "recipe: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
