#!/usr/bin/env bash
# Config composition: include: (merged in order, the including file's keys winning, relative to
# the including file), a problem that extends another, ${key} and ${oc.env:VAR,default}, ???
# given by --set; errors in an included file at that file's line and column; the archived
# config.yaml stands alone and re-runs to the same files. Needs data/mnist (77 without it).
# usage: compose.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_begin "$@"
src=$PWD
mkdir -p "$tmp/conf/common" "$tmp/elsewhere"
cat > "$tmp/conf/common/base.yaml" <<YAML
experiment:
  name: base
  data_dir: $PWD/data/mnist
  seed: ???
  graph: {num_nodes: 3, type: cycle}
problem_configs:
  dsgd:
    evaluate_frequency: 2
    optimizer_config: {alg_name: dsgd, outer_iterations: 4, alpha0: 0.02}
YAML
cat > "$tmp/conf/common/graph.yaml" <<'YAML'
experiment:
  graph: {type: complete}
YAML
cat > "$tmp/conf/main.yaml" <<'YAML'
include: [common/base.yaml, common/graph.yaml]
experiment:
  name: "${experiment.graph.type}_${oc.env:DT_COMPOSE_TAG,untagged}"
  output_metadir: outputs
problem_configs:
  fast:
    extends: dsgd
    optimizer_config: {alpha0: 0.05}
YAML
cd "$tmp/elsewhere" || exit 1 # includes resolve from the including file, not the working directory

"$dtrun" check "$tmp/conf/main.yaml" > "$tmp/need.out" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "common/base.yaml:4:9: experiment.seed: a required value (???) that neither a file nor --set gives: --set experiment.seed=VALUE" \
  "$tmp/need.out" && ok || bad "??? left: exit $rc, $(head -2 "$tmp/need.out")"
DT_COMPOSE_TAG=t1 "$dtrun" check "$tmp/conf/main.yaml" --set experiment.seed=5 > "$tmp/check.out" 2>&1 || bad "check of the composed config: $(head -3 "$tmp/check.out")"
python3 - "$tmp/check.out" <<'PY' && ok || bad "the composed config: $(head -40 "$tmp/check.out")"
import sys, yaml
text = open(sys.argv[1]).read().split("# ---- summary ----")[0]
c = yaml.safe_load(text)
e, p = c["experiment"], c["problem_configs"]
assert e["name"] == "complete_t1" and e["seed"] == 5 and e["graph"]["type"] == "complete" and e["graph"]["num_nodes"] == 3, e
assert list(p) == ["dsgd", "fast"], list(p)
assert p["fast"]["optimizer_config"]["alpha0"] == 0.05 and p["fast"]["optimizer_config"]["alg_name"] == "dsgd", p["fast"]
assert p["fast"]["evaluate_frequency"] == 2 and p["dsgd"]["optimizer_config"]["alpha0"] == 0.02
PY
"$dtrun" check "$tmp/conf/main.yaml" --set experiment.seed=5 --set experiment.graph.type=wheel 2>&1 | grep -q "^  name: \"wheel_untagged\"" && ok \
  || bad "--set does not win over an included value, or \${} does not see it"

# a run, and its archived config: no include, no \${...}, and it re-runs to the same files
"$dtrun" run "$tmp/conf/main.yaml" --set experiment.seed=5 -o "$tmp/r1" --quiet > "$tmp/r1.log" 2>&1 || bad "the composed run: $(tail -3 "$tmp/r1.log")"
! grep -qE 'include|\$\{|\?\?\?|extends' "$tmp/r1/config.yaml" && ok || bad "the archived config is not self-contained"
"$dtrun" run "$tmp/r1/config.yaml" -o "$tmp/r2" --quiet > "$tmp/r2.log" 2>&1 && same_results "$tmp/r1" "$tmp/r2" "the archived composed config"

# errors: in an included file at its own line, a missing file, a cycle, an unknown problem or key
bad_case() { # name expected-message (the main file in $tmp/conf/bad.yaml)
  "$dtrun" check "$tmp/conf/bad.yaml" --set experiment.seed=1 > "$tmp/bad.out" 2>&1; local rc=$?
  [ $rc = 2 ] && grep -q -- "$2" "$tmp/bad.out" && ok || bad "$1: exit $rc, $(head -2 "$tmp/bad.out")"
}
printf 'experiment:\n  graph: {num_nodes: 3, tpye: cycle}\n' > "$tmp/conf/common/typo.yaml"
printf 'include: [common/base.yaml, common/typo.yaml]\n' > "$tmp/conf/bad.yaml"
bad_case "a typo in an included file" "common/typo.yaml:2:25: experiment.graph.tpye: unknown key"
printf 'include: common/none.yaml\n' > "$tmp/conf/bad.yaml"
bad_case "a missing include" "bad.yaml:1:10: include: .*common/none.yaml: No such file"
# an include that is a folder, a device or a FIFO: refused at the include line (before: the path
# alone, without the line)
mkfifo "$tmp/conf/fifo.yaml"
for t in common /dev/zero fifo.yaml; do
  printf 'include: %s\n' "$t" > "$tmp/conf/bad.yaml"
  bad_case "an include of $t" "bad.yaml:1:10: include: .*$t: not a regular file"
done
printf 'include: loop.yaml\n' > "$tmp/conf/loop.yaml"
printf 'include: [common/base.yaml, loop.yaml]\n' > "$tmp/conf/bad.yaml"
bad_case "an include cycle" "loop.yaml includes itself"
printf 'include: common/base.yaml\nproblem_configs:\n  f: {extends: dsdg}\n' > "$tmp/conf/bad.yaml"
bad_case "extends of an unknown problem" "bad.yaml:3:16: extends: expected the name of another problem; did you mean dsgd?"
printf 'include: common/base.yaml\nproblem_configs:\n  a: {extends: b}\n  b: {extends: a}\n' > "$tmp/conf/bad.yaml"
bad_case "an extends cycle" "extends: problem a extends itself (through the problems it extends)"
printf 'include: common/base.yaml\nexperiment: {name: "${experiment.graph.nodes}"}\n' > "$tmp/conf/bad.yaml"
bad_case "a reference to no key" 'bad.yaml:2:20: ${experiment.graph.nodes}: no such key in the config'
printf 'include: common/base.yaml\nexperiment: {name: "${oc.env:DT_NOT_SET_ANYWHERE}"}\n' > "$tmp/conf/bad.yaml"
bad_case "an unset variable without a default" "the environment variable DT_NOT_SET_ANYWHERE is not set"

# paths: an input path written in a file is relative to that file's folder (an included file's
# for its keys); one given on the command line, or in a seed-layout file's data_dir, to the
# working directory; the archive names them absolutely
ln -s "$src/data" "$tmp/conf/data"
printf '0 1\n1 2\n2 0\n' > "$tmp/conf/common/ring.txt"
printf 'experiment:\n  graph: {type: file, edge_file: ring.txt}\n' > "$tmp/conf/common/edges.yaml"
printf 'include: [common/base.yaml, common/edges.yaml]\nexperiment: {data_dir: data/mnist}\n' > "$tmp/conf/paths.yaml"
"$dtrun" check "$tmp/conf/paths.yaml" --set experiment.seed=1 > "$tmp/paths.out" 2>&1 \
  && grep -qF "data_dir: \"$tmp/conf/data/mnist\"" "$tmp/paths.out" && grep -qF "edge_file: \"$tmp/conf/common/ring.txt\"" "$tmp/paths.out" \
  && ok || bad "paths relative to their files: $(grep -E 'error|data_dir|edge_file' "$tmp/paths.out" | head -3)"
"$dtrun" run "$tmp/conf/paths.yaml" --set experiment.seed=1 --set 'problem_configs.*.optimizer_config.outer_iterations=1' \
  -o "$tmp/rp" --quiet > "$tmp/rp.log" 2>&1 && grep -qF "data_dir: \"$tmp/conf/data/mnist\"" "$tmp/rp/config.yaml" \
  && grep -qF "edge_file: \"$tmp/conf/common/ring.txt\"" "$tmp/rp/config.yaml" && ok || bad "the archive's paths: $(tail -2 "$tmp/rp.log")"
"$dtrun" check "$tmp/conf/paths.yaml" --set experiment.seed=1 --set experiment.data_dir=data/mnist > "$tmp/bad.out" 2>&1
[ $? = 2 ] && grep -qF "experiment.data_dir: 'data/mnist' is not a folder" "$tmp/bad.out" && ok \
  || bad "--set data_dir is not relative to the working directory: $(head -2 "$tmp/bad.out")"
printf 'include: common/base.yaml\nexperiment: {data_dir: data/mnist}\nproblem_configs:\n  dsgd: {problem_name: d}\n' \
  > "$tmp/conf/seed.yaml"
"$dtrun" check "$tmp/conf/seed.yaml" --set experiment.seed=1 > "$tmp/bad.out" 2>&1
[ $? = 2 ] && grep -qF "experiment.data_dir: 'data/mnist' is not a folder" "$tmp/bad.out" && ok \
  || bad "a seed-layout file's data_dir is not relative to the working directory: $(head -2 "$tmp/bad.out")"

echo "compose: $pass ok, $fail failed"
[ $fail = 0 ]
