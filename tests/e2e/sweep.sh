#!/usr/bin/env bash
# Sweeps on real MNIST (tests/e2e/sweep.yaml, 2 graphs x 2 seeds): the same files and database
# rows alone and under mpirun -np 3; each point's files equal running that point's config.yaml
# alone; --sweep adds or replaces an axis; a sweep stopped by SIGINT resumes to the same files;
# check lists the points; a study over a Fiedler target, compare --against and --where; the
# points run at once as a job array would (--point), into one folder and database. Skipped (77)
# without data/mnist.
# usage: sweep.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_begin "$@"
same_sweep() { # sweepA sweepB what
  local p
  for p in 000 001 002 003; do same_results "$1/$p" "$2/$p" "$3, point $p" || return; done
  cmp -s <(python3 tests/e2e/db_rows.py dump "$1") <(python3 tests/e2e/db_rows.py dump "$2") || { bad "$3: results.sqlite differs"; return; }
  ok
}
cfg=tests/e2e/sweep.yaml

# range(START, STOP[, STEP]) as Python's, on the command line and in the file: check lists the points
"$dtrun" check tests/e2e/small.yaml --sweep 'experiment.seed=range(0, 10, 3)' > "$tmp/range.check" 2>&1 &&
  grep -q "sweep: 4 points over 1 axis" "$tmp/range.check" && grep -q "experiment.seed: 0 3 6 9" "$tmp/range.check" && ok \
  || bad "--sweep experiment.seed=range(0, 10, 3): $(grep -i sweep "$tmp/range.check" | head -3)"
printf 'sweep:\n  experiment.seed: range(5, 2, -1)\n' | cat tests/e2e/small.yaml - > "$tmp/range.yaml"
"$dtrun" check "$tmp/range.yaml" > "$tmp/range2.check" 2>&1 && grep -q "experiment.seed: 5 4 3" "$tmp/range2.check" && ok \
  || bad "sweep: {experiment.seed: range(5, 2, -1)}: $(grep -i sweep "$tmp/range2.check" | head -3)"

# the pre-check builds a point's graph only when its graph keys (or, for a drawn graph, its seed)
# differ from the point before (2 graph types x 3 seeds: the cycle once, the random graph 3
# times); a key without effect in every point is warned about once (resample_every), one without
# effect in some points only is not (p: a random graph's); issue 58, items 8 and 10
printf 'sweep:\n  experiment.graph.type: [cycle, random]\n  experiment.seed: [0, 1, 2]\n' |
  cat tests/e2e/small.yaml - | sed 's/graph: {num_nodes: 5, type: cycle}/graph: {num_nodes: 5, type: cycle, p: 0.9, resample_every: 3}/' > "$tmp/built.yaml"
"$dtrun" check "$tmp/built.yaml" --log-level debug > "$tmp/built.check" 2>&1
[ "$(grep -c 'checked, its graph built' "$tmp/built.check")" = 4 ] && [ "$(grep -c '^sweep: point' "$tmp/built.check")" = 6 ] && ok \
  || bad "sweep pre-check graph builds: $(grep '^sweep: point' "$tmp/built.check")"
[ "$(grep -c 'warning: .*experiment.graph.resample_every: has no effect' "$tmp/built.check")" = 1 ] && ! grep -q 'experiment.graph.p: has no effect' "$tmp/built.check" && ok \
  || bad "a sweep's warnings: $(grep warning "$tmp/built.check")"

"$dtrun" $cfg --output-dir "$tmp/s1" --quiet > "$tmp/s1.log" 2>&1 || bad "sweep at P=1 failed: $(tail -3 "$tmp/s1.log")"
for p in 000 001 002 003; do [ -s "$tmp/s1/$p/dsgt_results.csv" ] && [ -s "$tmp/s1/$p/config.yaml" ] || bad "point $p has no results"; done
grep -q 'values: {graph: "complete", experiment.seed: "1"}' "$tmp/s1/sweep.yaml" && ok || bad "sweep.yaml lacks point 3's values"
grep -q "type: complete" "$tmp/s1/003/config.yaml" && grep -q "seed: 1" "$tmp/s1/003/config.yaml" && ok \
  || bad "point 003's config.yaml is not graph complete, seed 1"
[ "$(sqlite3 "$tmp/s1/results.sqlite" "SELECT count(*) FROM runs WHERE status = 'completed'")" = 4 ] && ok || bad "the database should hold 4 completed runs"
[ "$(sqlite3 "$tmp/s1/results.sqlite" "SELECT json_extract(swept, '$.graph') FROM runs WHERE point = 2")" = complete ] && ok \
  || bad "runs.swept of point 2 should say graph complete"
[ "$(sqlite3 "$tmp/s1/results.sqlite" "SELECT count(DISTINCT run) FROM evaluations")" = 4 ] && ok || bad "evaluations of 4 runs expected"
for p in 000 003; do python3 tests/e2e/db_rows.py csv "$tmp/s1" $p > /dev/null && ok || bad "point $p: CSV and database differ"; done

# the same sweep on 3 ranks
"$mpiexec" --oversubscribe -n 3 "$dtrun" $cfg --output-dir "$tmp/s3" --quiet > "$tmp/s3.log" 2>&1 || bad "sweep at P=3 failed: $(tail -3 "$tmp/s3.log")"
same_sweep "$tmp/s1" "$tmp/s3" "P=1 vs P=3"
# a point alone, from its own config.yaml, from another working directory
(cd "$tmp" && "$dtrun" "$tmp/s1/002/config.yaml" --output-dir "$tmp/alone" --quiet > "$tmp/alone.log" 2>&1) \
  || bad "point 002 alone failed: $(tail -3 "$tmp/alone.log")"
same_results "$tmp/s1/002" "$tmp/alone" "point 002 alone"

# --sweep: replaces the file's seed axis and adds one
"$dtrun" $cfg --sweep experiment.seed=5 --sweep problem_configs.dsgd.optimizer_config.alpha0=0.01,0.03 --output-dir "$tmp/cli" \
  --quiet > "$tmp/cli.log" 2>&1 || bad "--sweep run failed: $(tail -3 "$tmp/cli.log")"
[ "$(grep -c '^- point' "$tmp/cli/sweep.yaml")" = 4 ] && grep -q 'values: {graph: "cycle", experiment.seed: "5", problem_configs.dsgd.optimizer_config.alpha0: "0.03"}' "$tmp/cli/sweep.yaml" \
  && grep -q "alpha0: 0.03" "$tmp/cli/001/config.yaml" && ok || bad "--sweep did not make the 2 x 1 x 2 grid: $(cat "$tmp/cli/sweep.yaml")"

# stopped by SIGINT in its second point, resumed (on 2 ranks): the files of the sweep never stopped
"$dtrun" $cfg --output-dir "$tmp/int" --progress never \
  > "$tmp/int.log" 2>&1 &
pid=$!
for _ in $(seq 400); do grep -q "sweep point 2 of 4" "$tmp/int.log" && grep -q "^dsgd  *10 |" <(sed -n '/sweep point 2 of 4/,$p' "$tmp/int.log") && break; sleep 0.05; done
kill -INT $pid
wait $pid
rc=$?
[ $rc = 130 ] && grep -q "continue the sweep with: dtrun resume $tmp/int" "$tmp/int.log" && ok || bad "SIGINT in a sweep: exit $rc: $(tail -3 "$tmp/int.log")"
"$dtrun" check "$tmp/int" > "$tmp/int.check" 2>&1
grep -q "000  completed" "$tmp/int.check" && grep -q "003  not started" "$tmp/int.check" && ok || bad "check of a stopped sweep: $(cat "$tmp/int.check")"
"$mpiexec" --oversubscribe -n 2 "$dtrun" resume "$tmp/int" --quiet > "$tmp/int2.log" 2>&1 || bad "resume of the sweep failed: $(tail -3 "$tmp/int2.log")"
same_sweep "$tmp/s1" "$tmp/int" "stopped and resumed"
"$dtrun" resume "$tmp/int" > "$tmp/int3.log" 2>&1 && grep -q "sweep: 0 points run, completed before: 4" "$tmp/int3.log" && ok \
  || bad "resuming a completed sweep should run nothing: $(tail -2 "$tmp/int3.log")"

# A sweep of seeds and a run of the same experiment whose seed the sweep holds are two groups:
# each gets its folder's name, in the table and in the figure's legend (with its own style)
cat > "$tmp/syn.yaml" <<'YAML'
experiment:
  name: syn
  dataset: synthetic
  synthetic: {samples: 200, features: 5}
  seed: 0
  graph: {num_nodes: 3, type: cycle}
problem_configs:
  dsgd:
    evaluate_frequency: 5
    optimizer_config: {alg_name: dsgd, outer_iterations: 10, alpha0: 0.1}
YAML
"$dtrun" "$tmp/syn.yaml" --sweep experiment.seed=0,1 -o "$tmp/lab/seeds" --quiet > /dev/null 2>&1 \
  && "$dtrun" "$tmp/syn.yaml" -o "$tmp/lab/demo" --quiet > /dev/null 2>&1 || bad "the runs for the labels' check failed"
DTRUN_PLOT_DESCRIBE=$tmp/lab.json "$dtrun" compare "$tmp/lab/seeds" "$tmp/lab/demo" --plot "$tmp/lab.png" > "$tmp/lab.txt" 2>&1
grep -Eq "^syn +dsgd .* 2 +10 " "$tmp/lab.txt" && grep -Eq "^syn \(demo\) +dsgd .* 1 +10 " "$tmp/lab.txt" \
  && python3 - "$tmp/lab.json" <<'PY' && ok || bad "a sweep and a run of one experiment: $(cat "$tmp/lab.txt")"
import json, sys
d = json.load(open(sys.argv[1]))
L = d["legend"]
# the legend's long title wraps: the panel keeps its width, the legend stays inside the figure
assert d["panels"][0]["width_in"] >= 1.5, d["panels"][0]["width_in"]
assert L["box_in"][0] >= -0.01 and L["box_in"][2] <= d["size"][0] + 0.01, (L["box_in"], d["size"])
assert len(set(L["entries"])) == 2 and any("syn (demo)" in e for e in L["entries"]), L["entries"]
assert len({tuple(s) for s in L["styles"]}) == 2, L["styles"]
PY

# dtrun runs: the sweep's 4 points x 2 problems, and its headline the best mean over the seeds of a
# problem at one graph (not its best seed)
"$dtrun" runs "$tmp" --json > "$tmp/runs.json" 2>&1 || bad "runs --json failed: $(cat "$tmp/runs.json")"
python3 - "$tmp/runs.json" "$tmp/s1/results.sqlite" <<'PY' && ok || bad "runs: the sweep's counts or headline"
import json, sqlite3, sys
s1 = {r["name"]: r for r in json.load(open(sys.argv[1]))}["s1"]
db = sqlite3.connect(sys.argv[2])
rows = db.execute("SELECT p.problem_name, v.value, avg(e.top1_accuracy) FROM evaluations e JOIN problems p ON p.run = e.run "
                  "AND p.problem = e.problem JOIN sweep_values v ON v.run = e.run AND v.key = 'graph' WHERE e.round = "
                  "(SELECT max(round) FROM evaluations f WHERE f.run = e.run AND f.problem = e.problem) GROUP BY e.run, e.problem").fetchall()
groups = {}
for problem, graph, v in rows:
    groups.setdefault((problem, graph), []).append(v)
assert all(len(v) == 2 for v in groups.values()) and len(groups) == 4, groups
best = max(sum(v) / len(v) for v in groups.values())
assert s1["kind"] == "sweep" and s1["points"] == 4 and s1["problems"] == s1["problems_completed"] == 8, s1
assert abs(s1["value"] - best) < 1e-12, (s1["value"], best, max(max(v) for v in groups.values()))
PY

# compare: grouped by graph across the 2 seeds, mean ± 95% interval, rounds to a target, formats
"$dtrun" compare "$tmp/s1" --target 0.2 > "$tmp/cmp.txt" 2>&1 || bad "compare of the sweep failed: $(cat "$tmp/cmp.txt")"
grep -Eq "^graph=cycle +dsgd +dsgd +completed +2 +30 +[0-9.]+ ± [0-9.]+ " "$tmp/cmp.txt" && [ "$(grep -c '^graph=' "$tmp/cmp.txt")" = 4 ] \
  && ok || bad "compare should show 4 groups of 2 seeds with mean ± interval: $(cat "$tmp/cmp.txt")"
python3 - "$tmp/s1/results.sqlite" "$tmp/cmp.txt" <<'PY' && ok || bad "compare's mean, interval or rounds-to-target disagree with the database"
import re, sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1])
finals, reach = [], []
for (run,) in db.execute("SELECT run FROM runs r JOIN sweep_values v USING (run) WHERE v.key = 'graph' AND v.value = 'cycle'"):
    rows = db.execute("SELECT round, avg(top1_accuracy) FROM evaluations e JOIN problems p USING (run, problem)"
                      " WHERE run = ? AND p.problem_name = 'dsgd' GROUP BY round ORDER BY round", (run,)).fetchall()
    finals.append(rows[-1][1])
    reach.append(next(r for r, a in rows if a >= 0.2))
m = statistics.mean(finals); ci = 12.706 * statistics.stdev(finals) / 2 ** 0.5
line = next(l for l in open(sys.argv[2]) if re.match(r"graph=cycle +dsgd ", l))
got = re.search(r"([0-9.]+) ± ([0-9.]+)", line)
assert abs(float(got.group(1)) - m) < 1e-4 and abs(float(got.group(2)) - ci) < 1e-4, (line, m, ci)
assert line.split()[-3] == "%.0f" % statistics.mean(reach), (line, reach)
PY
"$dtrun" compare "$tmp/s1" --csv --target 0.5,0.99 > "$tmp/cmp.csv" && python3 - "$tmp/cmp.csv" <<'PY' && ok || bad "compare --csv: $(head -3 "$tmp/cmp.csv")"
import csv, re, sys
r = list(csv.DictReader(open(sys.argv[1])))
assert len(r) == 4 and float(r[0]["top1_accuracy_ci95"]) >= 0, r[0]
# tidy: snake_case names, one number per cell (empty where there is none), the seeds reaching each target
for name in r[0]:
    assert re.fullmatch(r"[a-z0-9_]+", name), name
for row in r:
    for k, v in row.items():
        if k not in ("run", "problem", "algorithm", "status") and v != "":
            float(v)
    assert 0 <= int(row["round_to_0_5_seeds"]) <= int(row["seeds"]) and row["round_to_0_99_seeds"] == "0", row
PY
"$dtrun" compare "$tmp/s1" --markdown | grep -q '^| graph=complete | dsgt | dsgt | completed | 2 |' && ok || bad "compare --markdown"
"$dtrun" compare "$tmp/s1" --latex | grep -q '^\\begin{tabular}' && ok || bad "compare --latex"
"$dtrun" compare "$tmp/s1" --target 0.2 --x samples | grep -q "samples@0.2" && ok || bad "compare --x samples"
"$dtrun" compare "$tmp/s1" --metric top1_acuracy > /dev/null 2> "$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "did you mean top1_accuracy" "$tmp/err" && ok || bad "an unknown metric: exit $rc: $(cat "$tmp/err")"
"$dtrun" compare "${tmp}/s" > /dev/null 2> "$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "no such run or sweep folder; did you mean" "$tmp/err" && ok || bad "an unknown folder: exit $rc: $(cat "$tmp/err")"
# a figure of the real sweep (tests/e2e/figures.sh checks every kind in detail): a 1-page PDF that renders
"$dtrun" compare "$tmp/s1" --metric top1_accuracy,consensus_error --facet graph --plot "$tmp/f.pdf" > /dev/null 2> "$tmp/f.err" \
  && pdfinfo "$tmp/f.pdf" 2>/dev/null | grep -q "^Pages: *1$" && pdftoppm -png -r 50 "$tmp/f.pdf" "$tmp/fp" && [ -s "$tmp/fp-1.png" ] && ok \
  || bad "the faceted PDF of the sweep: $(tail -3 "$tmp/f.err")"

# A study over a Fiedler target (configs/scaling.yaml's shape): geometric graphs drawn to Fiedler
# values 1 and 2 on 4 and 6 nodes; each point's graph.yaml holds a value within the tolerance,
# its archived config.yaml (which also holds the unused radius) reruns to the same files, and
# compare tabulates rounds to targets against the Fiedler value, filtered by --where.
sed '/^sweep:/,$d' $cfg > "$tmp/nosweep.yaml"
"$dtrun" "$tmp/nosweep.yaml" --output-dir "$tmp/fd" --quiet --set experiment.graph.type=geometric --sweep experiment.graph.num_nodes=4,6 \
  --sweep experiment.graph.fiedler=1,2 --sweep experiment.seed=0 > "$tmp/fd.log" 2>&1 || bad "the Fiedler sweep failed: $(tail -3 "$tmp/fd.log")"
python3 - "$tmp/fd" <<'PY' && ok || bad "a point's graph misses its Fiedler target"
import re, sys
for p, target in (("000", 1), ("001", 2), ("002", 1), ("003", 2)):
    g = open(f"{sys.argv[1]}/{p}/graph.yaml").read()
    value = float(re.search(r"^fiedler_value: (\S+)", g, re.M).group(1))
    assert re.search(r"^fiedler_target: %g$" % target, g, re.M) and re.search(r"^radius: ", g, re.M), (p, g[:300])
    assert abs(value - target) <= 0.01 + 1e-12, (p, value, target)
PY
"$dtrun" "$tmp/fd/003/config.yaml" --output-dir "$tmp/fd_alone" --quiet > /dev/null 2>&1 && same_results "$tmp/fd/003" "$tmp/fd_alone" \
  "a Fiedler-target point's config.yaml rerun" && ok
"$dtrun" compare "$tmp/fd" --target 0.2,0.3 --against experiment.graph.fiedler --where experiment.graph.num_nodes=6 > "$tmp/fd.cmp" 2>&1
[ "$(grep -Ec '^num_nodes=6 fiedler=[12] +[12]\.0 +ds' "$tmp/fd.cmp")" = 4 ] && ! grep -q "num_nodes=4" "$tmp/fd.cmp" \
  && head -1 "$tmp/fd.cmp" | grep -q "round@0.2  round@0.3" && ok || bad "compare --against --where: $(cat "$tmp/fd.cmp")"
"$dtrun" compare "$tmp/fd" --against experiment.graph.fidler > "$tmp/fd.bad" 2>&1
[ $? = 2 ] && grep -q "did you mean experiment.graph.fiedler?" "$tmp/fd.bad" && ok || bad "--against with a typo: $(cat "$tmp/fd.bad")"
"$dtrun" compare "$tmp/fd" --target 0.2,0.3 --against experiment.graph.fiedler --plot "$tmp/fd.pdf" > /dev/null 2>&1 \
  && [ "$(pdfinfo "$tmp/fd.pdf" | awk '/^Pages:/ {print $2}')" = 1 ] && ok || bad "the --against figure is not a 1-page PDF"

# compare pools folders: three runs that differ by the seed alone are one group of 3 seeds,
# labelled by their experiment; a run of another config stays its own row, by its folder
cat > "$tmp/pool.yaml" <<'YAML'
experiment:
  name: pooled
  dataset: synthetic
  synthetic: {samples: 400, features: 10}
  graph: {num_nodes: 4, type: cycle}
problem_configs:
  dsgd:
    train_batch_size: 8
    evaluate_frequency: 10
    optimizer_config: {alg_name: dsgd, outer_iterations: 20, alpha0: 0.1}
YAML
for sd in 0 1 2; do "$dtrun" "$tmp/pool.yaml" --set experiment.seed=$sd --output-dir "$tmp/pool$sd" --quiet > /dev/null 2>&1; done
"$dtrun" "$tmp/pool.yaml" --set experiment.graph.type=complete --output-dir "$tmp/poolc" --quiet > /dev/null 2>&1
"$dtrun" compare "$tmp/pool0" "$tmp/pool1" "$tmp/pool2" "$tmp/poolc" > "$tmp/pool.txt" 2>&1
grep -Eq "^pooled +dsgd +dsgd +completed +3 +20 " "$tmp/pool.txt" && grep -Eq "^poolc +dsgd +dsgd +completed +1 " "$tmp/pool.txt" \
  && [ "$(grep -c dsgd "$tmp/pool.txt")" = 2 ] && ok || bad "compare does not pool the seeds of separate folders: $(cat "$tmp/pool.txt")"
# a re-run of seed 0 is no fourth seed
"$dtrun" "$tmp/pool.yaml" --set experiment.seed=0 --output-dir "$tmp/pool0b" --quiet > /dev/null 2>&1
"$dtrun" compare "$tmp/pool0" "$tmp/pool1" "$tmp/pool2" "$tmp/pool0b" > "$tmp/pool2.txt" 2>&1
grep -Eq "^pooled +dsgd +dsgd +completed +3 " "$tmp/pool2.txt" && grep -Eq "^pooled \(pool0b\) +dsgd +dsgd +completed +1 " "$tmp/pool2.txt" && ok \
  || bad "compare pooled a re-run of one seed as another seed: $(cat "$tmp/pool2.txt")"

# a job array's way (--point K): the four points at once, one process each, into one folder, give
# the sweep's files and rows; a point done is skipped; the folder resumes as a sweep; a point out
# of range, a folder of another sweep, --point without --output-dir or a sweep: exit 2
for k in 0 1 2 3; do "$dtrun" $cfg --output-dir "$tmp/arr" --point $k --quiet > "$tmp/arr$k.log" 2>&1 & done
wait
same_sweep "$tmp/s1" "$tmp/arr" "four --point jobs at once"
"$dtrun" $cfg --output-dir "$tmp/arr" --point 2 > "$tmp/arr2b.log" 2>&1 && grep -q "0 points run, completed before: 1" "$tmp/arr2b.log" \
  && ok || bad "a point done again: $(tail -2 "$tmp/arr2b.log")"
"$dtrun" resume "$tmp/arr" > "$tmp/arr_resume.log" 2>&1 && grep -q "completed before: 4" "$tmp/arr_resume.log" && ok \
  || bad "resume of the array's folder: $(tail -2 "$tmp/arr_resume.log")"
# a completed sweep whose results.sqlite was deleted: resume puts every point's rows back
cp -r "$tmp/arr" "$tmp/lost" && rm -f "$tmp/lost"/results.sqlite*
"$dtrun" resume "$tmp/lost" > "$tmp/lost.log" 2>&1 && [ "$(grep -c 'had no rows of 00[0-3]: rebuilt from its files' "$tmp/lost.log")" = 4 ] \
  && cmp -s <(python3 tests/e2e/db_rows.py dump9 "$tmp/arr") <(python3 tests/e2e/db_rows.py dump9 "$tmp/lost") \
  && [ "$(python3 tests/e2e/db_rows.py dump "$tmp/arr" | grep -c '^runs')" = 4 ] && ok || bad "a sweep's deleted database: $(tail -3 "$tmp/lost.log")"

point_refused() { # expected-message dtrun-arguments...
  local want=$1
  shift
  "$dtrun" "$@" > "$tmp/pr.log" 2>&1
  local rc=$?
  [ $rc -eq 2 ] && grep -q -- "$want" "$tmp/pr.log" && ok || bad "--point: exit $rc, $(head -c 300 "$tmp/pr.log")"
}
point_refused "--point 4: the sweep in .* has points 0 to 3" $cfg --output-dir "$tmp/arr" --point 4
point_refused "holds another sweep (its point 0 has experiment.seed = 0, this one's 7)" $cfg --sweep experiment.seed=7,8 \
  --output-dir "$tmp/arr" --point 0
point_refused "holds another sweep: its .*/000/config.yaml differs from this job's point 0" $cfg \
  --set problem_configs.dsgd.optimizer_config.alpha0=0.03 --output-dir "$tmp/arr" --point 0
point_refused "--point goes with run and --output-dir SWEEP_DIR" $cfg --point 0
point_refused "--point runs one point of a sweep; tests/e2e/small.yaml has no sweep" tests/e2e/small.yaml --output-dir "$tmp/nosweep" \
  --point 0
[ ! -e "$tmp/nosweep" ] && ok || bad "--point of a file without a sweep made a folder"

# every point's split and model are made in the pre-check: a later point whose model does not fit
# the data is refused by check and by run before anything runs, naming the point (before: check
# exited 0, and run finished point 000 and stopped at point 001 with exit 2)
for cmd in check run; do
  out=()
  [ $cmd = run ] && out=(--output-dir "$tmp/models" --quiet)
  "$dtrun" $cmd tests/e2e/sweep.yaml --sweep experiment.model.name=lenet5,vgg11 "${out[@]}" > "$tmp/models.log" 2>&1
  rc=$?
  [ $rc = 2 ] && grep -q "does not fit its 1x1 input.*(sweep point [0-9] of 8: .*experiment.model.name=vgg11)" "$tmp/models.log" \
    && [ ! -e "$tmp/models" ] && ok || bad "$cmd of a sweep whose later point's model does not fit: exit $rc, $(tail -3 "$tmp/models.log")"
done

echo "$pass checks passed, $fail failed"
[ "$fail" = 0 ]
