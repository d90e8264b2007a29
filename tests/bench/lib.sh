# What the alternating benchmarks (exact.sh, async.sh, startup.sh) share; sourced, not run.
# root: the source tree these scripts belong to.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# bench_args DEFAULT_ROUNDS ARG...: the builds to compare (absolute paths; default $root/build)
# into `builds`, and the number of alternated rounds (a bare number among the arguments) into
# `rounds`.
bench_args() {
  rounds=$1
  shift
  builds=()
  local a
  for a in "$@"; do
    if [[ $a =~ ^[0-9]+$ ]]; then rounds=$a; else builds+=("$(cd "$a" && pwd)"); fi
  done
  [ ${#builds[@]} -gt 0 ] || builds=("$root/build")
}
