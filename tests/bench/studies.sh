#!/usr/bin/env bash
# The two shipped studies in full, and the README's figures from them:
#   configs/dinno_figure.yaml  12 points (4 graphs x 3 seeds), DiNNO + DSGT + DSGD, 10 nodes, 2000 rounds
#   configs/scaling.yaml       10 points, DiNNO, geometric graphs at a Fiedler target, N from 10 to 100
# Prints each sweep's wall time and the compare tables; writes docs/figures/*.png (and .pdf).
# An existing OUT/dinno_figure or OUT/scaling folder is resumed, not rerun.
# usage: tests/bench/studies.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath "${1:-$root/build}")
out=$(realpath -m "${2:-$root/outputs/studies}")
cd "$root"
mkdir -p "$out" docs/figures
study() { # name
  local t0=$(date +%s.%N)
  if [ -f "$out/$1/sweep.yaml" ]; then "$build/dtrun" resume "$out/$1" --quiet > "$out/$1.log"
  else "$build/dtrun" "configs/$1.yaml" --output-dir "$out/$1" --quiet > "$out/$1.log"; fi
  printf '%s: %.0f s\n' "$1" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')"
}
study dinno_figure
"$build/dtrun" compare "$out/dinno_figure" --target 0.9,0.97
# as the paper draws it: a panel per graph (the sweep's axis), the metrics one above the other
names=(--label dinno=DiNNO --label dsgt=DSGT --label dsgd=DSGD --label complete=Complete --label cycle=Cycle
       --label "random-0.7=Random, Fiedler 0.7" --label "random-5.8=Random, Fiedler 5.8")
"$build/dtrun" compare "$out/dinno_figure" --metric top1_accuracy,consensus_error --facet graph "${names[@]}" --size slide \
  --plot docs/figures/dinno_figure.png > /dev/null
"$build/dtrun" compare "$out/dinno_figure" --metric top1_accuracy,consensus_error --facet graph "${names[@]}" \
  --plot docs/figures/dinno_figure.pdf > /dev/null
study scaling
"$build/dtrun" compare "$out/scaling" --target 0.5,0.9,0.97 --against experiment.graph.num_nodes --where experiment.graph.fiedler=1
"$build/dtrun" compare "$out/scaling" --target 0.5,0.9,0.97 --against experiment.graph.fiedler --where experiment.graph.num_nodes=20
for ext in png pdf; do
  "$build/dtrun" compare "$out/scaling" --target 0.5,0.9,0.97 --against experiment.graph.num_nodes --label num_nodes=Nodes \
    --label dinno=DiNNO --where experiment.graph.fiedler=1 --plot docs/figures/scaling_nodes.$ext > /dev/null
  "$build/dtrun" compare "$out/scaling" --target 0.5,0.9,0.97 --against experiment.graph.fiedler --label fiedler="Fiedler value" \
    --label dinno=DiNNO --where experiment.graph.num_nodes=20 --plot docs/figures/scaling_fiedler.$ext > /dev/null
done
echo "figures in docs/figures"
