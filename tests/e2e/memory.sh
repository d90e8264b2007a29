#!/usr/bin/env bash
# The memory estimate (experiments/memory.c) end to end:
# (1) every algorithm's state: on tests/e2e/small.yaml, a DSGDm config and tests/e2e/async.yaml at
#     P = 1 with --log-level debug, the backend memory each problem adds, as the CPU backend counts
#     it, lies within 5% of the estimate from its plug-in's declared state (dt_optimizer_state_size:
#     its slots, exchange and state_extra; its line of the log carries both);
# (2) `dtrun check`'s estimate per rank against the peak resident memory of the run, measured, on
#     three configs: small.yaml (every algorithm), configs/dist_mnist.yaml cut to 20 rounds, and
#     tests/e2e/resnet.yaml (batch norm, CIFAR-10 files written here): within 20%;
# (3) a run that cannot fit is refused, with its position and exit 2, by check and by run, before
#     anything the model sizes is allocated (run answers in seconds);
# (4) on a device backend (DT_CPU_STAGED=1 stands in for one), the GPU's part is printed and held
#     against the device's memory: the same huge model refused for the GPU, by check and by run.
# Skipped (77) without data/mnist.
# usage: memory.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_begin "$@"

# peak LOG CMD...: the command's peak resident memory in bytes (-1 when it fails); its output into LOG
peak() {
  python3 -c 'import resource, subprocess, sys
with open(sys.argv[1], "w") as log:
    r = subprocess.run(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 if r.returncode == 0 else -1)' "$@"
}
# estimate CONFIG [--set ...]: check's "about X per rank", in bytes
estimate() {
  "$dtrun" check "$@" 2>/dev/null | awk '/^# memory: about/ { u = $5; v = $4
    print v * (u == "TB" ? 1e12 : u == "GB" ? 1e9 : 1e6); exit }'
}
within() { # measured estimated tolerance what
  awk -v m="$1" -v e="$2" -v t="$3" 'BEGIN { exit !(m > 0 && e > 0 && (e - m) / m <= t && (m - e) / m <= t) }' && ok \
    || bad "$4: estimated $2 bytes, measured $1 (tolerance $3)"
  awk -v m="$1" -v e="$2" -v w="$4" 'BEGIN { printf "memory: %-40s estimated %6.1f MB, measured %6.1f MB (%+.1f%%)\n", w, e / 1e6, m / 1e6, 100 * (e - m) / m }'
}

# (1) and small.yaml's peak for (2)
m=$(peak "$tmp/s.log" "$dtrun" tests/e2e/small.yaml --log-level debug --output-dir "$tmp/s")
[ "$m" -gt 0 ] || bad "small.yaml failed: $(tail -3 "$tmp/s.log")"
# the algorithms small.yaml leaves out: DSGDm, and AD-PSGD in both modes (tests/e2e/async.yaml)
printf '%s\n' 'experiment:' '  name: dsgdm_memory' '  graph: {num_nodes: 5, type: cycle}' 'problem_configs:' '  dsgdm:' \
  '    evaluate_frequency: 10' '    optimizer_config: {alg_name: dsgdm, outer_iterations: 10}' > "$tmp/dsgdm.yaml"
for c in "$tmp/dsgdm.yaml" tests/e2e/async.yaml; do
  "$dtrun" "$c" --log-level debug --output-dir "$tmp/more" >> "$tmp/s.log" 2>&1 || bad "$c failed: $(tail -3 "$tmp/s.log")"
  rm -rf "$tmp/more"
done
problems=0
while read -r name added est; do
  problems=$((problems + 1))
  awk -v a="$added" -v e="$est" 'BEGIN { exit !(e > 0 && a >= 0.95 * e && a <= 1.05 * e) }' && ok \
    || bad "$name: the problem added $added bytes of backend memory, its estimate is $est"
done < <(awk '/memory: problem/ { for (i = 1; i <= NF; i++) { if ($i == "most") most = $(i + 1); if ($i == "before") before = $(i - 2) }
  match($0, /estimated [0-9]+/); est = substr($0, RSTART + 10, RLENGTH - 10); after = $(NF - 2)
  print $3, most - (after - before), est }' "$tmp/s.log")
[ "$problems" -ge 21 ] && ok || bad "expected a memory line for each of the 21 problems, found $problems"
within "$m" "$(estimate tests/e2e/small.yaml)" 0.2 "small.yaml (18 algorithms, 5 nodes)"

# (2) dist_mnist cut short, and the residual network with batch norm on CIFAR-10 files
cut=()
for p in dinno dsgd dsgt gossip; do cut+=(--set "problem_configs.$p.optimizer_config.outer_iterations=20"); done
within "$(peak "$tmp/d.log" "$dtrun" configs/dist_mnist.yaml "${cut[@]}" --output-dir "$tmp/d" --quiet)" \
  "$(estimate configs/dist_mnist.yaml "${cut[@]}")" 0.2 "configs/dist_mnist.yaml (20 rounds)"
cifar_config tests/e2e/resnet.yaml "$tmp/resnet.yaml" "$tmp/c10" 60 100
within "$(peak "$tmp/r.log" "$dtrun" "$tmp/resnet.yaml" --output-dir "$tmp/r" --quiet)" "$(estimate "$tmp/resnet.yaml")" 0.2 \
  "tests/e2e/resnet.yaml (batch norm, CIFAR-10)"

# (3) 64 nodes of a 13-billion-parameter model: refused at the model's key by check (even at one
# node per rank) and by run (all nodes in one process); a model that fits with more ranks: check
# names the fewest, and only run in one process refuses
cat > "$tmp/huge.yaml" <<'EOF'
experiment:
  name: huge
  graph: {num_nodes: 64, type: cycle}
  model:
    layers:
      - {type: flatten}
      - {type: linear, out_features: 16777216}
      - {type: linear, out_features: 10}
problem_configs:
  p:
    optimizer_config: {alg_name: dsgd, outer_iterations: 2}
EOF
why="huge.yaml:[0-9]+:[0-9]+: the run needs about [0-9.]+ [GTP]B per rank \(problem p's state .*more than this host's"
"$dtrun" check "$tmp/huge.yaml" > /dev/null 2> "$tmp/huge_check.err"
[ $? = 2 ] && grep -Eq "$why" "$tmp/huge_check.err" && ok || bad "check of a run that cannot fit: $(cat "$tmp/huge_check.err")"
start=$SECONDS
timeout 120 "$dtrun" "$tmp/huge.yaml" --output-dir "$tmp/h" > /dev/null 2> "$tmp/huge_run.err"
rc=$?
[ $rc = 2 ] && grep -Eq "$why" "$tmp/huge_run.err" && [ $((SECONDS - start)) -lt 60 ] && ok \
  || bad "run of a run that cannot fit: exit $rc after $((SECONDS - start)) s: $(tail -2 "$tmp/huge_run.err")"

sed 's/out_features: 16777216/out_features: 262144/' "$tmp/huge.yaml" > "$tmp/mid.yaml" # about 5 GB per node, 330 GB in all
if awk '/^MemTotal/ { exit !($2 > 300e6 || $2 < 12e6) }' /proc/meminfo; then
  echo "memory: this host's memory is outside 12 to 300 GB: the run that fits on more ranks is not checked"
else
  "$dtrun" check "$tmp/mid.yaml" > "$tmp/mid.check" 2>&1 && grep -Eq "run it with at least [0-9]+ ranks, one per host" "$tmp/mid.check" \
    && ok || bad "check of a run that fits on more ranks: $(tail -3 "$tmp/mid.check")"
  timeout 120 "$dtrun" "$tmp/mid.yaml" --output-dir "$tmp/m" > /dev/null 2> "$tmp/mid_run.err"
  rc=$?
  [ $rc = 2 ] && grep -q "64 nodes on the busiest rank" "$tmp/mid_run.err" && ok \
    || bad "run of 64 large nodes in one process: exit $rc: $(tail -2 "$tmp/mid_run.err")"
fi

# (4) on a device backend (the CPU backend with DT_CPU_STAGED=1 declares its memory a device of
# the host's size): check and run hold the state and workspaces against the device, the process
# and data against the host; check says how much goes to the GPU, and the huge model is refused
# for the GPU's memory, at the model's key
DT_CPU_STAGED=1 "$dtrun" check tests/e2e/small.yaml > "$tmp/staged.check" 2>&1 \
  && grep -Eq "^#   GPU: about [0-9.]+ MB of its [0-9.]+ GB: workspaces [0-9.]+ MB, the training set [0-9.]+ MB$" "$tmp/staged.check" \
  && grep -q "^#   state .*, on the GPU$" "$tmp/staged.check" && ok || bad "check on a device backend: $(tail -4 "$tmp/staged.check")"
why="huge.yaml:[0-9]+:[0-9]+: the run needs about [0-9.]+ [GTP]B of GPU memory per rank \(problem p's state .*more than the GPU's"
DT_CPU_STAGED=1 "$dtrun" check "$tmp/huge.yaml" > /dev/null 2> "$tmp/huge_dev.err"
[ $? = 2 ] && grep -Eq "$why" "$tmp/huge_dev.err" && ok || bad "check of a run the GPU cannot hold: $(cat "$tmp/huge_dev.err")"
DT_CPU_STAGED=1 timeout 120 "$dtrun" "$tmp/huge.yaml" --output-dir "$tmp/hd" > /dev/null 2> "$tmp/huge_dev_run.err"
rc=$?
[ $rc = 2 ] && grep -Eq "$why" "$tmp/huge_dev_run.err" && ok || bad "run the GPU cannot hold: exit $rc: $(tail -2 "$tmp/huge_dev_run.err")"

echo "memory: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
