#!/usr/bin/env bash
# compare --plot's figures, checked from matplotlib's own objects (DTRUN_PLOT_DESCRIBE writes
# python/dtrun/figures.describe() of each figure) and by real readers (pdfinfo, pdffonts, an XML
# parser, the PNG header), on a sweep written by tests/e2e/make_results.py: 3 graphs x 3 seeds, 9
# algorithms (more than the palette's colours), a consensus error of 0 that a log axis cannot
# show. Also: every failure is exit 2 with a message and leaves no file; --csv with --plot stays
# pure CSV; the Python API (dtrun.load_runs, dtrun.curves) agrees with compare's table.
# usage: figures.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_start "$@"
build=$(dirname "$dtrun")
py=${DTRUN_PYTHON:-$(sed -n 's/^#define DT_PYTHON "\(.*\)"$/\1/p' "$build/include/dt_config.h")}
"$py" -c "import matplotlib, pandas" || { bad "$py lacks matplotlib or pandas (scripts/setup.sh installs them)"; exit 1; }
"$py" tests/e2e/make_results.py "$tmp/s" || exit 1
# figure NAME COMPARE-ARGS...: draws with the description in $tmp/NAME.json; the exit code
figure() {
  local name=$1
  shift
  DTRUN_PLOT_DESCRIBE="$tmp/$name.json" "$dtrun" compare "$tmp/s" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err"
}
# check NAME PYTHON-ASSERTIONS: runs them with d = the description of figure NAME
check() {
  "$py" - "$tmp/$1.json" "$2" > "$tmp/$1.check" 2>&1 <<'PY' && ok || bad "figure $1: $(tail -1 "$tmp/$1.check")"
import json, sys
d = json.load(open(sys.argv[1]))
P, L = d["panels"], d["legend"]
def overlaps(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
exec(sys.argv[2])
PY
}

# A paper column: 2 metrics x 3 graphs (--facet on the sweep axis), nine algorithms
figure paper --metric top1_accuracy,consensus_error --facet graph --label dinno=DiNNO --title "Nine algorithms" --plot "$tmp/paper.pdf"
[ $? = 0 ] && ok || bad "the paper figure: $(cat "$tmp/paper.err")"
check paper '
assert d["size"][0] == 7.0 and d["title"] == "Nine algorithms", d["size"]  # panels side by side: the full page width
assert [p["title"] for p in P] == ["complete", "cycle", "random-0.7"] * 2, [p["title"] for p in P]
assert {p["ylabel"] for p in P} == {"Top-1 accuracy", "Consensus error", ""}, {p["ylabel"] for p in P}
assert [p["yscale"] for p in P] == ["linear"] * 3 + ["log"] * 3
for p in P:
    assert len(p["lines"]) == 9 and p["bands"] == 9, (p["title"], len(p["lines"]))
assert len(L["entries"]) == 9 and "DiNNO" in L["entries"] and "central" in L["entries"], L["entries"]
assert len({tuple(s) for s in L["styles"]}) == 9, L["styles"]          # no two series alike
assert [l["points"] for l in P[3]["lines"] if l["label"] == "central"] == [0]  # zero: not drawn, still listed
assert "95% interval over 3 seeds" in L["title"], L["title"]
sizes = {(p["width_in"], p["height_in"]) for p in P}
assert len(sizes) == 1 and min(sizes.pop()) > 1.0, [(p["width_in"], p["height_in"]) for p in P]
assert not any(overlaps(p["box_in"], L["box_in"]) for p in P), "the legend covers a panel"
'
# Two panels side by side at paper size with an x label longer than a panel (as the simulated
# clock's "Simulated seconds (slowest node)" is in the network study): it wraps, and the labels
# neither meet nor leave the figure
figure xwide --metric top1_accuracy --facet graph --where experiment.graph.type=complete,cycle --x bytes \
  --label 'bytes=Bytes sent by all the nodes of the graph together' --plot "$tmp/xwide.png"
[ $? = 0 ] && ok || bad "the two-panel figure: $(cat "$tmp/xwide.err")"
check xwide '
assert len(P) == 2 and all(p["xlabel_in"] for p in P), [p["xlabel"] for p in P]
a, b = P[0]["xlabel_in"], P[1]["xlabel_in"]
assert not overlaps(a, b), ("the x labels overlap", a, b)
assert a[0] >= 0 and b[2] <= d["size"][0] + 0.01, ("an x label runs off the figure", a, b, d["size"])
assert all(p["xlabel_in"][2] - p["xlabel_in"][0] <= p["box_in"][2] - p["box_in"][0] + 0.05 for p in P), [p["xlabel"] for p in P]
'
# --band: what the band shows over seeds (the numbers sent to the drawing side, caught by a
# shim Python, against the seeds' means from load_runs), or no band
printf '#!/bin/sh\ntee "%s" | "%s" "$@"\n' "$tmp/spec.json" "$py" > "$tmp/shim" && chmod +x "$tmp/shim"
DTRUN_PYTHON=$tmp/shim figure band_sd --band sd --plot "$tmp/band_sd.png"
[ $? = 0 ] && ok || bad "--band sd: $(cat "$tmp/band_sd.err")"
check band_sd '
assert "band: \u00b11 sd over 3 seeds" in L["title"], L["title"]
assert [p["bands"] for p in P] == [27], [p["bands"] for p in P]  # 9 algorithms x 3 graphs
'
PYTHONPATH=python "$py" - "$tmp/s" "$tmp/spec.json" <<'PY' && ok || bad "--band sd: the band is not the mean +- the seeds' standard deviation"
import json, sys
import numpy as np
import dtrun
spec = json.load(open(sys.argv[2]))
df = dtrun.load_runs(sys.argv[1])
means = df.groupby(["problem", "graph", "experiment.seed", "round"])["top1_accuracy"].mean()
checked = 0
for s in spec["series"]:
    assert s["band"] == "sd", s["band"]
    graph = s["swept"]["graph"] if isinstance(s["swept"], dict) else dict(s["swept"])["graph"]
    for x, mean, lo, hi in zip(s["x"], s["mean"], s["lo"], s["hi"]):
        v = means.xs((s["problem"], graph, x), level=("problem", "graph", "round")).to_numpy()
        sd = v.std(ddof=1)
        assert abs(mean - v.mean()) < 1e-6 and abs(lo - (v.mean() - sd)) < 1e-6 and abs(hi - (v.mean() + sd)) < 1e-6, (s["problem"], x, lo, hi, v)
        checked += 1
assert checked > 100, checked
PY
figure band_none --band none --plot "$tmp/band_none.png"
check band_none '
assert "band" not in L["title"], L["title"]
assert [(p["bands"], len(p["lines"])) for p in P] == [(0, 27)], [(p["bands"], len(p["lines"])) for p in P]
'

pdfinfo "$tmp/paper.pdf" 2>/dev/null | grep -q "^Pages: *1$" && ok || bad "the PDF is not one page"
pdffonts "$tmp/paper.pdf" | awk 'NR > 2 && $(NF-4) != "yes" {bad = 1} NR > 2 {n++} END {exit bad || !n}' && ok \
  || bad "a PDF font is not embedded: $(pdffonts "$tmp/paper.pdf")"
grep -q "plot written to $tmp/paper.pdf" "$tmp/paper.out" && ok || bad "compare did not say where the figure went"
# a figure's mode is any other file's: 0666 less the umask (it was 0600, from mkstemp)
[ "$(stat -c %a "$tmp/paper.pdf")" = "$(umask 022; touch "$tmp/mode_ref"; stat -c %a "$tmp/mode_ref")" ] && ok ||
  bad "the figure's mode is $(stat -c %a "$tmp/paper.pdf"), not what a new file gets"
(umask 022 && figure mode --plot "$tmp/mode.png") && [ "$(stat -c %a "$tmp/mode.png")" = 644 ] && ok ||
  bad "with umask 022 the figure's mode is $(stat -c %a "$tmp/mode.png" 2>&1), not 644"

# A slide: 3 metrics x 3 graphs side by side grow the slide rather than squeeze a panel; the legend
# right of every panel
figure slide --metric top1_accuracy,validation_loss,consensus_error --facet graph --size slide --plot "$tmp/slide.png"
[ $? = 0 ] && ok || bad "the slide: $(cat "$tmp/slide.err")"
check slide '
assert d["size"][0] == 10.0 and len(P) == 9, (d["size"], len(P))
assert min(p["height_in"] for p in P) > 1.2 and min(p["width_in"] for p in P) > 1.5, [(p["width_in"], p["height_in"]) for p in P]
assert len({(p["width_in"], p["height_in"]) for p in P}) == 1
assert all(L["box_in"][0] >= p["box_in"][2] for p in P), "the legend is not right of the panels"
'
"$py" -c "import struct,sys; d=open(sys.argv[1],'rb').read(24); assert d[:8]==b'\x89PNG\r\n\x1a\n' and struct.unpack('>I',d[16:20])[0]==1500" \
  "$tmp/slide.png" && ok || bad "the PNG is not a 1500-pixel-wide slide"

# SVG with the axis options, text kept as text
figure svg --metric top1_accuracy,consensus_error --xlim 0:100 --ylim top1_accuracy=0.5:1 --log none --label top1_accuracy=Accuracy \
  --label round=Communication\ round --plot "$tmp/f.svg"
[ $? = 0 ] && ok || bad "the SVG: $(cat "$tmp/svg.err")"
check svg '
assert [p["xlim"] for p in P] == [[0, 100]] * 2 and P[0]["ylim"] == [0.5, 1], [(p["xlim"], p["ylim"]) for p in P]
assert [p["yscale"] for p in P] == ["linear", "linear"] and P[0]["ylabel"] == "Accuracy" and P[1]["xlabel"] == "Communication round"
assert len(L["entries"]) == 27 and "dsgd \u00b7 graph=cycle" in L["entries"], L["entries"][:4]  # 9 problems x 3 graphs
assert len({tuple(s) for s in L["styles"]}) == 27
'
"$py" -c "import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); assert r.tag.endswith('svg')" "$tmp/f.svg" \
  && grep -q "dsgd · graph=cycle" "$tmp/f.svg" && ok || bad "the SVG does not parse or lacks its legend text"

# --against a key whose values are words (gnuplot's figure failed on it): the values on the x axis
# --x bytes on its log axis: round 0 (no bytes yet) cannot be drawn; those points are left out
# (no flat line from the edge) and the figure says so
figure bytes --x bytes --plot "$tmp/bytes.png"
[ $? = 0 ] && grep -q "note: Top-1 accuracy: 24 points where bytes sent (all nodes) is 0 are left out (a log axis has no 0)" "$tmp/bytes.err" \
  && ok || bad "--x bytes: $(cat "$tmp/bytes.err")"
check bytes '
p = P[0]
assert p["xscale"] == "log", p["xscale"]
assert len(p["lines"]) == 27 and all(l["xmin"] > 0 for l in p["lines"]), [(l["label"], l["xmin"]) for l in p["lines"]]
assert len(d["notes"]) == 1, d["notes"]
'
figure against --against experiment.graph.type --target 0.9,0.99 --plot "$tmp/against.pdf"
[ $? = 0 ] && ok || bad "--against experiment.graph.type: $(cat "$tmp/against.err")"
check against '
assert P[0]["xticklabels"] == ["complete", "cycle", "random"], P[0]["xticklabels"]
assert P[0]["ylabel"] == "Rounds to reach the target" and P[0]["xlabel"] == "type"
assert len(L["entries"]) == 16 and "dsgt: Top-1 accuracy \u2265 0.9" in L["entries"], L["entries"]  # dsgd reaches neither
assert len({tuple(s) for s in L["styles"]}) == 16
'

# a path with a quote and a space
mkdir "$tmp/it's here"
figure quote --plot "$tmp/it's here/f.png" && [ -s "$tmp/it's here/f.png" ] && ok || bad "a path with a quote: $(cat "$tmp/quote.err")"
# --csv with --plot: the output is the CSV alone
figure csv --csv --plot "$tmp/csv.png" && awk -F, 'NR == 1 {n = NF} NF != n || /plot/ {exit 1}' "$tmp/csv.out" && ok \
  || bad "--csv --plot's output is not pure CSV: $(head -3 "$tmp/csv.out")"

# failures: exit 2, a message, and no file (nor a temporary one) left
mkdir "$tmp/fail" "$tmp/nomodule"
fails() { # expected-message COMPARE-ARGS...
  local want=$1
  shift
  "$dtrun" compare "$tmp/s" "$@" > "$tmp/fail.out" 2> "$tmp/fail.err"
  local rc=$?
  [ $rc = 2 ] && grep -q -- "$want" "$tmp/fail.err" && [ -z "$(ls -A "$tmp/fail")" ] && ok \
    || bad "compare $*: exit $rc (expected 2 with '$want'), $(head -3 "$tmp/fail.err"), left: $(ls -A "$tmp/fail")"
}
DTRUN_PYTHON=/nonexistent/python3 fails "needs Python 3 with matplotlib and pandas" --plot "$tmp/fail/a.png"
DTRUN_PYTHONPATH=$tmp/nomodule fails "No module named 'dtrun'" --plot "$tmp/fail/a.png"
fails "no group reaches any of the targets" --against experiment.graph.type --target 2 --plot "$tmp/fail/a.png"
fails "the low end must be below the high end" --ylim 1:0 --plot "$tmp/fail/a.png"
fails "the high end is not a number" --xlim 0:x --plot "$tmp/fail/a.png"
fails "is not one of the figure's metrics" --ylim consensus_error=0:1 --plot "$tmp/fail/a.png"
fails "give --plot" --facet graph
# (these ran before fails() was defined, and so never checked anything)
fails "--band: expected ci95, sd, sem, minmax or none, found 'std'" --band std --plot "$tmp/fail/a.png"
fails "--band shapes a figure" --band sd
fails "give one of them" --facet graph --against experiment.graph.type --target 0.9 --plot "$tmp/fail/a.png"
fails "did you mean experiment.graph.type" --facet experiment.graph.typ --plot "$tmp/fail/a.png"
fails "--log: expected auto, none, x, y or xy, found 'z'" --log z --plot "$tmp/fail/a.png"
fails "--label needs KEY=TEXT" --label dinno --plot "$tmp/fail/a.png"
fails "the folder $tmp/nowhere does not exist" --plot "$tmp/nowhere/a.png"
fails "--target consenus_error=...: no such metric; did you mean consensus_error?" --target consenus_error=0.1

# --target counts in top-1 whatever --metric shows, or in the metric it names, in that metric's
# direction (a consensus error is reached at or below X)
"$dtrun" compare "$tmp/s" --metric consensus_error --target 0.5 > "$tmp/t1.out" 2>&1
head -1 "$tmp/t1.out" | grep -q "round@0.5 " && grep -q "whose top1_accuracy reaches >= X" "$tmp/t1.out" && ok \
  || bad "a plain --target should count top-1's rounds: $(head -1 "$tmp/t1.out"; tail -1 "$tmp/t1.out")"
"$dtrun" compare "$tmp/s" --target consensus_error=0.05 --csv > "$tmp/t2.csv" 2>&1
"$dtrun" compare "$tmp/s" --target consensus_error=0.05 > "$tmp/t2.out" 2>&1
head -1 "$tmp/t2.out" | grep -q "round@consensus_error<=0.05" && grep -q "whose consensus_error reaches <= X" "$tmp/t2.out" \
  && PYTHONPATH=python "$py" - "$tmp/s" "$tmp/t2.csv" <<'PY' && ok || bad "--target consensus_error=0.05: $(head -2 "$tmp/t2.out")"
import sys
import pandas as pd
import dtrun
t = pd.read_csv(sys.argv[2], comment="#")
df = dtrun.load_runs(sys.argv[1])
# the first round where a run's mean over nodes is <= 0.05, averaged over the group's seeds
m = df.groupby(["problem", "graph", "experiment.seed", "round"], as_index=False)["consensus_error"].mean()
first = m[m.consensus_error <= 0.05].groupby(["problem", "graph", "experiment.seed"])["round"].min()
checked = 0
for _, row in t.iterrows():
    graph = row["run"].split("=", 1)[1]
    want = first[(first.index.get_level_values(0) == row["problem"]) & (first.index.get_level_values(1) == graph)]
    got = row["round_to_consensus_error_0_05"]
    assert row["round_to_consensus_error_0_05_seeds"] == len(want), (row["run"], row["problem"], len(want))
    assert (pd.isna(got) and want.empty) or abs(got - want.mean()) < 1e-9, (row["run"], row["problem"], got, want.mean())
    checked += not want.empty
assert checked > 10, checked
PY

# The table says what its range spans, shows a metric once, and LaTeX sets numbers in math mode
"$dtrun" compare "$tmp/s" --metric validation_loss > "$tmp/t3.out" 2>&1
head -1 "$tmp/t3.out" | grep -q "validation_loss  *seeds min-max  *consensus" && [ "$(head -1 "$tmp/t3.out" | grep -o "val" | wc -l)" = 1 ] \
  && ok || bad "--metric validation_loss: $(head -1 "$tmp/t3.out")"
"$dtrun" compare "$tmp/s" --latex > "$tmp/t4.tex" 2>&1
grep -q '& \$0.5398 \\pm 0.0163\$ & \$0.5322\$--\$0.5441\$ & \$1.1809\$ & \$5.904\\times10^{-2}\$ &' "$tmp/t4.tex" && ok \
  || bad "compare --latex: numbers not in math mode: $(sed -n 5p "$tmp/t4.tex")"
if command -v pdflatex > /dev/null; then
  printf '\\documentclass{article}\\begin{document}\n\\input{t4.tex}\n\\end{document}\n' > "$tmp/t4doc.tex"
  (cd "$tmp" && pdflatex -interaction=nonstopmode t4doc.tex > t4doc.log 2>&1) && ok || bad "the LaTeX table does not compile: $(grep -m3 '^!' "$tmp/t4doc.log")"
fi

# The Python API: load_runs is one row per evaluation and node with the swept values as columns;
# curves() gives compare's numbers (the final mean over seeds of every group, as --csv prints it)
"$dtrun" compare "$tmp/s" --csv > "$tmp/table.csv" || bad "compare --csv"
PYTHONPATH=python "$py" - "$tmp/s" "$tmp/table.csv" <<'PY' && ok || bad "dtrun.curves disagrees with compare"
import sys
import pandas as pd
import dtrun
df = dtrun.load_runs(sys.argv[1])
assert len(df) == 3 * 3 * 4 * (8 * 21 + 16), len(df)  # runs x nodes x evaluations
assert {"graph", "experiment.seed", "top1_accuracy", "problem", "algorithm", "node"} <= set(df.columns)
# columns NULL in every row (no network, no faults) are numbers, NaN, not objects of None
for c in ("sim_time", "messages_sent", "messages_lost", "messages_received"):
    assert df[c].dtype == "float64" and df[c].isna().all(), (c, df[c].dtype)
cv = dtrun.curves(df, ["top1_accuracy"], facet="graph")
table = pd.read_csv(sys.argv[2])
for _, row in table.iterrows():
    s = cv[(cv["problem"] == row["problem"]) & (cv["facet"] == row["run"].split("=")[1])]
    assert s["seeds"].iloc[0] == row["seeds"] == 3
    last = s.sort_values("x")["mean"].iloc[-1]
    assert abs(last - row["top1_accuracy_mean"]) < 1e-8, (row["run"], row["problem"], last, row["top1_accuracy_mean"])
fig = dtrun.draw_curves(cv, facet="graph")
assert len([a for a in fig.axes if a.get_gid() == "panel"]) == 3
PY
# an algorithm's colour does not depend on the order series come in (it was the order of first
# appearance, so folders listing problems differently coloured one algorithm two ways)
PYTHONPATH=python "$py" - <<'PY' && ok || bad "an algorithm's colour depends on the order of the series"
from dtrun.figures import Styles, PALETTE
algs = ["dsgt", "dsgd", "beer", "cadmm", "extra", "nids", "powergossip", "sgp", "choco", "gossip"]
a, b = Styles(), Styles()
ca = {x: a.get(("run1", x), x)["color"] for x in algs}
cb = {x: b.get(("run2", x), x)["color"] for x in reversed(algs)}
assert ca == cb, (ca, cb)
assert ca["cadmm"] == Styles().get("x", "dinno")["color"] == PALETTE[0]
assert len({ca[x] for x in ("cadmm", "dsgd", "dsgt", "gossip", "extra", "choco")}) == 6
PY

# Every kind of figure (scripts/figure_kinds.sh: plain, --facet, --against, --x bytes and sim_time,
# many panels, long names) at every --size, checked as a reviewer looks: every panel at least
# 1.5 in wide and 1 in high, no text past the figure's edge, no two tick labels of an axis on each
# other, one legend entry per series drawn, and the legend on no panel (so on no data)
DESCRIBE=1 scripts/figure_kinds.sh "$dtrun" "$tmp/kinds" paper slide > "$tmp/kinds.log" 2>&1 && ok \
  || bad "scripts/figure_kinds.sh: $(tail -3 "$tmp/kinds.log")"
"$py" - "$tmp/kinds" <<'PY' && ok || bad "a figure kind fails a layout check"
import glob, json, os, sys
def overlaps(a, b, tol=0.005):
    return a[0] < b[2] - tol and b[0] < a[2] - tol and a[1] < b[3] - tol and b[1] < a[3] - tol
files = sorted(glob.glob(os.path.join(sys.argv[1], "*.json")))
assert len(files) == 14, files  # 7 kinds x 2 sizes
bad = []
for f in files:
    d = json.load(open(f)); P, L = d["panels"], d["legend"]; W, H = d["size"]; k = os.path.basename(f)
    for p in P:
        if p["width_in"] < 1.5 or p["height_in"] < 1.0:
            bad.append(f"{k}: panel {p['title']!r} is {p['width_in']} x {p['height_in']} in")
        for ticks in (p["xticks_in"], p["yticks_in"]):
            if any(overlaps(a, b) for i, a in enumerate(ticks) for b in ticks[i + 1:]):
                bad.append(f"{k}: tick labels of panel {p['title']!r} overlap")
    for b in d["texts_in"]:
        if b[0] < -0.01 or b[1] < -0.01 or b[2] > W + 0.01 or b[3] > H + 0.01:
            bad.append(f"{k}: a text at {b} leaves the {W} x {H} in figure")
    series = {l["label"] for p in P for l in p["lines"]}
    if len(L["entries"]) != len(series):
        bad.append(f"{k}: {len(L['entries'])} legend entries for {len(series)} series")
    if any(overlaps(p["box_in"], L["box_in"]) for p in P):
        bad.append(f"{k}: the legend covers a panel")
assert not bad, bad
PY

echo "figures: $pass ok, $fail failed"
[ $fail = 0 ]
