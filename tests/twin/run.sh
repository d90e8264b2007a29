#!/bin/bash
# tests/twin/run.sh DTRUN MPIEXEC SOURCE_ROOT: every plug-in against its float64 twin
# (optimizers/<name>/twin.py) on the traces of tests/twin/logreg.yaml (every plug-in and its
# variants on the convex problem), tests/twin/directed.yaml (push-sum on a directed graph),
# tests/twin/cnn.yaml (the seed CNN on MNIST) and tests/twin/resnet.yaml (residual blocks with
# batch and group norm). Also checks
# that a trace is the same at P = 1 and 3 (it fixes the run, so it cannot depend on the ranks),
# and, as negative controls, that the comparison fails, naming the round, node and tensor, when
# dtrun's trace comes from a step size 1% off. Skips (77) without PyTorch or data/mnist.
. "$(dirname "$0")/../checks.sh"
/usr/bin/python3 -c "import torch, yaml" 2>/dev/null || { echo "no PyTorch for /usr/bin/python3: skipped"; exit 77; }
e2e_begin "$@"
twin() { /usr/bin/python3 tests/twin/twin.py "$@"; }

# 1. the convex problem: every plug-in and variant, traced at P = 1 and P = 3
"$dtrun" tests/twin/logreg.yaml --quiet --dump-trace "$tmp/lr1" > "$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; bad "logreg run"; }
"$mpiexec" --oversubscribe -n 3 "$dtrun" tests/twin/logreg.yaml --quiet --dump-trace "$tmp/lr3" > "$tmp/run.log" 2>&1 ||
  { cat "$tmp/run.log"; bad "logreg run at P = 3"; }
if diff -r "$tmp/lr1" "$tmp/lr3" > /dev/null; then ok; else bad "the traces at P = 1 and 3 differ"; fi
if twin "$tmp/lr1" | tee "$tmp/lr.out"; then ok; else bad "a twin disagrees on the convex problem"; fi
problems=$(grep -c "rounds, " "$tmp/lr.out")
[ "$problems" -eq "$(grep -c 'alg_name:' tests/twin/logreg.yaml)" ] && ok || bad "only $problems problems were followed"
for p in $(ls optimizers/*/twin.py | cut -d/ -f2); do # every plug-in with a twin is followed
  grep -q " $p " "$tmp/lr.out" && ok || bad "no problem of tests/twin/logreg.yaml runs $p"
done
for d in optimizers/*/; do # every plug-in has a twin
  [ -f "$d/twin.py" ] && ok || bad "$d has no twin.py"
done

# 2. negative controls: dtrun's run with a step 1% larger than the config the twin reads
"$dtrun" tests/twin/logreg.yaml --quiet --set problem_configs.dsgd.optimizer_config.alpha0=0.101 \
  --set problem_configs.dinno.optimizer_config.rho_init=0.101 --dump-trace "$tmp/off" > "$tmp/run.log" 2>&1 || bad "run"
cp "$tmp/lr1/config.yaml" "$tmp/off/config.yaml" # the twin follows the config as written
if twin "$tmp/off" dsgd dinno > "$tmp/off.out"; then bad "the twins did not notice a 1% change of a step"; else ok; fi
grep -q "^dsgd .*FAILED: round 0, node [0-9]*: parameters differ by .* worst tensor" "$tmp/off.out" && ok || { cat "$tmp/off.out"; bad "dsgd's report"; }
grep -q "^dinno .*FAILED: round 0, node [0-9]*: parameters differ" "$tmp/off.out" && ok || { cat "$tmp/off.out"; bad "dinno's report"; }

# 2b. a directed graph: push-sum's weights leave 1 (column- but not row-stochastic W); at P = 1
# and 3 the same trace
"$dtrun" tests/twin/directed.yaml --quiet --dump-trace "$tmp/dir1" > "$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; bad "directed run"; }
"$mpiexec" --oversubscribe -n 3 "$dtrun" tests/twin/directed.yaml --quiet --dump-trace "$tmp/dir3" > "$tmp/run.log" 2>&1 ||
  { cat "$tmp/run.log"; bad "directed run at P = 3"; }
if diff -r "$tmp/dir1" "$tmp/dir3" > /dev/null; then ok; else bad "the directed traces at P = 1 and 3 differ"; fi
if twin "$tmp/dir1"; then ok; else bad "a twin disagrees on the directed graph"; fi

# 3. the seed CNN on MNIST
"$dtrun" tests/twin/cnn.yaml --quiet --dump-trace "$tmp/cnn" > "$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; bad "cnn run"; }
if twin "$tmp/cnn"; then ok; else bad "a twin disagrees on the seed CNN"; fi

# 4. two residual blocks (batch norm, group norm, a projection shortcut) on augmented images; DSGT
# mixes the buffers too
"$dtrun" tests/twin/resnet.yaml --quiet --dump-trace "$tmp/res" > "$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; bad "resnet run"; }
if twin "$tmp/res"; then ok; else bad "a twin disagrees on the residual blocks"; fi

echo "twin: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
