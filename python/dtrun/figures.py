"""The figures of `dtrun compare --plot`, drawn by matplotlib.

draw_curves: one panel per metric and per value of a facet key (metrics down, facet values across,
wrapped), a mean line with a band per series; draw_against: each target's x against a config
value. A colour per algorithm from the Okabe-Ito palette (safe for colour-blind readers), then
dashes and markers, so that no two series of a figure look alike; every series in one legend
outside the data; sizes for a paper column and a 16:9 slide that grow rather than squeeze a panel.
save() writes PDF (TrueType fonts embedded), SVG or PNG through a temporary file, so a failure
leaves no partial figure.
"""
import math
import os
import tempfile
import textwrap
import zlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

# Okabe & Ito (2008), black and yellow last: yellow is faint on white.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
DASHES = ("-", (0, (5, 2)), (0, (1, 1.5)), (0, (6, 1.5, 1, 1.5)), (0, (9, 2, 1, 2, 1, 2)), (0, (3, 1)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
# Readable names of the metrics and x axes; --label (labels=) overrides any of them.
NAMES = {
    "top1_accuracy": "Top-1 accuracy", "validation_loss": "Validation loss", "consensus_error": "Consensus error",
    "consensus_error_raw": "Consensus error (unnormalised)", "train_loss": "Training loss",
    "current_epoch": "Epoch", "forward_pass_count": "Forward passes",
    "round": "Round", "samples": "Samples per node", "bytes": "Bytes sent (all nodes)",
    "seconds": "Wall seconds", "sim_time": "Simulated seconds (slowest node)",
}
# What draw_against's y axis counts, per x axis.
_COUNTS = {"round": "Rounds", "samples": "Samples per node", "bytes": "Bytes sent", "seconds": "Wall seconds",
           "sim_time": "Simulated seconds"}
# A paper column (3.4 in) and a 16:9 slide; panels never shrink below the minimum sizes. On paper
# a figure with panels side by side (--facet) spans the page (7 in, LaTeX's figure*), so that each
# panel keeps at least 1.5 in of plot: in one column two panels would get 1.3 in.
SIZES = {
    "paper": dict(width=3.4, font=7, maxcols=1, panel_h=1.55, min_w=1.45, dpi=300),
    "paper_wide": dict(width=7.0, font=7, maxcols=3, panel_h=1.55, min_w=2.1, dpi=300),
    "slide": dict(width=10.0, height=5.625, font=12, maxcols=4, min_h=1.9, legend_w=2.8, dpi=150),
}
FORMATS = (".pdf", ".svg", ".png")


class FigureError(Exception):
    """A figure that cannot be drawn as asked: the message says why."""


def text(token, labels=None):
    """What the figure shows for an identifier: labels[token], its readable name, or itself."""
    token = str(token)
    if labels and token in labels:
        return labels[token]
    return NAMES.get(token, token)


def _key_text(key, labels):
    """A config key path as a legend shows it: its label, else its last component."""
    if labels and key in labels:
        return labels[key]
    short = key.rsplit(".", 1)[-1]
    return text(short, labels)


def _is_number(v):
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def series_label(name, swept, problem, facet_key=None, labels=None):
    """The legend's text of a series: its problem, then its swept values (the facet's aside) or
    the run's name."""
    parts = [text(problem, labels)]
    pairs = [(k, v) for k, v in (swept or ()) if k != facet_key]
    if pairs:
        parts.append(", ".join(f"{_key_text(k, labels)}={text(v, labels)}" for k, v in pairs))
    elif name:
        parts.append(text(name, labels))
    return " \N{MIDDLE DOT} ".join(parts)


def facet_title(key, value, labels=None):
    """A facet panel's title: the value (a number with its key)."""
    if labels and str(value) in labels:
        return labels[str(value)]
    return f"{_key_text(key, labels)} = {value}" if _is_number(value) else text(value, labels)


# The algorithms most often compared get a colour each; any other algorithm the colour its name
# hashes to. Either way the colour is a function of the algorithm alone, the same in every figure
# of a paper whatever the order of the folders and problems (series that share a colour differ by
# dash and marker).
FIRST_COLOURS = ("cadmm", "dsgd", "dsgt", "gossip", "centralized", "extra", "choco", "solo")


def algorithm_colour(algorithm):
    """The palette index of an algorithm (its alg_name; dinno is cadmm)."""
    name = "cadmm" if algorithm == "dinno" else str(algorithm)
    if name in FIRST_COLOURS:
        return FIRST_COLOURS.index(name)
    return zlib.crc32(name.encode()) % len(PALETTE)


class Styles:
    """A style per series identity: the algorithm's colour (algorithm_colour), then a (dash,
    marker) pair that is new for that colour. (dash, marker) for style s = 6q + r is
    (r, (7q + r) mod 8): 48 distinct pairs."""

    def __init__(self):
        self.per_colour, self.of = {}, {}

    def get(self, identity, algorithm):
        if identity not in self.of:
            colour = algorithm_colour(algorithm)
            s = self.per_colour.get(colour, 0)
            if s >= len(DASHES) * len(MARKERS):
                raise FigureError(f"more than {len(DASHES) * len(MARKERS)} series share a colour: "
                                  "split the figure (--where) or facet it (--facet)")
            self.per_colour[colour] = s + 1
            self.of[identity] = dict(color=PALETTE[colour], linestyle=DASHES[s % len(DASHES)],
                                     marker=MARKERS[(7 * (s // len(DASHES)) + s) % len(MARKERS)])
        return self.of[identity]


def _parse_lim(lim):
    """(lo, hi) with None for an open side, from a tuple or 'LO:HI' text."""
    if lim is None:
        return None
    if isinstance(lim, str):
        lo, sep, hi = lim.partition(":")
        if not sep or not (_is_number(lo) or lo == "") or not (_is_number(hi) or hi == "") or lo == hi == "":
            raise FigureError(f"axis limits {lim!r}: expected LO:HI, either side may be empty (0.5: or :1)")
        lim = (float(lo) if lo else None, float(hi) if hi else None)
    lo, hi = lim
    if lo is not None and hi is not None and not lo < hi:
        raise FigureError(f"axis limits {lo}:{hi}: the low end must be below the high end")
    return lo, hi


def _log_axes(log, metric, x):
    """(log x, log y) of a panel: log 'auto' puts consensus errors and bytes on log axes."""
    if log in (None, "auto"):
        return x == "bytes", "consensus" in metric
    if log not in ("none", "x", "y", "xy"):
        raise FigureError(f"log {log!r}: expected auto, none, x, y or xy")
    return "x" in log, "y" in log


def _text_width(text_, points):
    """About how wide text is in inches at a font size (DejaVu Sans averages 0.55 em per glyph)."""
    return max((len(line) for line in str(text_).split("\n")), default=0) * points * 0.55 / 72


def _wrap(text_, width_in, points):
    """text broken into lines that fit width_in inches at a font size."""
    return textwrap.fill(str(text_), width=max(8, int(width_in * 72 / (points * 0.55))))


def _fit_legend(size, title, names, ncol):
    """The legend's title and entries wrapped to the room they get (on paper the figure's width
    for the title and a column's for an entry; on a slide the legend's column, the title's parts
    on lines of their own), so that the legend never widens the figure and squeezes the panels:
    (title, names, lines), lines the legend's height in text lines."""
    sz = SIZES.get(size, SIZES["paper"])
    pts = sz["font"] - (1 if size.startswith("paper") else 2)
    if size == "slide":
        title = "\n".join(_wrap(p, sz["legend_w"] - 0.2, pts) for p in title.split("; "))
        names = [_wrap(n, sz["legend_w"] - 0.9, pts) for n in names]
        ncol = 1
    else:
        title = _wrap(title, sz["width"] - 0.4, pts)
        names = [_wrap(n, (sz["width"] - 0.4) / ncol - 0.6, pts) for n in names]
    per_col = math.ceil(len(names) / ncol) if names else 0  # matplotlib fills a column, then the next
    cols = [names[c * per_col:(c + 1) * per_col] for c in range(ncol)]
    entry_lines = max((sum(n.count("\n") + 1 for n in col) for col in cols), default=0)
    return title, names, entry_lines + title.count("\n") + 1


def _new_figure(size, rows, cols, legend_entries, title, legend_cols, panel_h=None, legend_texts=(), legend_lines=None):
    """A figure of rows x cols panels and a legend area (below them on paper, beside them on a
    slide): the panels' axes (a list of rows) and the legend's axes. legend_lines: the legend's
    height in text lines (_fit_legend's; default one per row of entries and one for the title)."""
    if size not in SIZES:
        raise FigureError(f"size {size!r}: expected paper or slide")
    sz = dict(SIZES[size])
    sz["panel_h"] = panel_h or sz.get("panel_h")
    plt.rcParams.update({"font.size": sz["font"], "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none",
                         "axes.titlesize": sz["font"], "legend.fontsize": sz["font"] - (1 if size.startswith("paper") else 2),
                         "axes.labelsize": sz["font"]})
    line = sz["font"] / 72 * 1.45  # one legend line, in inches
    title_h = line * 1.6 if title else 0
    if size.startswith("paper"):
        if cols > 1 and sz["width"] / cols < sz["min_w"]:
            cols = max(1, int(sz["width"] // sz["min_w"]))
        legend_h = line * ((legend_lines if legend_lines is not None else math.ceil(legend_entries / legend_cols) + 1) + 0.5)
        height = rows * sz["panel_h"] + legend_h + title_h
        fig = plt.figure(figsize=(sz["width"], height), layout="constrained")
        gs = fig.add_gridspec(rows + 1, cols, height_ratios=[sz["panel_h"]] * rows + [legend_h])
        legend_ax = fig.add_subplot(gs[rows, :])
        grid = [[gs[r, c] for c in range(cols)] for r in range(rows)]
    else:
        height = max(sz["height"], rows * sz["min_h"] + title_h + 0.4,
                     (legend_lines if legend_lines is not None else legend_entries) * line + 0.8)
        # the legend's column as wide as its longest text and the line sample, within bounds
        widest = max((_text_width(t, sz["font"] - 2) for t in legend_texts), default=1.0)  # its longest line
        sz["legend_w"] = min(max(widest + 0.9, 1.6), sz["legend_w"])
        panel_w = (sz["width"] - sz["legend_w"]) / cols
        fig = plt.figure(figsize=(sz["width"], height), layout="constrained")
        gs = fig.add_gridspec(rows, cols + 1, width_ratios=[panel_w] * cols + [sz["legend_w"]])
        legend_ax = fig.add_subplot(gs[:, cols])
        grid = [[gs[r, c] for c in range(cols)] for r in range(rows)]
    legend_ax.set_axis_off()
    legend_ax.set_gid("legend")
    if title:
        fig.suptitle(title, fontsize=sz["font"] + 1)
    return fig, grid, legend_ax


def _legend(legend_ax, size, handles, names, legend_title, ncol):
    if size.startswith("paper"):
        lg = legend_ax.legend(handles, names, loc="upper center", ncol=ncol, frameon=False, title=legend_title,
                              handlelength=3.2, borderaxespad=0, columnspacing=1.2)
        lg.get_title().set_multialignment("center")
    else:
        legend_ax.legend(handles, names, loc="center left", ncol=1, frameon=False, title=legend_title,
                         handlelength=3.2, borderaxespad=0)


def draw_curves(cv, facet=None, size="paper", labels=None, title=None, xlim=None, ylim=None, log="auto",
                x="round"):
    """The figure of a curves() table (or the series compare sends): a panel per metric and facet
    value, a mean line and a band per series. ylim: LO:HI for every panel, or {metric: LO:HI}."""
    if cv is None or len(cv) == 0:
        raise FigureError("there is nothing to draw: no series")
    if facet is not None and len(set(cv["facet"])) > 64:
        raise FigureError(f"--facet {facet} has {len(set(cv['facet']))} values: at most 64 panels per metric")
    labels = labels or {}
    metrics = list(dict.fromkeys(cv["metric"]))
    facets = list(dict.fromkeys(cv["facet"])) if facet is not None else [None]
    layout = "paper_wide" if size == "paper" and len(facets) > 1 else size  # the geometry; size keeps the style
    maxcols = SIZES.get(layout, SIZES["paper"])["maxcols"]
    cols = min(len(facets), maxcols)
    frows = math.ceil(len(facets) / cols)
    xlim = _parse_lim(xlim)
    ylims = {m: _parse_lim(ylim.get(m) if isinstance(ylim, dict) else ylim) for m in metrics}
    for m in (ylim or {}) if isinstance(ylim, dict) else ():
        if m not in metrics:
            raise FigureError(f"ylim for {m}: the figure has no {m} panel (its metrics: {', '.join(metrics)})")
    styles, order = Styles(), {}
    for _, r in cv.drop_duplicates("series").iterrows():
        ident = series_label(r["name"], r["swept"], r["problem"], facet, labels)
        order.setdefault(ident, dict(style=styles.get(ident, r["algorithm"]), seeds=set(), bands=set()))
        order[ident]["seeds"].add(int(r["seeds"]))
        order[ident]["bands"].add(r["band"])
    all_seeds = set().union(*(o["seeds"] for o in order.values()))
    all_bands = set().union(*(o["bands"] for o in order.values()))
    legend_cols = 1 if size == "slide" or len(order) < 4 else 2 if cols == 1 else 3
    band_text = _band_text(all_bands, all_seeds)
    legend_title = "Mean over nodes" + (f"; band: {band_text}" if band_text else "")
    legend_title, legend_names, legend_lines = _fit_legend(layout, legend_title, list(order), legend_cols)
    fig, grid, legend_ax = _new_figure(layout, len(metrics) * frows, cols, len(order), title, legend_cols,
                                       legend_texts=legend_names + legend_title.split("\n"), legend_lines=legend_lines)
    panel_w = fig.get_size_inches()[0] / (cols + (1 if size == "slide" else 0)) - 0.3
    first = None
    dropped = {}
    for mi, metric in enumerate(metrics):
        logx, logy = _log_axes(log, metric, x)
        row_first = None
        for fi, fval in enumerate(facets):
            r, c = mi * frows + fi // cols, fi % cols
            ax = fig.add_subplot(grid[r][c], sharex=first, sharey=row_first)
            ax.set_gid("panel")
            first, row_first = first or ax, row_first or ax
            sel = cv[(cv["metric"] == metric) & ((cv["facet"] == fval) if facet is not None else True)]
            for sid, s in sel.groupby("series", sort=False):
                s = s.sort_values("x")
                ident = series_label(s["name"].iloc[0], s["swept"].iloc[0], s["problem"].iloc[0], facet, labels)
                st = order[ident]["style"]
                xs, mean, lo, hi = s["x"].to_numpy(float), s["mean"].to_numpy(float), s["lo"].to_numpy(float), s["hi"].to_numpy(float)
                if logx:  # a log x axis has no 0 (round 0, no bytes sent yet): those points are left out, and said so
                    keep = xs > 0
                    dropped[metric] = dropped.get(metric, 0) + int((~keep).sum())
                    xs, mean, lo, hi = xs[keep], mean[keep], lo[keep], hi[keep]
                if metric == "top1_accuracy":  # an interval does not leave what accuracy can be
                    lo, hi = [min(max(v, 0.0), 1.0) for v in lo], [min(max(v, 0.0), 1.0) for v in hi]
                if logy:  # a log axis has no zero: values <= 0 are left out, a band through zero keeps its upper edge
                    mean = [v if v > 0 else math.nan for v in mean]
                    lo = [a if a > 0 else (m if m > 0 else math.nan) for a, m in zip(lo, mean)]
                if s["band"].iloc[0] != "none":
                    ax.fill_between(xs, lo, hi, color=st["color"], alpha=0.16, linewidth=0)
                ax.plot(xs, mean, color=st["color"], linestyle=st["linestyle"], marker=st["marker"],
                        markevery=max(1, len(xs) // 10), markersize=2.8 if size == "paper" else 5,
                        linewidth=1.1 if size == "paper" else 1.8, label=ident, gid=ident)
            if logx:
                ax.set_xscale("log")
            if logy:
                ax.set_yscale("log")
            if facet is not None:
                ax.set_title(_wrap(facet_title(facet, fval, labels), panel_w, plt.rcParams["axes.titlesize"]), pad=2)
            if c == 0:
                ax.set_ylabel(text(metric, labels))
            else:
                ax.tick_params(labelleft=False)
            if r == len(metrics) * frows - 1 or (mi == len(metrics) - 1 and fi + cols >= len(facets)):
                # panels side by side: a label longer than its panel (the simulated clock's) wraps
                # instead of running into its neighbour's and off the figure
                ax.set_xlabel(_wrap(text(x, labels), panel_w, plt.rcParams["axes.labelsize"]) if cols > 1 else text(x, labels))
            ax.grid(True, color="#dddddd", linewidth=0.5)
            if xlim:
                ax.set_xlim(*xlim)
            if ylims[metric]:
                ax.set_ylim(*ylims[metric])
    handles, names = [], []
    for ident, o in order.items():
        st = o["style"]
        handles.append(Line2D([], [], color=st["color"], linestyle=st["linestyle"], marker=st["marker"],
                              markersize=3.5 if size == "paper" else 6, linewidth=1.1 if size == "paper" else 1.8))
        names.append(ident)
    _legend(legend_ax, size, handles, [legend_names[list(order).index(n)] for n in names], legend_title, legend_cols)
    fig.dtrun_notes = [f"{text(metric, labels)}: {n} points where {text(x, labels).lower()} is 0 are left out (a log axis has no 0)"
                       for metric, n in dropped.items() if n > 0]
    return fig


_BANDS = {"ci95": "95% interval", "sd": "\u00b11 sd", "sem": "\u00b11 standard error", "minmax": "range"}


def _band_text(bands, seeds):
    """What the bands show, for the legend's title (None: no band)."""
    if bands == {"none"}:
        return None
    n = sorted(seeds - {1}) if bands != {"nodes"} else []
    over = f"{n[0]} seeds" if len(n) == 1 else f"{n[0]}-{n[-1]} seeds" if n else "seeds"
    if bands == {"nodes"}:
        return "range over the nodes"
    kind = _BANDS[next(iter(sorted(bands - {"nodes"})))]
    if "nodes" not in bands:
        return f"{kind} over {over}"
    return f"{kind} over {over} (a single run: the range over its nodes)"


def draw_against(points, against, metric, x="round", size="paper", labels=None, title=None, xlim=None, ylim=None,
                 log="auto", values=None):
    """Each target's x (rounds, ...) against a config value: a series per problem and target, the
    95% interval over the seeds that reach it, a hollow marker where only some seeds do. points:
    rows of problem, algorithm, target, direction (>= or <=), value (text), mean, ci, reached, seeds;
    values: the order of the x axis (by default, numbers sorted and words in order of appearance)."""
    if points is None or len(points) == 0:
        raise FigureError("no group reaches any of the targets, so there is nothing to draw")
    labels = labels or {}
    values = list(dict.fromkeys(list(values or []) + list(points["value"])))
    numeric = all(_is_number(v) for v in values)
    pos = {v: (float(v) if numeric else i) for i, v in enumerate(values)}
    keys = list(dict.fromkeys(zip(points["problem"], points["target"])))
    partial = bool((points["reached"] < points["seeds"]).any())
    legend_title = "Mean over seeds; bar: 95% interval" + ("; hollow: not every seed reaches it" if partial else "")
    idents = []
    for problem, target in keys:
        sign = "\u2265" if points[(points["problem"] == problem) & (points["target"] == target)]["direction"].iloc[0] == ">=" else "\u2264"
        idents.append(f"{text(problem, labels)}: {text(metric, labels)} {sign} {target:g}")
    legend_title, legend_names, legend_lines = _fit_legend(size, legend_title, idents, 1)
    fig, grid, legend_ax = _new_figure(size, 1, 1, len(keys), title, 1, panel_h=2.3,
                                       legend_texts=legend_names + legend_title.split("\n"), legend_lines=legend_lines)
    ax = fig.add_subplot(grid[0][0])
    ax.set_gid("panel")
    styles, handles, names = Styles(), [], []
    for problem, target in keys:
        s = points[(points["problem"] == problem) & (points["target"] == target)]
        s = s.assign(pos=[pos[v] for v in s["value"]]).sort_values("pos")
        sign = "\u2265" if s["direction"].iloc[0] == ">=" else "\u2264"
        ident = f"{text(problem, labels)}: {text(metric, labels)} {sign} {target:g}"
        st = styles.get(ident, problem)
        bars = ax.errorbar(s["pos"], s["mean"], yerr=s["ci"].fillna(0), color=st["color"], linestyle=st["linestyle"],
                           linewidth=1.1 if size == "paper" else 1.8, capsize=2, marker="none", label=ident)
        bars.lines[0].set_gid(ident)
        full = s["reached"] >= s["seeds"]
        ax.plot(s["pos"][full], s["mean"][full], linestyle="none", marker=st["marker"], color=st["color"], markersize=4)
        ax.plot(s["pos"][~full], s["mean"][~full], linestyle="none", marker=st["marker"], markerfacecolor="white",
                color=st["color"], markersize=4)
        handles.append(Line2D([], [], color=st["color"], linestyle=st["linestyle"], marker=st["marker"], markersize=4))
        names.append(ident)
    if not numeric:
        ax.set_xticks(range(len(values)), [text(v, labels) for v in values])
        ax.set_xlim(-0.5, len(values) - 0.5)
    ax.set_xlabel(_key_text(against, labels))
    ax.set_ylabel(f"{text(_COUNTS.get(x, x), labels)} to reach the target")
    logx, logy = _log_axes(log if log not in (None, "auto") else "none", metric, x)
    if logx and numeric:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    elif not ylim:
        ax.set_ylim(bottom=0)
    ax.grid(True, color="#dddddd", linewidth=0.5)
    if xlim:
        ax.set_xlim(*_parse_lim(xlim))
    if ylim:
        ax.set_ylim(*_parse_lim(ylim))
    _legend(legend_ax, size, handles, [legend_names[idents.index(n)] for n in names], legend_title, 1)
    return fig


def _box_in(bbox, fig):
    """A display-space box as [x0, y0, x1, y1] in inches from the figure's lower left corner."""
    return [round(v / fig.dpi, 3) for v in (bbox.x0, bbox.y0, bbox.x1, bbox.y1)]


def describe(fig):
    """What a figure holds, read back from matplotlib's objects: its size, every panel's title,
    labels (with the x label's box), scales and limits with its lines (label, colour, dash, marker,
    points) and bands, and the legend's title and entries."""
    fig.canvas.draw()  # the laid-out positions
    renderer = fig.canvas.get_renderer()

    def shown(texts):  # the boxes of the texts that draw something
        return [_box_in(t.get_window_extent(renderer), fig) for t in texts if t.get_visible() and t.get_text().strip()]

    def tick_labels(axis):  # the labels of the ticks drawn: those inside the view (matplotlib keeps others)
        lo, hi = sorted(axis.get_view_interval())
        span = (hi - lo) * 1e-9
        ticks = [t for t in axis.get_major_ticks() + axis.get_minor_ticks() if lo - span <= t.get_loc() <= hi + span]
        return [t.label1 for t in ticks]

    out = dict(size=[round(v, 3) for v in fig.get_size_inches()], title=fig._suptitle.get_text() if fig._suptitle else None,
               panels=[], legend=None, notes=list(getattr(fig, "dtrun_notes", [])),
               texts_in=shown([fig._suptitle] if fig._suptitle else []))
    for ax in fig.axes:
        if ax.get_gid() == "legend":
            lg = ax.get_legend()
            hs = lg.legend_handles if hasattr(lg, "legend_handles") else lg.legendHandles
            out["legend"] = dict(title=lg.get_title().get_text(), entries=[t.get_text() for t in lg.get_texts()],
                                 styles=[[h.get_color(), str(h._dash_pattern), h.get_marker()] for h in hs],
                                 box_in=_box_in(lg.get_window_extent(), fig))
            continue
        pos = ax.get_position()
        lines = [dict(label=l.get_gid(), color=l.get_color(), dashes=str(l._dash_pattern), marker=l.get_marker(),
                      points=int(sum(1 for v in l.get_ydata() if v == v)),
                      xmin=float(min(l.get_xdata())) if len(l.get_xdata()) else None)
                 for l in ax.get_lines() if l.get_gid()]
        out["panels"].append(dict(title=ax.get_title(), xlabel=ax.get_xlabel(), ylabel=ax.get_ylabel(),
                                  xscale=ax.get_xscale(), yscale=ax.get_yscale(),
                                  xlim=list(ax.get_xlim()), ylim=list(ax.get_ylim()),
                                  box_in=_box_in(ax.get_window_extent(), fig),
                                  xlabel_in=_box_in(ax.xaxis.label.get_window_extent(), fig) if ax.get_xlabel() else None,
                                  width_in=round(pos.width * fig.get_size_inches()[0], 3),
                                  height_in=round(pos.height * fig.get_size_inches()[1], 3),
                                  xticklabels=[t.get_text() for t in ax.get_xticklabels()],
                                  xticks_in=shown(tick_labels(ax.xaxis)), yticks_in=shown(tick_labels(ax.yaxis)),
                                  lines=lines, bands=len(ax.collections)))
        out["texts_in"] += shown([ax.title, ax.xaxis.label, ax.yaxis.label] + tick_labels(ax.xaxis) + tick_labels(ax.yaxis))
    if out["legend"] is not None:
        out["texts_in"].append(out["legend"]["box_in"])
    return out


def save(fig, path):
    """Writes fig to path (.pdf, .svg or .png) through a temporary file in its folder, so a
    failure leaves nothing behind; PDF fonts are embedded as TrueType."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise FigureError(f"{path}: the file name must end in .pdf, .svg or .png")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FigureError(f"{path}: the folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".dtrun_plot_", suffix=ext, dir=folder)
    os.close(fd)
    try:
        dpi = 300 if fig.get_size_inches()[0] < 8 else 150  # paper (3.4 or 7 in) at 300, a slide at 150
        fig.savefig(tmp, format=ext[1:], dpi=dpi, metadata={"Creator": "dtrun compare"} if ext != ".png" else None)
        # mkstemp makes the file 0600; a figure is shared like every other result file (0666 less
        # the umask, as open() would make it)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    finally:
        plt.close(fig)
