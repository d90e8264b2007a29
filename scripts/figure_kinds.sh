#!/usr/bin/env bash
# Every kind of figure `dtrun compare --plot` draws, on a synthetic sweep (tests/e2e/make_results.py:
# 3 graphs x 3 seeds, 9 algorithms, a simulated clock): plain, --facet, --against, --x bytes,
# --x sim_time, many panels, long names; at each size given (default paper). The figure tests
# (tests/e2e/figures.sh) check each one from matplotlib's layout; docs/figures/kinds/ holds the
# paper-size PNGs, made by
#   scripts/figure_kinds.sh build/dtrun docs/figures/kinds paper
# With DESCRIBE=1 each figure's description (python/dtrun/figures.py describe()) goes beside it
# as KIND-SIZE.json.
# usage: figure_kinds.sh DTRUN OUTDIR [SIZE...]
set -eu
dtrun=$(realpath "$1") out=$2
shift 2
sizes=${*:-paper}
root=$(cd "$(dirname "$0")/.." && pwd)
py=$(sed -n 's/^#define DT_PYTHON "\(.*\)"$/\1/p' "$(dirname "$dtrun")/include/dt_config.h" 2>/dev/null || true)
mkdir -p "$out"
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
"${py:-python3}" "$root/tests/e2e/make_results.py" "$data/s" --sim-time
long=(--label "dsgd=Decentralized SGD with Nesterov momentum and weight decay"
      --label "dsgt=Gradient tracking with the tracker initialised at the first gradient")
status=0
for size in $sizes; do
  while IFS='|' read -r kind args; do
    # shellcheck disable=SC2086 # args: the kind's options, split on spaces
    if [ "$kind" = long ]; then set -- $args "${long[@]}"; else set -- $args; fi
    describe=()
    [ "${DESCRIBE:-0}" = 1 ] && describe=(env "DTRUN_PLOT_DESCRIBE=$out/$kind-$size.json")
    "${describe[@]}" "$dtrun" compare "$data/s" "$@" --size "$size" --plot "$out/$kind-$size.png" > "$data/log" 2>&1 \
      || { echo "figure $kind at $size: $(tail -2 "$data/log")" >&2; status=1; }
  done <<'KINDS'
plain|--metric top1_accuracy --where experiment.graph.type=cycle
facet|--metric top1_accuracy,consensus_error --facet graph
against|--against experiment.graph.type --target 0.9,0.99
bytes|--x bytes --metric top1_accuracy,consensus_error --where experiment.graph.type=cycle
sim_time|--x sim_time --metric top1_accuracy --facet graph
many|--metric top1_accuracy,validation_loss,consensus_error
long|--metric top1_accuracy --where experiment.graph.type=cycle,complete
KINDS
done
exit $status
