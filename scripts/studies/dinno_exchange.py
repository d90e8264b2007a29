#!/usr/bin/env python3
"""The DiNNO exchange experiment (issue 53; optimizers/cadmm/README.md, "Against the reference
code"): dtrun and the reference code, each with its own random draws and with the other's.

  dinno_exchange.py dtrun-own   OUT SEED...   dtrun with its own draws; writes its draws too:
                                              OUT/draws/dtrun_s<SEED>_{init,batches}.npz
  dinno_exchange.py dtrun-other OUT SEED...   dtrun from the reference's draws
                                              (OUT/draws/ref_s<SEED>_{init,batches}.npz, which
                                              dinno_reference.py --dump-init/--dump-batches wrote)
  dinno_exchange.py dtrun-swap  OUT SEED...   dtrun with one of the reference's draws and its own other:
                                              the reference's initial weights with dtrun's minibatches
                                              (draws "ref-init"), and dtrun's weights with the
                                              reference's minibatches ("ref-batches")
  dinno_exchange.py dtrun-layer OUT SEED...   dtrun with its own minibatches and the initial weights of
                                              one side's convolution and the other's linear layers
                                              (draws "convref": the reference's convolution;
                                              "convdt": dtrun's)
  dinno_exchange.py ref-jobs    OUT SEED...   the reference's command lines with dtrun's draws
                                              (float32 and float64), one per line

Every run is DiNNO on the paper's 10-node cycle (configs/dinno_cycle.yaml, one seed), evaluated every 100 rounds to round 2000; one CSV row per evaluation is appended to
OUT/dtrun.csv in dinno_reference.py's columns. DTRUN (default build/dtrun) and REF (the
reference checkout, for ref-jobs) come from the environment.
"""
import csv
import os
import struct
import subprocess
import sys

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DTRUN = os.environ.get("DTRUN", os.path.join(ROOT, "build", "dtrun"))
CONFIG = os.path.join(ROOT, "configs", "dinno_cycle.yaml")


def records(path):
    """A --dump-trace node stream: (tag, round, values) per record."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"DTTRACE1", path
    p = 8
    while p < len(data):
        tag = data[p:p + 4].decode()
        rnd, typ, n = struct.unpack_from("<iii", data, p + 4)
        v = np.frombuffer(data, dtype="<i4" if typ == 0 else "<f4", count=n, offset=p + 16)
        yield tag, rnd, v
        p += 16 + 4 * n


def dtrun(out, seed, name, extra):
    run = os.path.join(out, "runs", name)
    cmd = [DTRUN, "run", CONFIG, "--quiet", "--force", "--output-dir", run, "--set", "experiment.seed=%d" % seed] + extra
    subprocess.run(cmd, check=True, cwd=ROOT)  # a seed-layout config reads data_dir from the working directory
    return run


def rows(out, run, seed, draws, seconds):
    means = {}
    with open(os.path.join(run, "dinno_results.csv")) as f:
        for r in csv.DictReader(f):
            means.setdefault(int(r["round"]), []).append(float(r["top1_accuracy"]))
    with open(os.path.join(out, "dtrun.csv"), "a") as f:
        for k in sorted(means):
            a = means[k]
            f.write("dtrun,dinno,cycle,float32,%s,%d,%d,%.4f,%.4f,%.4f,%.0f\n" % (draws, seed, k, np.mean(a), min(a), max(a), seconds))


def own(out, seed):
    draws = os.path.join(out, "draws")
    os.makedirs(draws, exist_ok=True)
    tr = os.path.join(out, "trace_s%d" % seed)
    run = dtrun(out, seed, "own_s%d" % seed, ["--dump-trace", tr, "--trace-tags", "BIDX"])
    batches = {}
    for i in range(10):
        steps = [v for tag, _, v in records(os.path.join(tr, "dinno", "node_%d.trace" % i)) if tag == "BIDX"]
        width = max(len(s) for s in steps)
        batches["node_%d" % i] = np.array([list(s) + [-1] * (width - len(s)) for s in steps], dtype=np.int32)
    np.savez_compressed(os.path.join(draws, "dtrun_s%d_batches.npz" % seed), **batches)
    tr0 = tr + "_init"  # θ0: the parameters before round 0, from a one-round run
    subprocess.run([DTRUN, "run", CONFIG, "--quiet", "--set", "experiment.seed=%d" % seed, "--set",
                    "experiment.writeout=false", "--set", "problem_configs.*.optimizer_config.outer_iterations=1",
                    "--dump-trace", tr0, "--trace-tags", "THET"], check=True, cwd=ROOT)
    theta = next(v for tag, rnd, v in records(os.path.join(tr0, "dinno", "node_0.trace")) if tag == "THET" and rnd == -1)
    tensors = {}
    with open(os.path.join(tr0, "manifest.tsv")) as f:
        next(f)
        for line in f:
            name, role, off, shape = line.rstrip("\n").split("\t")[:4]
            if role == "param":
                dims = [int(d) for d in shape.split("x")]
                tensors[name] = theta[int(off):int(off) + int(np.prod(dims))].reshape(dims)
    np.savez(os.path.join(draws, "dtrun_s%d_init.npz" % seed), **tensors)
    rows(out, run, seed, "own", 0)


def other(out, seed):
    d = os.path.join(out, "draws")
    run = dtrun(out, seed, "other_s%d" % seed,
                ["--set", "experiment.model.init_file=%s" % os.path.join(d, "ref_s%d_init.npz" % seed),
                 "--set", "experiment.batch_order=%s" % os.path.join(d, "ref_s%d_batches.npz" % seed)])
    rows(out, run, seed, "reference", 0)


def swap(out, seed):
    d = os.path.join(out, "draws")
    for label, init, batches in (("ref-init", "ref_s%d_init.npz", "dtrun_s%d_batches.npz"),
                                 ("ref-batches", "dtrun_s%d_init.npz", "ref_s%d_batches.npz")):
        run = dtrun(out, seed, "%s_s%d" % (label, seed),
                    ["--set", "experiment.model.init_file=%s" % os.path.join(d, init % seed),
                     "--set", "experiment.batch_order=%s" % os.path.join(d, batches % seed)])
        rows(out, run, seed, label, 0)


def layer(out, seed):
    d = os.path.join(out, "draws")
    mine, ref = np.load(os.path.join(d, "dtrun_s%d_init.npz" % seed)), np.load(os.path.join(d, "ref_s%d_init.npz" % seed))
    for label, conv, rest in (("convref", ref, mine), ("convdt", mine, ref)):
        path = os.path.join(d, "%s_s%d.npz" % (label, seed))
        np.savez(path, **{k: (conv[k] if k.startswith("0.") else rest[k]) for k in mine.files})
        run = dtrun(out, seed, "%s_s%d" % (label, seed), ["--set", "experiment.model.init_file=%s" % path, "--set",
                                                          "experiment.batch_order=%s" % os.path.join(d, "dtrun_s%d_batches.npz" % seed)])
        rows(out, run, seed, label, 0)


def main():
    what, out, seeds = sys.argv[1], os.path.abspath(sys.argv[2]), [int(s) for s in sys.argv[3:]]
    os.makedirs(out, exist_ok=True)
    for s in seeds:
        if what == "dtrun-own":
            own(out, s)
        elif what == "dtrun-other":
            other(out, s)
        elif what == "dtrun-swap":
            swap(out, s)
        elif what == "dtrun-layer":
            layer(out, s)
        elif what == "ref-jobs":
            for dt in ("float32", "float64"):
                print("dinno_cycle_%s_dtrun_s%d --seed %d --alg dinno --graph cycle --dtype %s --draws dtrun --marks %s "
                      "--init %s/draws/dtrun_s%d_init.npz --batches %s/draws/dtrun_s%d_batches.npz"
                      % ("f32" if dt == "float32" else "f64", s, s, dt, ",".join(str(k) for k in range(0, 1001, 100)), out, s, out, s))
        else:
            sys.exit(__doc__)


if __name__ == "__main__":
    main()
