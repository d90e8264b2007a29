#!/usr/bin/env bash
# Result files of the refactor guard set, for comparing two builds byte for byte (timing columns
# aside): configs/dist_mnist.yaml (also with individual_training), configs/dist_mnist_paper.yaml
# cut to 200 rounds, tests/e2e/small.yaml, the simulated network's cases (tests/e2e/lossy.yaml:
# loss, failing links and churn for every algorithm that runs under them; async.yaml, also with
# lossy.yaml's faults; directed.yaml; schedules.yaml), at P = 1 and P = 5, and the convex suite's
# result lines at P = 1 and P = 5.
# usage: tests/identity/run.sh BUILD_DIR OUT_DIR      (run from the source root of that build)
#        tests/identity/compare.sh OUT_A OUT_B
set -euo pipefail
build=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
out=$(cd "$out" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
paper_sets=()
for p in problem1 problem2 problem3; do paper_sets+=(--set "problem_configs.$p.optimizer_config.outer_iterations=200"); done
run() { # name config [args...]
  local name=$1 cfg=$2
  shift 2
  "$build/dtrun" "$cfg" "$@" --output-dir "$out/${name}_p1" --quiet > /dev/null
  mpirun --oversubscribe -np 5 "$build/dtrun" "$cfg" "$@" --output-dir "$out/${name}_p5" --quiet > /dev/null
}
run dist configs/dist_mnist.yaml
run dist_solo configs/dist_mnist.yaml --set experiment.individual_training.train_solo=true --set experiment.individual_training.epochs=1
run paper configs/dist_mnist_paper.yaml "${paper_sets[@]}"
run small tests/e2e/small.yaml
run lossy tests/e2e/lossy.yaml
run async tests/e2e/async.yaml
run async_lossy tests/e2e/async.yaml --set experiment.network.loss=0.2 --set experiment.network.link_up_rounds=15 \
  --set experiment.network.link_down_rounds=3 --set experiment.network.node_up_rounds=12 --set experiment.network.node_down_rounds=4
run directed tests/e2e/directed.yaml
run schedules tests/e2e/schedules.yaml
for p in 1 5; do
  # sorted: the cases' order is not a result (it follows the optimizer registry since the cases
  # moved into the plug-ins' folders)
  mpirun --oversubscribe -np $p "$build/tests/test_convex" | grep '^result:' | sort > "$out/convex_p$p.txt"
done
echo "results in $out"
