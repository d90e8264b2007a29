#!/usr/bin/env bash
# CIFAR-10 end to end on small files in the official binary format that this test writes: 5
# training batches and a test batch of 3×32×32 images whose class sets their colour, so a model
# that reads the three channels learns them. The run gives the same files at P = 1 and P = 2,
# learns (final accuracy far above chance), records each file's SHA-256 (equal to sha256sum's)
# in summary.yaml, and writes only the cifar problem's section into config.yaml; `dtrun check`
# shows LeNet-5 on 3×32×32; a truncated file stops the run before it starts, with exit 2 and the
# file, record and byte in the message.
# usage: cifar.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_start "$@"

data=$tmp/c10/cifar-10-batches-bin
cfg=$tmp/cifar.yaml
cifar_config tests/e2e/cifar.yaml "$cfg" "$tmp/c10"

"$dtrun" "$cfg" --output-dir "$tmp/p1" --quiet > "$tmp/p1.log" 2>&1 || bad "CIFAR run at P=1 failed: $(tail -3 "$tmp/p1.log")"
"$mpiexec" --oversubscribe -n 2 "$dtrun" "$cfg" --output-dir "$tmp/p2" --quiet > "$tmp/p2.log" 2>&1 \
  || bad "CIFAR run at P=2 failed: $(tail -3 "$tmp/p2.log")"
same_results "$tmp/p1" "$tmp/p2" "CIFAR P=1 vs P=2"

# learns: the last evaluation's mean top-1 over nodes (chance is 0.1)
acc=$(final_top1 "$tmp/p1/dsgd_results.csv")
echo "final mean top-1 $acc"; awk -v a="$acc" 'BEGIN {exit !(a > 0.9)}' && ok || bad "CIFAR run did not learn: final mean top-1 $acc"

# the data files' digests, as sha256sum computes them
for f in 1 2 3 4 5; do
  want=$(sha256sum "$data/data_batch_$f.bin" | cut -d' ' -f1)
  grep -q "^  train_batch_$f: \"\?$want\"\?\$" "$tmp/p1/summary.yaml" && ok || bad "summary.yaml lacks train_batch_$f's digest $want"
done
grep -q "^  test_batch: \"\?$(sha256sum "$data/test_batch.bin" | cut -d' ' -f1)\"\?\$" "$tmp/p1/summary.yaml" && ok || bad "test_batch digest"
grep -q "^# data_files: the SHA-256 of each file's bytes" "$tmp/p1/summary.yaml" && ok || bad "summary.yaml's data_files comment"
# only the running problem's section
grep -q '^  cifar:' "$tmp/p1/config.yaml" && ! grep -q '^  synthetic:' "$tmp/p1/config.yaml" && ok \
  || bad "config.yaml should hold the cifar section and no other problem's: $(grep -n '^  [a-z]*:$' "$tmp/p1/config.yaml")"

# experiment.normalize: CIFAR-10's own statistics written out give the same files (the archived
# config then lists them and re-runs to them too); other statistics change the results; a list of
# the wrong length is refused with its position before anything runs
stats=(--set 'experiment.normalize.mean=0.4914, 0.4822, 0.4465' --set 'experiment.normalize.std=0.2470, 0.2435, 0.2616')
"$dtrun" "$cfg" "${stats[@]}" --output-dir "$tmp/n1" --quiet > "$tmp/n1.log" 2>&1 || bad "normalize run failed: $(tail -3 "$tmp/n1.log")"
cmp -s <(strip_times "$tmp/p1/dsgd_results.csv") <(strip_times "$tmp/n1/dsgd_results.csv") && ok \
  || bad "CIFAR with its own statistics written out should give the same results"
grep -q "^  normalize:" "$tmp/n1/config.yaml" && ok || bad "config.yaml should keep experiment.normalize"
"$dtrun" "$cfg" --set 'experiment.normalize.mean=0.5,0.5,0.5' --set 'experiment.normalize.std=0.5,0.5,0.5' --output-dir "$tmp/n2" \
  --quiet > "$tmp/n2.log" 2>&1 || bad "normalize run failed: $(tail -3 "$tmp/n2.log")"
cmp -s "$tmp/p1/dsgd_results.csv" "$tmp/n2/dsgd_results.csv" && bad "other statistics should change the results" || ok
"$dtrun" check "$cfg" --set 'experiment.normalize.mean=0.5' --set 'experiment.normalize.std=0.5' > "$tmp/n3.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "experiment.normalize.mean: expected 3 numbers (one per channel) for mean and for std, found 1 and 1" "$tmp/n3.log" \
  && ok || bad "a one-channel normalisation of CIFAR: exit $rc: $(cat "$tmp/n3.log")"

# check: the model on 3×32×32
"$dtrun" check "$cfg" > "$tmp/check.log" 2>&1
grep -q "input 3x32x32" "$tmp/check.log" && grep -q "total 62006 parameters" "$tmp/check.log" && ok \
  || bad "check should show LeNet-5 on 3x32x32 (62006 parameters): $(cat "$tmp/check.log")"

# a training batch missing beside the others: refused at data_dir's line and column, like a
# missing first file (before: "cannot open" without a position)
mv "$data/data_batch_5.bin" "$tmp/batch5"
"$dtrun" check "$cfg" > "$tmp/miss.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "^dtrun: $cfg:[0-9]*:[0-9]*: experiment.data_dir: .* holds data_batch_1.bin but not data_batch_5.bin (no such file)" \
  "$tmp/miss.log" && ok || bad "a missing data_batch_5.bin: exit $rc: $(tail -3 "$tmp/miss.log")"

mv "$tmp/batch5" "$data/data_batch_5.bin"

# a saved model of each named model, loaded into its PyTorch definition (dtrun.torch_models),
# evaluates the test set as the run did (loss to 1e-4, top-1 to one image; eval mode: batch norm's
# running statistics); the seed CNN on MNIST (issue 54, item 11)
if /usr/bin/python3 -c 'import torch, yaml' 2> /dev/null; then
  for m in default mlp resnet20 vgg11; do
    "$dtrun" "$cfg" --set experiment.model.name=$m --set experiment.save_models=true --set experiment.graph.num_nodes=2 \
      --set 'experiment.normalize={mean: [0.4, 0.5, 0.6], std: [0.2, 0.25, 0.3]}' \
      --set problem_configs.dsgd.optimizer_config.outer_iterations=2 --set problem_configs.dsgd.evaluate_frequency=2 \
      $([ $m = vgg11 ] && echo --set experiment.model.norm=group --set experiment.model.groups=4) \
      --output-dir "$tmp/tm_$m" --quiet > "$tmp/tm_$m.log" 2>&1 || bad "$m with save_models: $(tail -2 "$tmp/tm_$m.log")"
  done
  printf '%s\n' "experiment: {data_dir: $PWD/data/mnist, seed: 2, save_models: true, normalize: {mean: [0.13], std: [0.31]}," \
    "  graph: {num_nodes: 2, type: cycle}}" \
    "problem_configs: {dsgd: {evaluate_frequency: 3, optimizer_config: {alg_name: dsgd, outer_iterations: 3}}}" > "$tmp/tm_seed.yaml"
  "$dtrun" "$tmp/tm_seed.yaml" --output-dir "$tmp/tm_seed" --quiet > "$tmp/tm_seed.log" 2>&1 \
    || bad "the seed CNN with save_models: $(tail -2 "$tmp/tm_seed.log")"
  PYTHONPATH=python /usr/bin/python3 tests/e2e/torch_models.py "$tmp/tm_default:dsgd:1" "$tmp/tm_mlp:dsgd:1" "$tmp/tm_resnet20:dsgd:1" \
    "$tmp/tm_vgg11:dsgd:0" "$tmp/tm_seed:dsgd:0" && ok || bad "a named model in PyTorch differs from dtrun"
else
  echo "skipped: the PyTorch definitions (no torch or yaml for /usr/bin/python3)"
fi

# a truncated training file: exit 2 before anything runs, the file, record and byte named
head -c $((3073 * 50 + 7)) "$data/data_batch_3.bin" > "$tmp/short" && mv "$tmp/short" "$data/data_batch_3.bin"
"$dtrun" "$cfg" --output-dir "$tmp/bad" > "$tmp/bad.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "data_batch_3.bin: 153657 bytes is not a whole number of 3073-byte records: record 50 (from byte 153650) is truncated, 7 of its 3073 bytes present" "$tmp/bad.log" \
  && [ ! -e "$tmp/bad/dsgd_results.csv" ] && ok || bad "a truncated CIFAR file: exit $rc: $(tail -3 "$tmp/bad.log")"

echo "cifar: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
