#!/usr/bin/env bash
# The two shipped studies, cut short: configs/dinno_figure.yaml (4 graphs x 3 seeds of DiNNO,
# DSGT, DSGD on 10 nodes) and configs/scaling.yaml (geometric graphs drawn to a Fiedler value,
# N from 10 to 100) load, build every point's graph, run as sweeps, and give the figures their
# README commands draw; the 4 x 3 sweep under mpirun -np 5 gives the same files and rows. The
# full runs are the README's figures (tests/bench/studies.sh).
# Skipped (77) without data/mnist.
# usage: studies.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_begin "$@"

# evaluations on 1,000 test samples: the checks are of graphs, files and tables, not accuracy
subset=(--set 'problem_configs.*.evaluation.test_samples=1000')
for c in dinno_figure scaling; do
  "$dtrun" check configs/$c.yaml > "$tmp/$c.check" 2>&1 && ok || bad "check $c: $(tail -3 "$tmp/$c.check")"
done
grep -q "sweep: 12 points over 2 axes" "$tmp/dinno_figure.check" && grep -q "graph: complete cycle random-0.7 random-5.8" \
  "$tmp/dinno_figure.check" && ok || bad "dinno_figure should be 4 graphs x 3 seeds: $(tail -3 "$tmp/dinno_figure.check")"

# The DiNNO figure at 4 rounds: every point's random graph meets its Fiedler target (0.05)
"$dtrun" configs/dinno_figure.yaml --output-dir "$tmp/fig" --quiet --set 'problem_configs.*.optimizer_config.outer_iterations=4' \
  --set 'problem_configs.*.evaluate_frequency=2' "${subset[@]}" > "$tmp/fig.log" 2>&1 || bad "dinno_figure failed: $(tail -3 "$tmp/fig.log")"
python3 - "$tmp/fig" <<'PY' && ok || bad "a dinno_figure point's graph is wrong"
import re, sys, yaml
index = yaml.safe_load(open(f"{sys.argv[1]}/sweep.yaml"))
seen = 0
for folder, label in ((r["folder"], r["values"]["graph"]) for r in index["runs"]):
    g = open(f"{sys.argv[1]}/{folder}/graph.yaml").read()
    value = float(re.search(r"^fiedler_value: (\S+)", g, re.M).group(1))
    kind = re.search(r"^type: (\S+)", g, re.M).group(1)
    edges = int(re.search(r"^num_edges: (\d+)", g, re.M).group(1))
    if label.startswith("random-"):
        assert kind == "random" and abs(value - float(label[7:])) <= 0.05 + 1e-12, (folder, value)
    else:
        assert kind == label and edges == (45 if label == "complete" else 10), (folder, kind, edges)
    seen += 1
assert seen == 12, seen
PY
# the 4-graph x 3-seed sweep under mpirun gives the files and rows of the run in one process
"$mpiexec" --oversubscribe -n 5 "$dtrun" configs/dinno_figure.yaml --output-dir "$tmp/fig5" --quiet \
  --set 'problem_configs.*.optimizer_config.outer_iterations=4' --set 'problem_configs.*.evaluate_frequency=2' "${subset[@]}" > "$tmp/fig5.log" 2>&1 \
  || bad "dinno_figure at P=5 failed: $(tail -3 "$tmp/fig5.log")"
n=0
for p in $(seq -f %03g 0 11); do same_results "$tmp/fig/$p" "$tmp/fig5/$p" "dinno_figure point $p, P=1 vs P=5" && n=$((n + 1)); done
[ $n = 12 ] && cmp -s <(python3 tests/e2e/db_rows.py dump "$tmp/fig") <(python3 tests/e2e/db_rows.py dump "$tmp/fig5") && ok \
  || bad "dinno_figure: results.sqlite differs between P=1 and P=5"
"$dtrun" compare "$tmp/fig" --metric top1_accuracy,consensus_error --target 0.1 > "$tmp/fig.cmp" 2>&1 \
  && [ "$(grep -c '^graph=' "$tmp/fig.cmp")" = 12 ] && grep -Eq '^graph=random-5.8 +dsgd +dsgd +completed +3 +4 ' "$tmp/fig.cmp" \
  && ok || bad "compare of the DiNNO figure: $(head -5 "$tmp/fig.cmp")"

# The scaling study at 2 rounds: N from 10 to 100 at Fiedler 1, and Fiedler 0.25 to 2 at N = 20
"$dtrun" configs/scaling.yaml --output-dir "$tmp/sc" --quiet --set 'problem_configs.*.optimizer_config.outer_iterations=2' \
  --set 'problem_configs.*.evaluate_frequency=1' "${subset[@]}" > "$tmp/sc.log" 2>&1 || bad "scaling failed: $(tail -3 "$tmp/sc.log")"
"$dtrun" compare "$tmp/sc" --target 0.05,0.1 --against experiment.graph.num_nodes --where experiment.graph.fiedler=1 > "$tmp/n.cmp" 2>&1
[ "$(grep -Eo '^graph=N[0-9]+ +[0-9]+ ' "$tmp/n.cmp" | awk '{printf "%s ", $2}')" = "10 20 40 60 80 100 " ] && ok \
  || bad "compare --against num_nodes should list N = 10 ... 100 in order: $(cat "$tmp/n.cmp")"
"$dtrun" compare "$tmp/sc" --target 0.05 --against experiment.graph.fiedler --where experiment.graph.num_nodes=20 > "$tmp/f.cmp" 2>&1
[ "$(grep -Eo '^graph=N20[^ ]* +[0-9.]+ ' "$tmp/f.cmp" | awk '{printf "%s ", $2}')" = "0.25 0.5 1.0 1.5 2.0 " ] && ok \
  || bad "compare --against fiedler should list 0.25 ... 2 at N = 20: $(cat "$tmp/f.cmp")"

echo "$pass checks passed, $fail failed"
[ "$fail" = 0 ]
