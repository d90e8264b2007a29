#!/usr/bin/env python3
"""The tables of the DiNNO comparison (optimizers/cadmm/README.md, docs/studies.md) from the
stored runs: tests/fidelity/data/dinno_*.csv, one row per (source, algorithm, graph, dtype,
draws, seed, round) in dinno_reference.py's columns.

  dinno_table.py exchange [ROUND...]   dtrun and the reference code, each with its own draws and
                                       with the other's (and dtrun with one draw of each): mean ±
                                       sd over seeds, and Welch's p between every pair of cells
                                       that differ in one thing (the code, or the draws)
  dinno_table.py graphs [ROUND...]     every algorithm and graph, dtrun against the reference
                                       code in float32, each with its own draws

Welch's two-sample t-test (scipy.stats.ttest_ind, equal_var=False), two-sided.
"""
import csv
import glob
import os
import sys

import numpy as np
from scipy import stats

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fidelity", "data")


def load():
    rows = []
    for f in sorted(glob.glob(os.path.join(DATA, "dinno_*.csv"))):
        with open(f) as fh:
            for r in csv.DictReader(fh):
                rows.append(r)
    return rows


def cell(rows, round_, **want):
    """{seed: mean_top1} of the rows matching want at round_ (one value per seed)."""
    out = {}
    for r in rows:
        if int(r["round"]) == round_ and all(r[k] == v for k, v in want.items()):
            out[int(r["seed"])] = float(r["mean_top1"])
    return out


def text(v):
    return "%.3f ± %.3f (%d)" % (np.mean(v), np.std(v, ddof=1), len(v)) if len(v) > 1 else "-"


def welch(a, b):
    return "%.2g" % stats.ttest_ind(a, b, equal_var=False).pvalue if len(a) > 1 and len(b) > 1 else "-"


def exchange(rows, rounds):
    cells = [("dtrun", "float32", "own"), ("dtrun", "float32", "reference"), ("reference", "float32", "own"),
             ("reference", "float32", "dtrun"), ("reference", "float64", "own"), ("reference", "float64", "dtrun"),
             ("dtrun", "float32", "ref-init"), ("dtrun", "float32", "ref-batches")]
    names = {"own": "its own", "reference": "the reference's", "dtrun": "dtrun's",
             "ref-init": "the reference's weights, dtrun's minibatches", "ref-batches": "dtrun's weights, the reference's minibatches"}
    for k in rounds:
        print("\nround %d: mean top-1 over the nodes, mean ± sd over seeds (seeds)\n" % k)
        print("| code | arithmetic | draws | top-1 |")
        print("|---|---|---|---|")
        vals = {}
        for src, dt, dr in cells:
            v = cell(rows, k, source=src, alg="dinno", graph="cycle", dtype=dt, draws=dr)
            vals[(src, dt, dr)] = v
            if v:
                print("| %s | %s | %s | %s |" % (src, dt, names[dr], text(list(v.values()))))
        print("\nWelch p between two cells; where both ran on the same draws (the code compared), a paired t-test over")
        print("the seeds too\n")
        pairs = [(("dtrun", "float32", "own"), ("reference", "float32", "dtrun"), True),
                 (("dtrun", "float32", "reference"), ("reference", "float32", "own"), True),
                 (("reference", "float32", "dtrun"), ("reference", "float64", "dtrun"), True),
                 (("dtrun", "float32", "own"), ("dtrun", "float32", "reference"), False),
                 (("reference", "float32", "dtrun"), ("reference", "float32", "own"), False),
                 (("dtrun", "float32", "own"), ("reference", "float32", "own"), False),
                 (("dtrun", "float32", "own"), ("dtrun", "float32", "ref-init"), False),
                 (("dtrun", "float32", "own"), ("dtrun", "float32", "ref-batches"), False),
                 (("dtrun", "float32", "ref-init"), ("dtrun", "float32", "reference"), False),
                 (("dtrun", "float32", "ref-batches"), ("dtrun", "float32", "reference"), False)]
        for a, b, same_draws in pairs:
            va, vb = vals[a], vals[b]
            if len(va) < 2 or len(vb) < 2:
                continue
            extra = ""
            paired = sorted(set(va) & set(vb))
            if same_draws and len(paired) > 1:
                d = [va[s] - vb[s] for s in paired]
                extra = "; paired over %d seeds: mean difference %+.3f, p = %.2g" % (len(d), np.mean(d), stats.ttest_1samp(d, 0).pvalue)
            print("- %s %s with %s draws vs %s %s with %s draws: Welch p = %s%s"
                  % (a[0], a[1], names[a[2]], b[0], b[1], names[b[2]], welch(list(va.values()), list(vb.values())), extra))


def graphs(rows, rounds):
    combos = sorted({(r["alg"], r["graph"]) for r in rows})
    print("| algorithm | graph | round | dtrun | reference (float32) | Welch p |")
    print("|---|---|---|---|---|---|")
    for alg, g in combos:
        for k in rounds:
            a = list(cell(rows, k, source="dtrun", alg=alg, graph=g, dtype="float32", draws="own").values())
            b = list(cell(rows, k, source="reference", alg=alg, graph=g, dtype="float32", draws="own").values())
            if a or b:
                print("| %s | %s | %d | %s | %s | %s |" % (alg, g, k, text(a), text(b), welch(a, b)))


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else "exchange"
    rounds = [int(k) for k in sys.argv[2:]] or [500, 1000]
    rows = load()
    {"exchange": exchange, "graphs": graphs}[what](rows, rounds)


if __name__ == "__main__":
    main()
