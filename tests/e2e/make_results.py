"""A sweep folder whose results.sqlite is written here, for the figure tests (tests/e2e/figures.sh):
3 graphs (a labelled sweep axis) x 3 seeds, 9 problems of 9 algorithms (more than the palette's 8
colours), 4 nodes, rounds 0..200 every 10. Problem `central` has a consensus error of exactly 0
(a log axis cannot show it); problem `late` records nothing before round 50. With --sim-time,
every evaluation has a simulated time (as under experiment.network), none otherwise.
usage: make_results.py FOLDER [--sim-time]"""
import math
import os
import sqlite3
import sys

# The tables compare reads (experiments/db.c holds the authoritative schema).
SCHEMA = """
CREATE TABLE runs (run INTEGER PRIMARY KEY, folder TEXT NOT NULL UNIQUE, point INTEGER, swept TEXT NOT NULL DEFAULT '{}',
  seed INTEGER, experiment TEXT, config TEXT, config_hash TEXT, version TEXT, host TEXT, ranks INTEGER,
  nodes INTEGER, status TEXT, started TEXT, updated TEXT, wall_seconds REAL);
CREATE TABLE sweep_values (run INTEGER NOT NULL, key TEXT NOT NULL, value TEXT, PRIMARY KEY (run, key));
CREATE TABLE problems (run INTEGER NOT NULL, problem INTEGER NOT NULL, problem_name TEXT, alg_name TEXT,
  status TEXT, rounds INTEGER, rounds_completed INTEGER, bytes_sent REAL, wall_seconds REAL,
  time_compute REAL, time_comm REAL, time_eval REAL, PRIMARY KEY (run, problem));
CREATE TABLE evaluations (run INTEGER NOT NULL, problem INTEGER NOT NULL, round INTEGER NOT NULL, node INTEGER NOT NULL,
  forward_pass_count REAL, validation_loss REAL, top1_accuracy REAL, consensus_error REAL,
  consensus_error_raw REAL, current_epoch REAL, train_loss REAL, bytes_sent REAL, time_compute REAL,
  time_comm REAL, time_eval REAL, sim_time REAL, messages_sent REAL, messages_lost REAL, messages_received REAL,
  PRIMARY KEY (run, problem, round, node));
"""
GRAPHS = (("complete", "complete"), ("cycle", "cycle"), ("random-0.7", "random"))
PROBLEMS = (("dsgd", "dsgd"), ("dsgt", "dsgt"), ("dinno", "cadmm"), ("gossip", "gossip"), ("choco", "choco"),
            ("easgd", "easgd"), ("downpour", "downpour"), ("central", "centralized"), ("late", "sgp"))
NODES, ROUNDS, EVERY = 4, 200, 10


def config(name, gtype, seed):
    probs = "".join(f"  {p}:\n    optimizer_config:\n      alg_name: {a}\n" for p, a in PROBLEMS)
    return (f"experiment:\n  name: {name}\n  seed: {seed}\n  graph:\n    num_nodes: {NODES}\n    type: {gtype}\n"
            f"problem_configs:\n{probs}")


def main(folder, sim=False):
    os.makedirs(folder)
    db = sqlite3.connect(os.path.join(folder, "results.sqlite"))
    db.executescript(SCHEMA)
    run = 0
    for gi, (label, gtype) in enumerate(GRAPHS):
        for seed in range(3):
            run += 1
            db.execute("INSERT INTO runs (run, folder, point, seed, experiment, config, status, nodes) VALUES (?,?,?,?,?,?,?,?)",
                       (run, f"{run - 1:03d}", run - 1, seed, "figs", config("figs", gtype, seed), "completed", NODES))
            db.execute("INSERT INTO sweep_values VALUES (?, 'graph', ?)", (run, label))
            db.execute("INSERT INTO sweep_values VALUES (?, 'experiment.seed', ?)", (run, str(seed)))
            for p, (pname, alg) in enumerate(PROBLEMS):
                db.execute("INSERT INTO problems VALUES (?,?,?,?,'completed',?,?,?,?,0,0,0)",
                           (run, p, pname, alg, ROUNDS, ROUNDS, 1e6 * (p + 1), 1.0 + p))
                rate = (p + 1) * (gi + 1) / 300.0
                for r in range(0 if pname != "late" else 50, ROUNDS + 1, EVERY):
                    for node in range(NODES):
                        wobble = 0.01 * math.sin(7 * node + 3 * seed + p)
                        acc = 1 - 0.9 * math.exp(-rate * r) + wobble
                        cons = 0.0 if pname == "central" else 0.1 * math.exp(-rate * r) * (1 + 0.1 * node)
                        db.execute("INSERT INTO evaluations (run, problem, round, node, forward_pass_count, validation_loss, "
                                   "top1_accuracy, consensus_error, bytes_sent, time_compute, time_comm, sim_time) "
                                   "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                                   (run, p, r, node, 32.0 * r, 2.3 * math.exp(-rate * r), min(acc, 1.0), cons,
                                    1e3 * r, 0.001 * r, 0.0005 * r, 0.02 * r * (1 + 0.1 * p) if sim else None))
    db.commit()


if __name__ == "__main__":
    main(sys.argv[1], sim=sys.argv[2:] == ["--sim-time"])
