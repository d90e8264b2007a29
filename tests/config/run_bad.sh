#!/usr/bin/env bash
# The config golden suite: every tests/config/bad/NAME.yaml (with the options in NAME.args, if
# any) must make `dtrun check` exit 2, print nothing on stdout, and print exactly NAME.expected
# on stderr, where @ALGORITHMS@ stands for the registered algorithms and @TIME_VARYING@ for those
# that run on time-varying graphs, as `dtrun --version` lists them (so that adding an optimizer
# changes no golden). Also a few cases generated here (a file
# over the size limit, deep nesting).
# usage: run_bad.sh DTRUN SOURCE_ROOT     (runs from SOURCE_ROOT so paths in messages match)
set -u
dtrun=$(realpath "$1")
cd "$2" || exit 1
fail=0 pass=0
check() { # name exit stdout stderr
  if [ "$2" != 2 ] || [ -n "$3" ]; then
    echo "FAIL $1: exit $2 (expected 2)${3:+, printed on stdout}"
    [ -n "${4:-}" ] && printf '%s\n' "$4" | head -40
    fail=$((fail+1)); return
  fi
  pass=$((pass+1))
}
built_cuda=$("$dtrun" --version | grep -c "backends:.*cuda")
algorithms=$("$dtrun" --version | sed -n 's/^algorithms: //p')
varying=$("$dtrun" --version | sed -n 's/^time-varying graphs: //p')
[ -n "$algorithms" ] || { echo "FAIL: dtrun --version lists no algorithms"; exit 1; }
for f in tests/config/bad/*.yaml; do
  n=${f%.yaml}
  # backend: cuda is bad input only for a dtrun built without the CUDA backend (a build with it
  # refuses the run, with exit 2, where no GPU is usable: tests/gpu/run_gpu_e2e.sh's skip)
  [ "$(basename "$n")" = backend_cuda_unbuilt ] && [ "$built_cuda" != 0 ] && continue
  args=()
  [ -f "$n.args" ] && read -r -a args < "$n.args"
  out=$("$dtrun" check "$f" "${args[@]}" 2>/tmp/dt_bad_err.$$ </dev/null)
  rc=$?
  err=$(cat /tmp/dt_bad_err.$$)
  expected=$(sed -e "s/@ALGORITHMS@/$algorithms/g" -e "s/@TIME_VARYING@/$varying/g" "$n.expected")
  if [ "$rc" = 2 ] && [ -z "$out" ] && [ "$err" != "$expected" ]; then
    echo "FAIL $(basename "$n"): message differs"
    diff <(echo "$expected") <(echo "$err")
    fail=$((fail+1))
    continue
  fi
  check "$(basename "$n")" "$rc" "$out" "$err"
done
tmp=$(mktemp -d)
# over the 1 MiB limit
{ echo "experiment:"; for i in $(seq 1 40000); do echo "  # padding line $i ........................"; done; } > "$tmp/huge.yaml"
out=$("$dtrun" check "$tmp/huge.yaml" 2>"$tmp/err")
rc=$?
grep -q "may hold at most 1048576 bytes" "$tmp/err" || { echo "FAIL huge: $(cat "$tmp/err")"; fail=$((fail+1)); }
check huge "$rc" "$out"
# nesting deeper than the limit
python3 -c 'print("experiment: " + "["*100 + "]"*100)' > "$tmp/deep.yaml" 2>/dev/null || printf 'experiment: %s%s\n' "$(printf '[%.0s' $(seq 100))" "$(printf ']%.0s' $(seq 100))" > "$tmp/deep.yaml"
out=$("$dtrun" check "$tmp/deep.yaml" 2>"$tmp/err")
rc=$?
grep -q "nests deeper than 64 levels" "$tmp/err" || { echo "FAIL deep: $(cat "$tmp/err")"; fail=$((fail+1)); }
check deep "$rc" "$out"
# a missing file and a folder
out=$("$dtrun" check "$tmp/none.yaml" 2>"$tmp/err"); rc=$?
grep -q "none.yaml: cannot open the experiment file" "$tmp/err" || { echo "FAIL missing file: $(cat "$tmp/err")"; fail=$((fail+1)); }
check missing_file "$rc" "$out"
out=$("$dtrun" check "$tmp" 2>"$tmp/err"); rc=$?
grep -q "is neither an experiment file nor a run folder" "$tmp/err" || { echo "FAIL folder: $(cat "$tmp/err")"; fail=$((fail+1)); }
check folder "$rc" "$out"
# what `check` rejects after loading (graph, data, split, model, output folder), `run` rejects
# before training with the same message and exit 2, also on 2 ranks
for n in model_kernel_too_big model_last_layer layers_groupnorm_groups augment_not_images layers_residual_flattens graph_degree_too_big split_dirichlet_impossible data_dir_missing \
         data_dir_without_files cifar_data_dir_without_files output_metadir_file edge_file_folder; do
  "$dtrun" "tests/config/bad/$n.yaml" --quiet > "$tmp/out" 2> "$tmp/err" < /dev/null
  rc=$?
  if [ "$rc" != 2 ] || [ "$(cat "$tmp/err")" != "$(cat "tests/config/bad/$n.expected")" ]; then
    echo "FAIL run $n: exit $rc: $(cat "$tmp/err")"; fail=$((fail+1))
  else pass=$((pass+1)); fi
done
if [ -n "${MPIEXEC:-}" ]; then
  "$MPIEXEC" --oversubscribe -n 2 "$dtrun" tests/config/bad/data_dir_missing.yaml --quiet > "$tmp/out" 2> "$tmp/err" < /dev/null
  rc=$?
  [ "$rc" = 2 ] && grep -qF "$(cat tests/config/bad/data_dir_missing.expected)" "$tmp/err" && pass=$((pass+1)) \
    || { echo "FAIL run data_dir_missing on 2 ranks: exit $rc: $(head -3 "$tmp/err")"; fail=$((fail+1)); }
fi
rm -rf "$tmp" /tmp/dt_bad_err.$$
echo "config golden suite: $pass passed, $fail failed"
[ "$fail" = 0 ]
