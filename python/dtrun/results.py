"""Run and sweep folders read from their results.sqlite into pandas DataFrames.

load_runs(...) gives the tidy table (one row per evaluation and node, every swept value a column);
curves(...) aggregates it the way `dtrun compare` does: the mean over nodes of each run, then
across the seeds of a group (runs that differ by the seed alone) the mean with its 95% interval
(Student's t), or for a group of one run the range over its nodes.
"""
import math
import os
import sqlite3

import pandas as pd

# The metrics an evaluation records, and the x axes compare draws over (see `dtrun compare`).
METRICS = ("top1_accuracy", "validation_loss", "consensus_error", "consensus_error_raw", "train_loss",
           "current_epoch", "forward_pass_count")
X_AXES = ("round", "samples", "bytes", "seconds", "sim_time")
# Metrics that evaluation.sample K leaves to K nodes (the others are NULL).
_EVALUATED = ("validation_loss", "top1_accuracy")
_T975 = (0, 0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
         2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052,
         2.048, 2.045)


class ResultsError(Exception):
    """A folder that is not a run or sweep, or a request the results cannot answer."""


def _t975(n):
    return _T975[n] if n < len(_T975) else 1.96


def _open(folder):
    path = os.path.join(folder, "results.sqlite")
    if not os.path.isdir(folder):
        raise ResultsError(f"{folder}: no such folder")
    if not os.path.isfile(path):
        raise ResultsError(f"{folder}: not a run or sweep folder (it holds no results.sqlite)")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _read(folder, queries):
    """The results of each SQL query of queries on folder's results.sqlite (DataFrames, or lists
    for PRAGMAs), or a ResultsError naming the file and what is wrong with it (damaged, a table
    missing) instead of the driver's error."""
    path = os.path.join(folder, "results.sqlite")
    db = _open(folder)
    try:
        return [db.execute(q).fetchall() if q.startswith("PRAGMA") else pd.read_sql_query(q, db) for q in queries]
    except (sqlite3.Error, pd.errors.DatabaseError) as e:
        why = str(e.__cause__ or e).rsplit("': ", 1)[-1]  # pandas says "Execution failed on sql '...': <why>"
        hint = ("; `dtrun resume " + folder + "` restores a run's rows from its files"
                if "no such table" in why or "malformed" in why or "not a database" in why else "")
        raise ResultsError(f"{path}: cannot read it: {why}{hint}") from None
    finally:
        db.close()


def _pool_key(config):
    """A run's archived config without the experiment's seed: runs that differ by the seed pool."""
    return "".join(line for line in (config or "").splitlines(True) if not line.startswith("  seed: "))


def _samples(config):
    """Each problem's evaluation.sample (0: every node evaluated), problems in file order."""
    try:
        import yaml
        pcs = (yaml.safe_load(config or "") or {}).get("problem_configs") or {}
        return [int(((pc or {}).get("evaluation") or {}).get("sample") or 0) for pc in pcs.values()]
    except Exception:  # no python3-yaml, or an unusual config: every node counts
        return []


def load_runs(*folders, where=None):
    """The evaluations of every run in the given run or sweep folders: one row per evaluation and
    node, with the columns source (the folder given), folder (the run's), run, point, seed,
    experiment, run_status, problem (its name), problem_index, algorithm, problem_status, round,
    node, the metrics, bytes_sent, time_compute, time_comm, time_eval, sim_time and the message
    counters, and one column per swept key (its value as text). where: {key: value or [values]}
    keeps the runs whose swept value (or experiment column) is one of them."""
    frames, seen = [], {}
    for folder in folders:
        real_path = os.path.realpath(folder)
        if real_path in seen:  # its rows would be counted twice, as compare refuses to
            raise ResultsError(f"{folder}: given twice (also as {seen[real_path]})")
        seen[real_path] = folder
        ev, sv, info = _read(folder, [
            "SELECT e.*, p.problem_name AS problem_name, p.alg_name AS algorithm, p.status AS problem_status, "
            "r.folder AS folder, r.point AS point, r.seed AS seed, r.experiment AS experiment, "
            "r.status AS run_status, r.config AS config FROM evaluations e "
            "JOIN problems p ON p.run = e.run AND p.problem = e.problem JOIN runs r ON r.run = e.run "
            "ORDER BY e.run, e.problem, e.round, e.node",
            "SELECT run, key, value FROM sweep_values ORDER BY rowid",
            "PRAGMA table_info(evaluations)"])
        real = [r[1] for r in info if r[2].upper() == "REAL"]
        # a REAL column that is NULL in every row (sim_time without a network, the message counters
        # without faults) comes back as objects of None: NaN, as a number, like any missing value
        for c in real:
            ev[c] = pd.to_numeric(ev[c], errors="coerce").astype(float)
        ev = ev.rename(columns={"problem": "problem_index", "problem_name": "problem"})
        keys = list(dict.fromkeys(sv["key"]))
        for k in keys:
            m = sv[sv["key"] == k].set_index("run")["value"]
            ev[k] = ev["run"].map(m)
        ev.insert(0, "source", folder)
        ev.attrs.setdefault("swept", [])
        frames.append((ev, keys))
    if not frames:
        raise ResultsError("load_runs needs at least one run or sweep folder")
    df = pd.concat([f for f, _ in frames], ignore_index=True)
    df.attrs["swept"] = list(dict.fromkeys(k for _, ks in frames for k in ks))
    for key, values in (where or {}).items():
        if key not in df.columns:
            raise ResultsError(f"where: {key} is neither a swept key nor a column")
        values = values if isinstance(values, (list, tuple, set)) else [values]
        df = df[df[key].astype(str).isin([str(v) for v in values])]
    return df.reset_index(drop=True)


def _run_curves(df, metrics):
    """Per run and problem, per evaluation: the x axes and each metric's mean, min and max over the
    nodes (NaN where a node's value is missing, as compare counts)."""
    rows = []
    for (source, run, pidx), g in df.groupby(["source", "run", "problem_index"], sort=False):
        samples = _samples(g["config"].iloc[0])
        sample = samples[pidx] if 0 <= pidx < len(samples) else 0
        by = g.groupby("round", sort=True)
        nrows = by.size()
        cur = pd.DataFrame({"round": nrows.index.astype(float),
                            "samples": by["forward_pass_count"].mean().values,
                            "bytes": by["bytes_sent"].sum().values,
                            "seconds": (g["time_compute"].fillna(0) + g["time_comm"].fillna(0))
                            .groupby(g["round"]).max().values,
                            "sim_time": by["sim_time"].max().values if "sim_time" in g else math.nan})
        for m in metrics:
            cnt, want = by[m].count().values, nrows.values.copy()
            if m in _EVALUATED and sample > 0:
                want = [sample if sample < w else w for w in want]
            ok = (cnt == want) & (cnt > 0)
            cur[m + ":mean"] = by[m].mean().where(ok, math.nan).values
            cur[m + ":lo"] = by[m].min().where(ok, math.nan).values
            cur[m + ":hi"] = by[m].max().where(ok, math.nan).values
        first = g.iloc[0]
        rows.append(dict(source=source, run=run, problem=first["problem"], algorithm=first["algorithm"],
                         folder=first["folder"], seed=first["seed"], experiment=first["experiment"],
                         pool=_pool_key(first["config"]), data=cur))
    return rows


def curves(df, metrics=("top1_accuracy",), x="round", facet=None):
    """compare's series of a load_runs table: per group (the swept values but the seed, and the
    problem) and metric, at each evaluation its members share, x (the members' mean), the mean
    over seeds and the band (95% interval over seeds, or the range over the nodes of a group of
    one run). One row per series and evaluation: series, name, swept, problem, algorithm, facet,
    seeds, band, metric, x, mean, lo, hi. facet: a swept key or column whose value splits panels."""
    if x not in X_AXES:
        raise ResultsError(f"x={x}: expected one of {', '.join(X_AXES)}")
    for m in metrics:
        if m not in METRICS:
            raise ResultsError(f"metric {m}: expected one of {', '.join(METRICS)}")
    if facet is not None and facet not in df.columns:
        raise ResultsError(f"facet {facet}: neither a swept key nor a column of these runs")
    swept = [k for k in df.attrs.get("swept", []) if k != "experiment.seed" and k in df.columns]
    runs = _run_curves(df, metrics)
    first_row = df.drop_duplicates(["source", "run"]).set_index(["source", "run"])
    # plain runs (no swept value) are labelled by their folder, or by their experiment's name when
    # folders of one config but the seed pool
    pools = {}
    for r in runs:
        row = first_row.loc[(r["source"], r["run"])]
        r["swept"] = tuple((k, str(row[k])) for k in swept if pd.notna(row[k]))
        r["facet"] = None if facet is None else str(row[facet])
        if not r["swept"]:
            pools.setdefault(r["pool"], set()).add(r["source"])
    for r in runs:
        plain = not r["swept"]
        pooled = plain and len(pools[r["pool"]]) > 1 and r["experiment"]
        r["name"] = (r["experiment"] if pooled else os.path.basename(os.path.normpath(r["source"]))) if plain else None
    groups = {}
    for r in runs:
        key = (r["name"], r["swept"], r["problem"], r["facet"], r["pool"])
        members = groups.setdefault(key, [])
        if all(m["seed"] != r["seed"] for m in members):  # a re-run of a seed is not a second seed
            members.append(r)
    out = []
    for sid, ((name, swept_pairs, problem, fval, _), members) in enumerate(groups.items()):
        n = min(len(m["data"]) for m in members)
        xs = sum(m["data"][x].values[:n] for m in members) / len(members)
        for metric in metrics:
            means = [m["data"][metric + ":mean"].values[:n] for m in members]
            for i in range(n):
                v = [mm[i] for mm in means]
                mean = sum(v) / len(v)
                if len(v) > 1:
                    sd = math.sqrt(sum((a - mean) ** 2 for a in v) / (len(v) - 1))
                    h = _t975(len(v)) * sd / math.sqrt(len(v))
                    lo, hi = mean - h, mean + h
                else:
                    lo = members[0]["data"][metric + ":lo"].values[i]
                    hi = members[0]["data"][metric + ":hi"].values[i]
                out.append(dict(series=sid, name=name, swept=swept_pairs, problem=problem,
                                algorithm=members[0]["algorithm"], facet=fval, seeds=len(members),
                                band="ci95" if len(members) > 1 else "nodes", metric=metric,
                                x=float(xs[i]), mean=mean, lo=lo, hi=hi))
    cols = ["series", "name", "swept", "problem", "algorithm", "facet", "seeds", "band", "metric", "x", "mean", "lo", "hi"]
    return pd.DataFrame(out, columns=cols)
