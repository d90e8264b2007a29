#!/usr/bin/env bash
# A residual network with batch norm end to end (tests/e2e/resnet.yaml, on small CIFAR-10-format
# files written here): the same files at P = 1 and P = 3, saved models included (each row the
# parameters and then the running statistics, named by the manifest); the archived config re-runs
# to the same files; `buffers: mix` brings the nodes' running statistics together, its bytes
# counted; the average model is evaluated on a test subset when asked, and a sample of nodes; a run killed after a checkpoint and resumed at another rank count gives
# them too (the running statistics travel in the checkpoint); and it learns. The shipped
# configs/fashion_resnet.yaml, cut short, gives the same files at P = 1 and P = 4, and
# configs/cifar10_resnet20.yaml on the generated files at P = 1 and P = 2.
# usage: resnet.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_start "$@"

cfg=$tmp/resnet.yaml
cifar_config tests/e2e/resnet.yaml "$cfg" "$tmp/c10" 60 100

ranks_and_rerun "$cfg" 3 resnet

# the saved rows: parameters, then buffers, as the manifest places them
params=$("$dtrun" check "$cfg" 2>/dev/null | sed -n 's/^# model: \([0-9]*\) parameters.*/\1/p')
/usr/bin/python3 - "$tmp/p1" "$params" <<'PY' && ok || bad "saved models and their manifest disagree"
import csv, sys
import numpy as np
run, params = sys.argv[1], int(sys.argv[2])
rows = np.load(f"{run}/dsgd_models.npy")
man = list(csv.DictReader(open(f"{run}/dsgd_models.tsv"), delimiter="\t"))
size = lambda s: int(np.prod([int(d) for d in s.split("x")])) if s else 0
assert rows.shape[0] == 6, rows.shape
end = max(int(m["offset"]) + size(m["shape"]) for m in man if m["role"] != "count")
assert rows.shape[1] == end, (rows.shape, end)
bufs = [m for m in man if m["role"] == "buffer"]
assert bufs and all(int(m["offset"]) >= params for m in bufs), "buffers must follow the parameters"
assert [m["name"] for m in man[:2]] == ["conv1.weight", "bn1.weight"], man[:2]
assert any(m["name"] == "block2.downsample.1.running_var" for m in man), "the projection's norm"
var = [m for m in bufs if m["name"].endswith("running_var")][0]
v = rows[:, int(var["offset"]):int(var["offset"]) + size(var["shape"])]
assert (v > 0).all() and not np.allclose(v, 1.0), "running variances should have moved from 1"
PY

# buffers: mix (problem mixed_buffers, otherwise problem dsgd): the running statistics are mixed
# with W after every round, so they differ less between nodes, and their bytes are counted
/usr/bin/python3 - "$tmp/p1" <<'PY' && ok || bad "buffers: mix did not bring the nodes' running statistics together"
import csv, sys
import numpy as np
run = sys.argv[1]
man = [m for m in csv.DictReader(open(f"{run}/dsgd_models.tsv"), delimiter="\t") if m["role"] == "buffer"]
lo, hi = int(man[0]["offset"]), max(int(m["offset"]) + int(m["shape"]) for m in man)
spread = {p: np.load(f"{run}/{p}_models.npy")[:, lo:hi].std(axis=0).mean() for p in ("dsgd", "mixed_buffers")}
assert spread["mixed_buffers"] < 0.5 * spread["dsgd"], spread
last = lambda p: [r for r in csv.DictReader(open(f"{run}/{p}_results.csv"))][-1]
nb = hi - lo
extra = int(last("mixed_buffers")["bytes_sent"]) - int(last("dsgd")["bytes_sent"])
assert extra == 40 * 2 * 4 * nb, (extra, nb)  # 40 rounds, 2 neighbours on the cycle, float32
PY

# evaluation.nodes mean: the average model's loss and accuracy in every node's row (on 50 test
# samples: accuracies are multiples of 1/50), while consensus stays each node's own
awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) {if ($i == "top1_accuracy") a = i; if ($i == "validation_loss") v = i
                                            if ($i == "consensus_error") c = i}; next}
         {k = $1; if (k in acc && (acc[k] != $a || loss[k] != $v)) bad = 1; acc[k] = $a; loss[k] = $v
          if ((($a * 50) - int($a * 50 + 0.5)) ^ 2 > 1e-12) bad = 1; if (k > 0) cons[$c] = 1}
         END {n = 0; for (x in cons) n++; exit bad || n < 2}' "$tmp/p1/mean_model_results.csv" && ok \
  || bad "mean-model evaluation rows: $(head -4 "$tmp/p1/mean_model_results.csv")"

# evaluation.sample 3 (problem sampled: dsgd's first 20 rounds): three nodes drawn from the seed
# carry dsgd's own loss and accuracy, the others empty fields; compare's curve is over the three
/usr/bin/python3 - "$tmp/p1" <<'PY' && ok || bad "evaluation.sample: rows differ from the all-node evaluation"
import csv, sys
run = sys.argv[1]
rows = lambda p: {(r["round"], r["node"]): r for r in csv.DictReader(open(f"{run}/{p}_results.csv"))}
full, samp = rows("dsgd"), rows("sampled")
assert samp and all(k in full for k in samp), "sampled rounds should be dsgd's"
for rnd in {k[0] for k in samp}:
    got = [k[1] for k in samp if k[0] == rnd and samp[k]["top1_accuracy"] != ""]
    assert len(got) == 3, (rnd, got)
    for k in samp:
        if k[0] != rnd: continue
        a, b = samp[k], full[k]
        assert a["consensus_error"] == b["consensus_error"], (k, "consensus on every node")
        if a["top1_accuracy"] != "":
            assert (a["top1_accuracy"], a["validation_loss"]) == (b["top1_accuracy"], b["validation_loss"]), k
        else:
            assert a["validation_loss"] == "", k
nodes = {frozenset(k[1] for k in samp if k[0] == r and samp[k]["top1_accuracy"] != "") for r in {k[0] for k in samp}}
assert len(nodes) == 1, "the same nodes every evaluation"
PY
"$dtrun" compare "$tmp/p1" --csv > "$tmp/cmp.csv" 2>&1 || bad "compare of a sampled run failed: $(tail -3 "$tmp/cmp.csv")"
awk -F, '$2 == "sampled" && $7 + 0 > 0.1 {found = 1} END {exit !found}' "$tmp/cmp.csv" && ok || bad "compare shows no accuracy for a sampled evaluation: $(cat "$tmp/cmp.csv")"

# killed after a checkpoint at P = 3, resumed at P = 2: the reference's files
killed_resumed "$cfg" 0 resnet

# configs/fashion_resnet.yaml (real Fashion-MNIST), cut to 10 rounds and 500 test samples: the
# same files at P = 1 and P = 4
cut=(--set 'problem_configs.*.optimizer_config.outer_iterations=10' --set 'problem_configs.*.evaluate_frequency=5'
     --set 'problem_configs.*.evaluation.test_samples=500')
"$dtrun" configs/fashion_resnet.yaml "${cut[@]}" --output-dir "$tmp/f1" --quiet > "$tmp/f1.log" 2>&1 \
  || bad "fashion_resnet at P=1 failed: $(tail -3 "$tmp/f1.log")"
"$mpiexec" --oversubscribe -n 4 "$dtrun" configs/fashion_resnet.yaml "${cut[@]}" --output-dir "$tmp/f4" --quiet > "$tmp/f4.log" 2>&1 \
  || bad "fashion_resnet at P=4 failed: $(tail -3 "$tmp/f4.log")"
same_results "$tmp/f1" "$tmp/f4" "fashion_resnet P=1 vs P=4"

# configs/cifar10_resnet20.yaml (16 ResNet-20 nodes, Dirichlet 0.1, every algorithm with the
# recipe) on the generated CIFAR files, cut to 2 rounds and 50 test samples: it runs, with the
# same files at P = 1 and P = 2 (the generated training set is small: at least 1 sample a node)
sed "s|^  dataset: cifar10|  dataset: cifar10\n  data_dir: $tmp/c10|" configs/cifar10_resnet20.yaml > "$tmp/c20.yaml"
cut20=(--set 'problem_configs.*.optimizer_config.outer_iterations=2' --set 'problem_configs.*.evaluate_frequency=2'
       --set 'problem_configs.*.evaluation.test_samples=50' --set experiment.split.min_per_node=1)
"$dtrun" "$tmp/c20.yaml" "${cut20[@]}" --output-dir "$tmp/r1" --quiet > "$tmp/r1.log" 2>&1 \
  || bad "cifar10_resnet20 at P=1 failed: $(tail -3 "$tmp/r1.log")"
"$mpiexec" --oversubscribe -n 2 "$dtrun" "$tmp/c20.yaml" "${cut20[@]}" --output-dir "$tmp/r2" --quiet > "$tmp/r2.log" 2>&1 \
  || bad "cifar10_resnet20 at P=2 failed: $(tail -3 "$tmp/r2.log")"
same_results "$tmp/r1" "$tmp/r2" "cifar10_resnet20 P=1 vs P=2"
"$dtrun" check "$tmp/c20.yaml" --set experiment.split.min_per_node=1 2>&1 | grep -q "^# model: 272474 parameters" && ok || bad "cifar10_resnet20 should be ResNet-20 (272,474 parameters)"

acc=$(final_top1 "$tmp/p1/dsgd_results.csv")
echo "final mean top-1 $acc"; awk -v a="$acc" 'BEGIN {exit !(a > 0.4)}' && ok || bad "did not learn: final mean top-1 $acc"
echo "resnet: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
