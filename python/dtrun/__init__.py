"""dtrun's results in Python: run and sweep folders as pandas DataFrames, and the figures that
`dtrun compare --plot` draws, for notebooks and scripts.

    import dtrun
    df = dtrun.load_runs("outputs/dinno_figure")          # one row per evaluation and node
    cv = dtrun.curves(df, ["top1_accuracy"], facet="graph")  # mean and band per group of seeds
    fig = dtrun.draw_curves(cv, facet="graph", labels={"cadmm": "DiNNO"})
    dtrun.save(fig, "dinno.pdf")

The module needs python3-pandas and python3-matplotlib (Debian); `load_runs` needs pandas only.
"""
from .results import load_runs, curves, METRICS, X_AXES
from .figures import draw_curves, draw_against, describe, save

__all__ = ["load_runs", "curves", "draw_curves", "draw_against", "describe", "save", "METRICS", "X_AXES"]
