"""The drawing half of `dtrun compare --plot`: dtrun computes the series (its groups, means and
bands) and sends them as one JSON document on standard input; this draws and saves the figure.

    {"kind": "curves" | "against", "output": "fig.pdf", "size": "paper" | "slide",
     "title": null, "labels": {"cadmm": "DiNNO"}, "xlim": "0:1000", "ylim": {"top1_accuracy": "0.5:1"},
     "log": "auto", "x": "round", "facet": "graph", "metric": "top1_accuracy", "against": null,
     "series": [{"series": 0, "name": null, "swept": [["graph", "cycle"]], "problem": "dsgd",
                 "algorithm": "dsgd", "facet": "cycle", "seeds": 3, "band": "ci95",
                 "metric": "top1_accuracy", "x": [...], "mean": [...], "lo": [...], "hi": [...]}],
     "points": [{"problem", "algorithm", "target", "direction", "value", "mean", "ci", "reached", "seeds"}]}

Exit 0 when the figure is written; 2 with one line on standard error when it cannot be (nothing
is left behind); 3 when matplotlib or pandas is missing. DTRUN_PLOT_DESCRIBE=FILE also writes
figures.describe() of the figure as JSON (the tests read it).
"""
import json
import os
import sys


def _series_frame(pd, series):
    rows = []
    for s in series:
        n = len(s["x"])
        for key in ("mean", "lo", "hi"):
            if len(s[key]) != n:
                raise ValueError(f"series {s.get('series')}: {key} has {len(s[key])} values for {n} x values")
        swept = tuple((k, v) for k, v in s.get("swept") or ())
        for i in range(n):
            rows.append(dict(series=s["series"], name=s.get("name"), swept=swept, problem=s["problem"],
                             algorithm=s["algorithm"], facet=s.get("facet"), seeds=s["seeds"], band=s["band"],
                             metric=s["metric"], x=_num(s["x"][i]), mean=_num(s["mean"][i]), lo=_num(s["lo"][i]),
                             hi=_num(s["hi"][i])))
    return pd.DataFrame(rows, columns=["series", "name", "swept", "problem", "algorithm", "facet", "seeds", "band",
                                       "metric", "x", "mean", "lo", "hi"])


def _num(v):
    return float("nan") if v is None else float(v)


def main(argv=None):
    try:
        import pandas as pd
        from . import figures
    except ImportError as e:
        print(f"--plot needs python3-matplotlib and python3-pandas ({e}): apt-get install python3-matplotlib "
              "python3-pandas (scripts/setup.sh installs them)", file=sys.stderr)
        return 3
    try:
        spec = json.load(sys.stdin)
        kind, out = spec["kind"], spec["output"]
        common = dict(size=spec.get("size") or "paper", labels=spec.get("labels") or {}, title=spec.get("title"),
                      xlim=spec.get("xlim"), ylim=spec.get("ylim"), log=spec.get("log") or "auto", x=spec.get("x") or "round")
        if kind == "curves":
            fig = figures.draw_curves(_series_frame(pd, spec["series"]), facet=spec.get("facet"), **common)
        elif kind == "against":
            pts = pd.DataFrame(spec["points"], columns=["problem", "algorithm", "target", "direction", "value", "mean",
                                                        "ci", "reached", "seeds"])
            fig = figures.draw_against(pts, spec["against"], spec["metric"], values=spec.get("values"), **common)
        else:
            raise ValueError(f"kind {kind!r}: expected curves or against")
        described = figures.describe(fig)
        figures.save(fig, out)
        for note in getattr(fig, "dtrun_notes", []):
            print(f"note: {note}", file=sys.stderr)
        if os.environ.get("DTRUN_PLOT_DESCRIBE"):
            with open(os.environ["DTRUN_PLOT_DESCRIBE"], "w") as f:
                json.dump(described, f, indent=1)
    except figures.FigureError as e:
        print(str(e), file=sys.stderr)
        return 2
    except (ValueError, KeyError, TypeError, OSError) as e:
        print(f"the figure could not be drawn: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
