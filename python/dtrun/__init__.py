"""dtrun's results in Python: run and sweep folders as pandas DataFrames, and the figures that
`dtrun compare --plot` draws, for notebooks and scripts.

    import dtrun
    df = dtrun.load_runs("outputs/dinno_figure")          # one row per evaluation and node
    cv = dtrun.curves(df, ["top1_accuracy"], facet="graph")  # mean and band per group of seeds
    fig = dtrun.draw_curves(cv, facet="graph", labels={"cadmm": "DiNNO"})
    dtrun.save(fig, "dinno.pdf")

The module needs python3-pandas and python3-matplotlib (Debian); `load_runs` needs pandas only.
What the folders cannot give (no such folder, a damaged results.sqlite, a table missing, a folder
given twice) raises dtrun.ResultsError, naming the file and what is wrong.

`import dtrun.torch_models` (needs PyTorch; not imported here) has the PyTorch definitions of
dtrun's named models and loads a run's saved models into them: `from_run(run, problem, node)`.
"""
from .results import load_runs, curves, ResultsError, METRICS, X_AXES
from .figures import draw_curves, draw_against, describe, save

__all__ = ["load_runs", "curves", "ResultsError", "draw_curves", "draw_against", "describe", "save", "METRICS", "X_AXES"]
