#!/usr/bin/env bash
# Initial weights (experiment.model.init_file) and minibatch orders (experiment.batch_order) from
# files, and --trace-tags: a run given its own draws back as files (θ0 from a .npz of float64
# tensors, the minibatches from a compressed .npz) gives the same files as the run that drew them,
# at P = 1 and 3, on an archived re-run and after a kill and a resume; a saved model's row starts
# every node; every malformed or misfitting file is refused before anything runs (exit 2, the
# key's position, the file and what is wrong), running out of minibatches ends the run (exit 1),
# and a changed file stops a resume. Skipped (77) without data/mnist.
# usage: inputs.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_begin "$@"
py=/usr/bin/python3

# (1) the run that draws, traced with only its minibatches (--trace-tags), and θ0 from a one-round
# trace of only the parameters
cp tests/e2e/inputs.yaml "$tmp/base.yaml"
"$dtrun" "$tmp/base.yaml" --output-dir "$tmp/base" --quiet --dump-trace "$tmp/tr" --trace-tags BIDX > "$tmp/base.log" 2>&1 \
  || bad "the base run failed: $(tail -3 "$tmp/base.log")"
"$dtrun" "$tmp/base.yaml" --set experiment.writeout=false --set 'problem_configs.*.optimizer_config.outer_iterations=1' --quiet \
  --dump-trace "$tmp/tr0" --trace-tags THET > "$tmp/base0.log" 2>&1 || bad "the one-round run failed: $(tail -3 "$tmp/base0.log")"
$py - "$tmp" <<'PY' && ok || bad "the trace or the files made from it"
import struct, sys
import numpy as np
t = sys.argv[1]
def records(path):
    d = open(path, "rb").read(); p = 8
    while p < len(d):
        tag = d[p:p + 4].decode(); rnd, typ, n = struct.unpack_from("<iii", d, p + 4)
        yield tag, rnd, np.frombuffer(d, "<i4" if typ == 0 else "<f4", n, p + 16); p += 16 + 4 * n
tags = {tag for i in range(5) for tag, _, _ in records(f"{t}/tr/dinno/node_{i}.trace")}
assert tags == {"BIDX"}, tags  # --trace-tags kept only these
assert {tag for tag, _, _ in records(f"{t}/tr0/dinno/node_0.trace")} == {"THET"}
theta = next(v for tag, r, v in records(f"{t}/tr0/dinno/node_0.trace") if tag == "THET" and r == -1)
init = {}
for line in list(open(f"{t}/tr0/manifest.tsv"))[1:]:
    name, role, off, shape = line.rstrip("\n").split("\t")[:4]
    dims = [int(x) for x in shape.split("x")]
    init[name] = theta[int(off):int(off) + int(np.prod(dims))].reshape(dims).astype(np.float64)
np.savez(f"{t}/init.npz", **init)
order = {}
for i in range(5):  # DiNNO's 160 steps: more than DSGD's 80 and DSGT's 81, which start from the same step 0
    steps = [v for tag, _, v in records(f"{t}/tr/dinno/node_{i}.trace") if tag == "BIDX"]
    assert len(steps) == 160, len(steps)
    w = max(len(s) for s in steps)
    order[f"node_{i}"] = np.array([list(s) + [-1] * (w - len(s)) for s in steps], np.int64)
np.savez_compressed(f"{t}/order.npz", **order)
PY

# (2) its draws given back: the same files, at P = 1 and 3 and on a re-run of the archived config
cat > "$tmp/files.yaml" <<EOF2
include: base.yaml
experiment:
  model: {init_file: init.npz}
  batch_order: order.npz
EOF2
ranks_and_rerun "$tmp/files.yaml" 3 "draws from files"
for f in dinno dsgd dsgt; do # config.yaml names the files: the rest is the same
  cmp -s <(strip_times "$tmp/base/${f}_results.csv") <(strip_times "$tmp/p1/${f}_results.csv") && cmp -s "$tmp/base/${f}_models.npy" \
    "$tmp/p1/${f}_models.npy" && ok || bad "$f: the draws given back as files changed the results"
done
grep -q "model_init: " "$tmp/p1/summary.yaml" && grep -q "batch_order: " "$tmp/p1/summary.yaml" && ok \
  || bad "summary.yaml lacks the files' digests"
killed_resumed "$tmp/files.yaml" 1 "draws from files"

# (3) a saved model's row: every node starts from base's node 3 after DiNNO
"$dtrun" "$tmp/base.yaml" --output-dir "$tmp/row" --quiet --problem dinno --set experiment.model.init_file="$tmp/base/dinno_models.npy" \
  --set experiment.model.init_row=3 --set 'problem_configs.*.optimizer_config.outer_iterations=1' > "$tmp/row.log" 2>&1 || bad "init from a models file failed: $(tail -3 "$tmp/row.log")"
$py - "$tmp" <<'PY' && ok || bad "a models file's row is not where every node starts"
import csv, sys
t = sys.argv[1]
base = [r for r in csv.DictReader(open(f"{t}/base/dinno_results.csv")) if r["round"] == "80" and r["node"] == "3"][0]
start = [r for r in csv.DictReader(open(f"{t}/row/dinno_results.csv")) if r["round"] == "0"]
assert len(start) == 5
for r in start:
    assert (r["top1_accuracy"], r["validation_loss"]) == (base["top1_accuracy"], base["validation_loss"]), (r, base)
PY

# (4) bad files: exit 2 before anything runs, at the key's position, saying what is wrong
$py - "$tmp" <<'PY' || bad "making the bad files"
import sys, zlib
import numpy as np
t = sys.argv[1]
init, order = dict(np.load(f"{t}/init.npz")), dict(np.load(f"{t}/order.npz"))
def put(name, d, **k): np.savez(f"{t}/{name}.npz", **{**d, **k})
np.savez(f"{t}/prefix.npz", **{"seq." + k: v for k, v in init.items()})
put("shape", init, **{"4.weight": init["4.weight"][:, 1:]})
put("extra", init, **{"9.bias": np.zeros(3)})
put("missing", {k: v for k, v in init.items() if k != "6.bias"})
put("nan", init, **{"0.bias": np.array([0.0, np.nan, 0.0])})
put("ints", init, **{"0.bias": np.array([0, 1, 2])})
b = open(f"{t}/shape.npz", "rb").read()
open(f"{t}/truncated.npz", "wb").write(b[:len(b) // 2])
i = b.index(b"0.weight.npy") + 200  # a byte inside a stored member: its CRC no longer matches
open(f"{t}/crc.npz", "wb").write(b[:i] + bytes([b[i] ^ 1]) + b[i + 1:])
o1 = order["node_1"].copy(); o1[3, 5] = order["node_0"][0, 0]; put("owner", order, node_1=o1)
o3 = order["node_3"].copy(); o3[2, 10] = -1; put("pad", order, node_3=o3)
o2 = order["node_2"].copy(); o2[4, :] = -1; put("empty", order, node_2=o2)
o4 = order["node_4"].copy(); o4[0, 0] = 60000; put("range", order, node_4=o4)
put("nonode", {k: v for k, v in order.items() if k != "node_4"})
put("stray", order, foo=np.zeros((2, 2), np.int32))
put("floats", order, node_0=order["node_0"].astype(np.float32))
put("short", {k: v[:5] for k, v in order.items()})
PY
refused() { # refused KEY=VALUE EXPECTED [more dtrun arguments]
  local set=$1 want=$2
  shift 2
  "$dtrun" "$tmp/base.yaml" --set "$set" --output-dir "$tmp/refused" --quiet "$@" > "$tmp/refused.log" 2>&1
  local rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$want" "$tmp/refused.log" && grep -q "base.yaml:[0-9]*:[0-9]*: " "$tmp/refused.log" \
     && [ ! -e "$tmp/refused" ]; then ok
  else bad "$set: exit $rc, expected 2 with '$want' at a position and no run folder: $(head -3 "$tmp/refused.log")"; fi
  rm -rf "$tmp/refused"
}
I=experiment.model.init_file O=experiment.batch_order
# KEY=FILE | what the message says | more arguments ($tmp written as TMP)
while IFS='|' read -r set want more; do
  # shellcheck disable=SC2086 # more: options, split on spaces
  refused "${set//TMP/$tmp}" "${want//TMP/$tmp}" $more
done <<'CASES'
experiment.model.init_file=TMP/prefix.npz|has no tensor '0.weight' but has 'seq.0.weight': drop the prefix 'seq.'|
experiment.model.init_file=TMP/shape.npz|tensor '4.weight' has shape 64x431; the model's is 64x432|
experiment.model.init_file=TMP/extra.npz|tensor '9.bias' is not one of the model's|
experiment.model.init_file=TMP/missing.npz|has no tensor '6.bias' (parameter 10)|
experiment.model.init_file=TMP/nan.npz|tensor '0.bias', value 1 is nan|
experiment.model.init_file=TMP/ints.npz|tensor '0.bias' holds integers|
experiment.model.init_file=TMP/truncated.npz|truncated|
experiment.model.init_file=TMP/crc.npz|CRC-32 does not match|
experiment.model.init_file=TMP/nowhere.npz|cannot read TMP/nowhere.npz|
experiment.model.init_file=TMP/base/dinno_models.npy|experiment.model.init_row: 5, but TMP/base/dinno_models.npy has 5 rows|--set experiment.model.init_row=5
experiment.batch_order=TMP/owner.npz|node_1, step 3: sample|
experiment.batch_order=TMP/pad.npz|node_3, step 2, column 11:|
experiment.batch_order=TMP/empty.npz|node_2, step 4: no sample (the row is all -1)|
experiment.batch_order=TMP/range.npz|node_4, step 0: sample 60000 is not a training sample (0 to 59999)|
experiment.batch_order=TMP/nonode.npz|has no array node_4|
experiment.batch_order=TMP/stray.npz|an array named 'foo'; expected node_0 to node_4|
experiment.batch_order=TMP/floats.npz|node_0 holds float values; expected integers|
CASES
refused $O="$tmp/order.npz" "holds minibatches of 64 samples; problem dsgd's train_batch_size is 32" \
  --set problem_configs.dsgd.train_batch_size=32
refused $O="$tmp/order.npz" "an array named 'node_4'; expected node_0 to node_3" --sweep experiment.graph.num_nodes=5,4
# a full-batch problem has nothing to order
"$dtrun" check tests/twin/logreg.yaml --set $O="$tmp/order.npz" --set "problem_configs.*.full_batch=true" > "$tmp/fb.log" 2>&1
[ $? -eq 2 ] && grep -q "computes full-batch gradients" "$tmp/fb.log" && ok || bad "a full-batch problem took an order: $(head -2 "$tmp/fb.log")"

# (5) an order that runs out ends the run with exit 1 and the reason; what was finished stays
"$dtrun" "$tmp/base.yaml" --set $O="$tmp/short.npz" --output-dir "$tmp/short" --quiet > "$tmp/short.log" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "experiment.batch_order holds 5 minibatches for node 0; the run asks for more" "$tmp/short.log" \
  && [ -s "$tmp/short/config.yaml" ] && ok || bad "running out: exit $rc: $(head -3 "$tmp/short.log")"

# (6) resume refuses a changed file
cp "$tmp/init.npz" "$tmp/init2.npz"
kill_later 1 "$tmp/ch" "$tmp/ch.log" "$dtrun" "$tmp/base.yaml" --set $I="$tmp/init2.npz" --set experiment.checkpoint_every=5 \
  --output-dir "$tmp/ch" --quiet
$py -c "import numpy as np, sys; np.savez(sys.argv[1], **{k: v.astype(np.float32) for k, v in np.load(sys.argv[2]).items()})" \
  "$tmp/init2.npz" "$tmp/init.npz" # the same weights, other bytes
"$dtrun" resume "$tmp/ch" --quiet > "$tmp/ch2.log" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "model_init (in $tmp/init2.npz) has SHA-256" "$tmp/ch2.log" && ok \
  || bad "resume with a changed init file: exit $rc: $(head -3 "$tmp/ch2.log")"

# (7) --trace-tags: well-formed tags, and only with --dump-trace
"$dtrun" run "$tmp/base.yaml" --dump-trace "$tmp/t2" --trace-tags BIDX,THE > "$tmp/tt.log" 2>&1
[ $? -eq 2 ] && grep -q "expected record tags of four capitals or digits" "$tmp/tt.log" && ok || bad "--trace-tags BIDX,THE: $(cat "$tmp/tt.log")"
"$dtrun" run "$tmp/base.yaml" --trace-tags BIDX > "$tmp/tt.log" 2>&1
[ $? -eq 2 ] && grep -q "give --dump-trace DIR too" "$tmp/tt.log" && ok || bad "--trace-tags alone: $(cat "$tmp/tt.log")"

echo "inputs: $pass passed, $fail failed"
[ $fail -eq 0 ]
