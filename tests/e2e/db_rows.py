#!/usr/bin/env python3
"""What results.sqlite holds, in a form two runs can be compared by (cmp), or checked against
the run's CSV files.

  db_rows.py dump DIR [FOLDER]   the rows of DIR/results.sqlite without timings and row ids
                                 (FOLDER: only that run of a sweep's database)
  db_rows.py dump9 DIR [FOLDER]  the same with every real at the CSV's 9 significant digits (a
                                 database rebuilt from the CSVs against one written as it ran)
  db_rows.py csv DIR [FOLDER]    exit 1 unless every results CSV in the run folder equals the
                                 database's evaluations, value for value at the CSV's 9 digits
"""
import csv
import glob
import os
import sqlite3
import sys

# timings, and where the run ran (the same results on any rank count and host)
TIMES = {"time_compute", "time_comm", "time_eval", "wall_seconds", "started", "updated", "ranks", "host"}


def connect(d):
    path = os.path.join(d, "results.sqlite")
    if not os.path.exists(path):
        sys.exit(f"{path}: missing")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def run_ids(db, folder):
    if folder is None:
        return [r[0] for r in db.execute("SELECT run FROM runs ORDER BY folder")]
    return [r[0] for r in db.execute("SELECT run FROM runs WHERE folder = ?", (folder,))]


def rows(db, table, run, order):
    cur = db.execute(f"SELECT * FROM {table} WHERE run = ? ORDER BY {order}", (run,))
    names = [c[0] for c in cur.description]
    keep = [i for i, n in enumerate(names) if n not in TIMES and n != "run"]
    return [n for i, n in enumerate(names) if i in keep], [[r[i] for i in keep] for r in cur]


def dump(d, folder, digits9=False):
    db = connect(d)
    if digits9:
        db.row_factory = lambda cur, row: tuple(float("%.9g" % v) if isinstance(v, float) else v for v in row)
    for run in run_ids(db, folder):
        cols, rs = rows(db, "runs", run, "run")
        for r in rs:
            print("runs", dict(zip(cols, r)))
        for table, order in (("sweep_values", "key"), ("problems", "problem"), ("evaluations", "problem, round, node")):
            cols, rs = rows(db, table, run, order)
            print(table, cols)
            for r in rs:
                print(" ", r)


def fmt(v, col):
    if v is None:
        return "nan"
    if col in ("forward_pass_count", "bytes_sent"):
        return "%.0f" % v
    return "%.9g" % v


def check_csv(d, folder):
    db = connect(d)
    (run,) = run_ids(db, folder)
    names = dict(db.execute("SELECT problem_name, problem FROM problems WHERE run = ?", (run,)).fetchall())
    files = sorted(glob.glob(os.path.join(d if folder in (None, ".") else os.path.join(d, folder), "*_results.csv")))
    files = [f for f in files if os.path.basename(f) != "solo_results.csv" or "solo" in names]
    if not files:
        sys.exit(f"{d}: no results CSV")
    for f in files:
        name = os.path.basename(f)[: -len("_results.csv")]
        if name not in names:
            sys.exit(f"{f}: problem {name} is not in the database")
        with open(f) as fh:
            r = csv.reader(fh)
            header = next(r)
            want = [row for row in r]
        cur = db.execute(f"SELECT {', '.join(header)} FROM evaluations WHERE run = ? AND problem = ? ORDER BY round, node",
                         (run, names[name]))
        got = [[str(v) if c in ("round", "node") else fmt(v, c) for v, c in zip(row, header)] for row in cur]
        if got != want:
            bad = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            sys.exit(f"{f}: row {bad + 2} differs from the database: csv {want[bad] if bad < len(want) else None}, "
                     f"database {got[bad] if bad < len(got) else None}")
    print(f"{d}: {len(files)} CSV files equal the database")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("dump", "dump9", "csv"):
        sys.exit(__doc__)
    folder = sys.argv[3] if len(sys.argv) > 3 else None
    if sys.argv[1] == "csv":
        check_csv(sys.argv[2], folder)
    else:
        dump(sys.argv[2], folder, sys.argv[1] == "dump9")
