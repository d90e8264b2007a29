#!/usr/bin/env bash
# The command line (experiments/cli.c): help for every command from the option table, getopt_long
# forms (--opt=value, --opt value, -s, combined short flags, -- ending the options), unknown
# options with the nearest one, --log-level and DT_LOG_LEVEL (a wrong value exit 2 before
# anything runs; error silences the run's lines, debug adds its own), and bash completion run in a
# bash started here (config keys and problem names from the config on the line, values after '=',
# also as readline splits the line at '='). The runs need data/mnist (skipped without it: exit 77).
# usage: cli.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_begin "$@"
cfg=$tmp/one.yaml # one problem, a few rounds: the runs here test the command line, not learning
cat > "$cfg" <<YAML
experiment: {name: cli, data_dir: $PWD/data/mnist, seed: 7, graph: {num_nodes: 3, type: cycle}}
problem_configs:
  dinno:
    evaluate_frequency: 2
    optimizer_config: {alg_name: dsgd, outer_iterations: 4, alpha0: 0.02}
YAML
short=()

# help: dtrun --help, help COMMAND and COMMAND --help, every option of the table in its command's help
"$dtrun" --help > "$tmp/help" 2>&1 && grep -q "^  compare  *tables and figures" "$tmp/help" && grep -q "^algorithms" "$tmp/help" && ok \
  || bad "dtrun --help: $(head -3 "$tmp/help")"
for c in run check resume compare runs help completion; do
  "$dtrun" help $c > "$tmp/h1" 2>&1 && "$dtrun" $c --help > "$tmp/h2" 2>&1 && cmp -s "$tmp/h1" "$tmp/h2" \
    && grep -q "^usage: dtrun $c " "$tmp/h1" && grep -q "^example:" "$tmp/h1" && ok || bad "help $c: $(head -3 "$tmp/h1")"
  [ "$(awk 'length > 100' "$tmp/h1" | wc -l)" = 0 ] && ok || bad "help $c has lines over 100 columns"
done
for o in --set --sweep --output-dir --force --quiet --progress --point --dump-trace --log-level; do
  grep -q -- "$o" <("$dtrun" help run) && ok || bad "help run lacks $o"
done
for o in --metric --target --x --against --where --csv --plot --size --facet --label --title --xlim --ylim --log --band; do
  grep -q -- " $o" <("$dtrun" help compare) && ok || bad "help compare lacks $o"
done
"$dtrun" help nope > /dev/null 2> "$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "no such command" "$tmp/err" && ok || bad "help of a command that does not exist: exit $rc"

# option forms: --opt=value, --opt value and -s are one; -- ends the options; combined short flags
"$dtrun" check $cfg --set=experiment.seed=3 > "$tmp/c1" 2>&1 && "$dtrun" check $cfg --set experiment.seed=3 > "$tmp/c2" 2>&1 \
  && "$dtrun" check -s experiment.seed=3 $cfg > "$tmp/c3" 2>&1 && cmp -s "$tmp/c1" "$tmp/c2" && cmp -s "$tmp/c1" "$tmp/c3" \
  && grep -q "seed: 3" "$tmp/c1" && ok || bad "--set=, --set and -s differ: $(head -3 "$tmp/c1")"
cp "$cfg" "$tmp/-odd.yaml"
"$dtrun" check -- "$tmp/-odd.yaml" > /dev/null 2>&1 && ok || bad "-- does not end the options"
"$dtrun" run $cfg "${short[@]}" -qfo "$tmp/q" > "$tmp/q.out" 2>&1 && "$dtrun" run $cfg "${short[@]}" -qfo "$tmp/q" > "$tmp/q.out" 2>&1 \
  && [ -s "$tmp/q/dinno_results.csv" ] && ! grep -q "^ *round" "$tmp/q.out" && ok || bad "-qfo DIR: $(tail -3 "$tmp/q.out")"

# unknown options: exit 2 with the nearest, or the command that has it
"$dtrun" check $cfg --sett x=1 > /dev/null 2> "$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "did you mean --set?" "$tmp/err" && ok || bad "--sett: exit $rc, $(cat "$tmp/err")"
"$dtrun" run $cfg --target 0.5 > /dev/null 2> "$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q -- "--target is an option of compare, not of run" "$tmp/err" && ok || bad "run --target: exit $rc, $(cat "$tmp/err")"
"$dtrun" run $cfg --force=1 > /dev/null 2> "$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q -- "--force takes no value (found '--force=1')" "$tmp/err" && ok || bad "--force=1: exit $rc, $(cat "$tmp/err")"
"$dtrun" check $cfg --set > /dev/null 2> "$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q -- "--set needs KEY=VALUE" "$tmp/err" && ok || bad "--set without a value: exit $rc, $(cat "$tmp/err")"
"$dtrun" check $cfg experiment.seed=3 > /dev/null 2> "$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "goes after --set" "$tmp/err" && ok || bad "a key=value without --set: exit $rc, $(cat "$tmp/err")"

# check shows what the split gave each node: per class counts that add up to its samples
"$dtrun" check "$cfg" --set experiment.data_split_type=dirichlet --set experiment.split.alpha=0.3 > "$tmp/split" 2>&1
python3 - "$tmp/split" <<'PY' && ok || bad "check's split table: $(grep -A5 '^# split' "$tmp/split")"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
i = next(k for k, l in enumerate(lines) if l.startswith("# split: dirichlet, alpha 0.3, 60000 samples over 3 nodes"))
assert lines[i + 1].split()[1:4] == ["node", "samples", "c0"], lines[i + 1]
total = 0
for row in lines[i + 2:i + 5]:
    f = [int(x) for x in row.split()[1:]]
    assert len(f) == 12 and sum(f[2:]) == f[1], row
    total += f[1]
assert total == 60000, total
PY

# an algorithm that does not use the graph says so, in check and in the run
sed 's/alg_name: dsgd, outer_iterations: 4, alpha0: 0.02/alg_name: easgd, outer_iterations: 4/' "$cfg" > "$tmp/easgd.yaml"
"$dtrun" check "$tmp/easgd.yaml" 2>&1 | grep -q "(easgd does not use the graph: each node talks to the elastic centre with node 0)" && ok \
  || bad "check does not say easgd ignores the graph"
"$dtrun" run "$tmp/easgd.yaml" -o "$tmp/easgd" 2>&1 | grep -q "(easgd does not use the graph" && ok || bad "the run does not say easgd ignores the graph"

# log levels: a wrong value stops before anything runs; error prints nothing but the end; debug adds
DT_LOG_LEVEL=loud "$dtrun" run $cfg "${short[@]}" -o "$tmp/l0" > "$tmp/l0.out" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "DT_LOG_LEVEL=loud: expected error, warn, info or debug" "$tmp/l0.out" && [ ! -e "$tmp/l0" ] && ok \
  || bad "DT_LOG_LEVEL=loud: exit $rc, $(head -2 "$tmp/l0.out")"
"$dtrun" run $cfg "${short[@]}" -o "$tmp/l1" --log-level=loud > "$tmp/l1.out" 2>&1; rc=$?
[ $rc = 2 ] && [ ! -e "$tmp/l1" ] && ok || bad "--log-level loud: exit $rc"
# the names other tools use (Python's WARNING, syslog's err) are the same levels
"$dtrun" check "$cfg" --log-level warning > /dev/null 2>&1 && DT_LOG_LEVEL=WARNING "$dtrun" check "$cfg" > /dev/null 2>&1 &&
  "$dtrun" check "$cfg" --log-level=err > /dev/null 2>&1 && ok || bad "--log-level warning, err or DT_LOG_LEVEL=WARNING refused"
# a mistyped command is named as one, not opened as a config file
"$dtrun" comapre "$tmp" > "$tmp/typo.out" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "'comapre' is neither a command nor an experiment file: did you mean dtrun compare?" "$tmp/typo.out" && ok \
  || bad "dtrun comapre: exit $rc, $(head -2 "$tmp/typo.out")"
DT_LOG_LEVEL=error "$dtrun" run $cfg "${short[@]}" -o "$tmp/l2" > "$tmp/l2.out" 2>&1 && [ -s "$tmp/l2/dinno_results.csv" ] \
  && ! grep -q "^== dinno" "$tmp/l2.out" && ok || bad "DT_LOG_LEVEL=error still prints the run: $(head -3 "$tmp/l2.out")"
DT_LOG_LEVEL=error "$dtrun" run $cfg "${short[@]}" -o "$tmp/l3" --log-level debug > "$tmp/l3.out" 2>&1 \
  && grep -q "^backend cpu, .* threads\? per rank" "$tmp/l3.out" && grep -q "^== dinno" "$tmp/l3.out" && ok \
  || bad "--log-level debug over DT_LOG_LEVEL=error: $(head -3 "$tmp/l3.out")"
"$dtrun" run $cfg "${short[@]}" -o "$tmp/l4" > "$tmp/l4.out" 2>&1 && ! grep -q "^backend cpu" "$tmp/l4.out" && ok \
  || bad "the default level prints debug lines"

# bash completion, in a bash started here
"$dtrun" completion bash > "$tmp/dtrun.bash" || bad "completion bash failed"
complete_words() { # the words completed for the command line "$@" (the last word being completed)
  bash --norc --noprofile -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _dtrun; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$tmp/dtrun.bash" "$@" 2>&1
}
[ "$(complete_words dtrun comp)" = "$(printf 'compare\ncompletion')" ] && ok || bad "completing 'comp': $(complete_words dtrun comp)"
[ "$(complete_words dtrun compare --fa)" = "--facet" ] && ok || bad "completing 'compare --fa': $(complete_words dtrun compare --fa)"
[ "$(complete_words dtrun compare outputs --size s)" = "slide" ] && ok || bad "completing --size: $(complete_words dtrun compare outputs --size s)"
[ "$(complete_words "$dtrun" run x.yaml --set experiment.graph.num_n)" = "experiment.graph.num_nodes=" ] && ok \
  || bad "completing a config key: $(complete_words "$dtrun" run x.yaml --set experiment.graph.num_n)"
complete_words dtrun run --p | grep -qx -- "--progress" && ! complete_words dtrun run --p | grep -qx -- "--plot" && ok \
  || bad "run's options: $(complete_words dtrun run --p)"
# config keys and problem names from the config on the line (dtrun __complete), concrete: the
# file's problems, each algorithm's own keys under the problems that run it, values after '='
d=$PWD/configs/dist_mnist.yaml # problems dinno (cadmm), dsgd, dsgt, gossip
keys=$(complete_words "$dtrun" run "$d" --set problem_configs.)
echo "$keys" | grep -qx "problem_configs.dinno.optimizer_config.rho_init=" && echo "$keys" | grep -qx "problem_configs.dsgd.optimizer_config.alpha0=" \
  && echo "$keys" | grep -qx "problem_configs.gossip.evaluate_frequency=" && ! echo "$keys" | grep -q "[<(]" && ok \
  || bad "completing problem_configs. from the file: $(echo "$keys" | head -5)"
keys=$(complete_words "$dtrun" check "$d" -s problem_configs.dinno.optimizer_config.)
echo "$keys" | grep -qx "problem_configs.dinno.optimizer_config.primal_iterations=" \
  && ! echo "$keys" | grep -q "alpha0=" && ok || bad "dinno's keys are cadmm's only: $(echo "$keys" | head -5)"
[ "$(complete_words "$dtrun" run "$d" --set experiment.graph.type=to)" = "experiment.graph.type=torus" ] && ok \
  || bad "an enum's values after '=': $(complete_words "$dtrun" run "$d" --set experiment.graph.type=to)"
[ "$(complete_words "$dtrun" run "$d" --sweep problem_configs.dsgd.optimizer_config.alg_name=dsgd,ex)" \
  = "problem_configs.dsgd.optimizer_config.alg_name=dsgd,extra" ] && ok || bad "a sweep's next value: algorithm names"
[ "$(complete_words "$dtrun" run "$d" --problem ds | tr '\n' ' ')" = "dsgd dsgt " ] && ok || bad "--problem: $(complete_words "$dtrun" run "$d" --problem ds)"
[ "$(complete_words "$dtrun" run "$d" -p dinno,g)" = "dinno,gossip" ] && ok || bad "--problem's next name"
# as readline splits the line: at '=' (COMP_WORDBREAKS), with COMP_LINE and COMP_POINT; the reply
# is what follows the '=' and the option is found before the split word
complete_line() { # LINE -> the words completed at its end, as bash does it
  bash --norc --noprofile -c 'source "$1"; COMP_LINE=$2; COMP_POINT=${#2}; read -ra COMP_WORDS <<< "${2//=/ = }"
    [[ $2 == *" " ]] && COMP_WORDS+=(""); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _dtrun; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$tmp/dtrun.bash" "$1" 2>&1
}
[ "$(complete_line "$dtrun run $d --set experiment.graph.type=to")" = "torus" ] && ok \
  || bad "readline's split at '=': $(complete_line "$dtrun run $d --set experiment.graph.type=to")"
complete_line "$dtrun run $d --set experiment.graph.type=" | grep -qx "cycle" && ok || bad "values right after '='"
# a config being edited (the loader refuses it): its problems still come from the YAML as written
printf 'experiment: {name: x, nonsense_key: 1}\nproblem_configs:\n  alpha: {optimizer_config: {alg_name: beer}}\n' > "$tmp/edit.yaml"
complete_words "$dtrun" run "$tmp/edit.yaml" --set problem_configs.alpha.optimizer_config.g | grep -qx "problem_configs.alpha.optimizer_config.gamma=" \
  && ok || bad "keys of a config that does not load: $(complete_words "$dtrun" run "$tmp/edit.yaml" --set problem_configs.alpha.optimizer_config.g)"
[ -z "$(complete_words "$dtrun" run --set problem_configs.)" ] && ok || bad "no config on the line: no problem keys"
"$dtrun" completion zsh > "$tmp/_dtrun" && head -1 "$tmp/_dtrun" | grep -q "^#compdef dtrun" && ok || bad "completion zsh"
if command -v zsh > /dev/null; then zsh -n "$tmp/_dtrun" && ok || bad "the zsh completion does not parse"; fi
"$dtrun" completion fish > /dev/null 2>&1; [ $? = 2 ] && ok || bad "completion fish should exit 2"

# The SLURM scripts outside a checkout: the dtrun on PATH (srun stubbed to run its command), and a
# clear exit 2 without any dtrun
mkdir -p "$tmp/slurm/bin" "$tmp/slurm/nodtrun"
printf '#!/bin/sh\n[ "$1" = --mpi=pmix ] && shift\nexec "$@"\n' > "$tmp/slurm/bin/srun"
printf '#!/bin/sh\necho "installed dtrun: $*"\n' > "$tmp/slurm/bin/dtrun"
chmod +x "$tmp/slurm/bin/srun" "$tmp/slurm/bin/dtrun"
root=$PWD
for s in dtrun.sbatch dtrun_array.sbatch; do
  (cd "$tmp/slurm" && SLURM_ARRAY_TASK_ID=1 PATH="$tmp/slurm/bin:$PATH" bash "$root/scripts/slurm/$s" c.yaml out) > "$tmp/slurm/out" 2>&1
  grep -q "installed dtrun: c.yaml --output-dir out" "$tmp/slurm/out" && ok || bad "$s outside the checkout should run the dtrun on PATH: $(cat "$tmp/slurm/out")"
  (cd "$tmp/slurm/nodtrun" && SLURM_ARRAY_TASK_ID=1 PATH="$tmp/slurm/nodtrun:/usr/bin:/bin" bash "$root/scripts/slurm/$s" c.yaml out) > "$tmp/slurm/out" 2>&1
  rc=$?
  [ $rc = 2 ] && grep -q "$s: no dtrun: not on PATH" "$tmp/slurm/out" && ok || bad "$s without any dtrun: exit $rc, $(cat "$tmp/slurm/out")"
done

# every folder an option names is checked before anything is written: exit 2, the part in the
# way named, no run folder left (before: exit 1 from the trace's first file, after the run folder
# and its results.sqlite were made)
touch "$tmp/afile"
mkdir -p "$tmp/paths"
for case in "--dump-trace $tmp/afile|--dump-trace: '$tmp/afile' cannot be made: $tmp/afile is a file, not a folder" \
            "--dump-trace $tmp/afile/x|--dump-trace: '$tmp/afile/x' cannot be made: $tmp/afile is a file" \
            "--dump-trace $tmp/nowhere/x|--dump-trace: '$tmp/nowhere/x' cannot be made: $tmp has no folder nowhere/x" \
            "--dump-trace $tmp/tr --set experiment.graph.schedule=random_matching|--dump-trace traces static graphs"; do
  opts=${case%%|*} want=${case#*|}
  "$dtrun" "$cfg" --output-dir "$tmp/paths/run" --quiet $opts > "$tmp/paths.log" 2>&1
  rc=$?
  [ $rc = 2 ] && grep -qF -- "$want" "$tmp/paths.log" && [ ! -e "$tmp/paths/run" ] && ok \
    || bad "$opts: exit $rc, $(ls "$tmp/paths"), $(cat "$tmp/paths.log")"
done
"$dtrun" "$cfg" --output-dir "$tmp/afile/run" --quiet > "$tmp/paths.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -qF -- "--output-dir: '$tmp/afile/run' cannot be made: $tmp/afile is a file, not a folder" "$tmp/paths.log" && ok \
  || bad "--output-dir under a file: exit $rc, $(cat "$tmp/paths.log")"

# a running dtrun is named dtrun (ps -C dtrun, pgrep, cluster epilogues), also where it restarted
# itself for OpenBLAS's kernels on an AVX-512 CPU (it execs its own path, not /proc/self/exe)
"$dtrun" "$cfg" --output-dir "$tmp/named" --quiet --set problem_configs.dinno.optimizer_config.outer_iterations=100000 \
  > /dev/null 2>&1 &
pid=$!
for _ in $(seq 200); do [ -f "$tmp/named/split.csv" ] && break; sleep 0.05; done
name=$(cat /proc/$pid/comm 2>/dev/null)
ps -C dtrun -o pid= | grep -qw "$pid" && [ "$name" = dtrun ] && ok || bad "a running dtrun is named '$name', ps -C dtrun: $(ps -C dtrun -o pid=,comm=)"
kill -INT $pid 2>/dev/null
wait $pid 2>/dev/null

# a config path that is a kernel file (/sys reports a page's size, reads fewer bytes): bad input,
# exit 2 (before: "read error", exit 1)
for k in /sys/kernel/uevent_seqnum /sys/kernel/mm/transparent_hugepage/enabled /sys/power/state; do
  [ -r "$k" ] || continue
  "$dtrun" check "$k" > "$tmp/sys.log" 2>&1
  rc=$?
  [ $rc = 2 ] && grep -q "^dtrun: $k" "$tmp/sys.log" && ok || bad "check $k: exit $rc, $(cat "$tmp/sys.log")"
  break
done

# --problem: only the named problems, in the file's order, each to the files it has in a run of
# them all (every problem starts from the same weights and streams); the run folder's config holds
# only them; a name that is not a problem, or --problem with a sweep: exit 2, nothing run (issue 54,
# item 17)
cat > "$tmp/three.yaml" <<YAML
experiment: {name: cli3, data_dir: $PWD/data/mnist, seed: 7, graph: {num_nodes: 3, type: cycle}}
problem_configs:
  dsgd: {evaluate_frequency: 2, optimizer_config: {alg_name: dsgd, outer_iterations: 4, alpha0: 0.02}}
  dsgt: {evaluate_frequency: 2, optimizer_config: {alg_name: dsgt, outer_iterations: 4, alpha: 0.02}}
  gossip: {evaluate_frequency: 2, optimizer_config: {alg_name: gossip, outer_iterations: 4, lr: 0.02}}
YAML
"$dtrun" "$tmp/three.yaml" --output-dir "$tmp/three_all" --quiet > /dev/null 2>&1 || bad "--problem: the run of all three failed"
"$dtrun" "$tmp/three.yaml" --problem gossip,dsgd --output-dir "$tmp/three_two" --quiet > "$tmp/three_two.log" 2>&1 \
  && [ ! -e "$tmp/three_two/dsgt_results.csv" ] && grep -q "^  \"dsgd\":" "$tmp/three_two/config.yaml" && ! grep -q "^  \"dsgt\":" "$tmp/three_two/config.yaml" \
  && ok || bad "--problem gossip,dsgd: $(tail -2 "$tmp/three_two.log"; ls "$tmp/three_two")"
for p in dsgd gossip; do
  cmp -s <(strip_times "$tmp/three_all/${p}_results.csv") <(strip_times "$tmp/three_two/${p}_results.csv") && ok \
    || bad "--problem: ${p}_results.csv differs from the run of every problem"
done
"$dtrun" check "$tmp/three.yaml" -p dsgt | grep -q "^# problem dsgt:" && ! "$dtrun" check "$tmp/three.yaml" -p dsgt | grep -q "^# problem dsgd:" \
  && ok || bad "check -p dsgt"
"$dtrun" "$tmp/three.yaml" --problem dsgd,gosip --output-dir "$tmp/three_bad" > "$tmp/three_bad.log" 2>&1
rc=$?
[ $rc = 2 ] && [ ! -e "$tmp/three_bad" ] && grep -q "problem gosip: .* has no such problem; its problems are dsgd, dsgt, gossip; did you mean 'gossip'?" "$tmp/three_bad.log" \
  && ok || bad "--problem with a misspelled name: exit $rc, $(head -2 "$tmp/three_bad.log")"
"$dtrun" check "$tmp/three.yaml" --problem dsgd --sweep experiment.seed=1,2 > "$tmp/three_sweep.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "is a sweep; --problem selects problems of one experiment" "$tmp/three_sweep.log" && ok || bad "--problem with a sweep: exit $rc"

# check --time: a few rounds of every problem measured, the whole run estimated from them (its
# rounds and evaluations counted from the config), nothing written; and the overall ETA that a run
# prints from its second problem on, and a sweep from its second point on
rm -rf outputs_time && "$dtrun" check tests/e2e/small.yaml --problem dinno,choco --time --set experiment.output_metadir=outputs_time \
  > "$tmp/time.out" 2>&1
[ $? -eq 0 ] && grep -Eq "^#   dinno +60 rounds x .* \+ +4 evaluations x .* = [0-9.]+ s$" "$tmp/time.out" \
  && grep -Eq "^#   choco +60 rounds x .* \+ +3 evaluations x " "$tmp/time.out" && grep -q "^#   about .* for the run (setup" "$tmp/time.out" \
  && ! grep -q "^problem " "$tmp/time.out" && [ ! -e outputs_time ] && ok || bad "check --time: $(tail -4 "$tmp/time.out")"
rm -rf outputs_time
"$dtrun" tests/e2e/small.yaml --problem dsgd,dsgt --set experiment.writeout=false > "$tmp/eta.out" 2>&1
grep -q "^== dsgd: dsgd, 60 rounds on 5 nodes (1 rank)$" "$tmp/eta.out" && grep -Eq "^== dsgt: .*; about [0-9.]+ s left of the run$" "$tmp/eta.out" \
  && ok || bad "no ETA of the run: $(grep '^==' "$tmp/eta.out")"
"$dtrun" tests/e2e/small.yaml --set 'problem_configs.*.optimizer_config.outer_iterations=4' --sweep experiment.seed=1,2,3 \
  --output-dir "$tmp/eta_sweep" > "$tmp/eta.out" 2>&1
grep -q "^== sweep point 1 of 3 (000): experiment.seed=1$" "$tmp/eta.out" \
  && grep -Eq "^== sweep point 2 of 3 \(001\): experiment.seed=2; about .* left of the sweep$" "$tmp/eta.out" && ok \
  || bad "no ETA of the sweep: $(grep '^== sweep' "$tmp/eta.out")"

echo "cli: $pass ok, $fail failed"
[ $fail = 0 ]
