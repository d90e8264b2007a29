#!/usr/bin/env bash
# Runs one libFuzzer harness for DT_FUZZ_SECONDS (default 60) from a copy of its checked-in
# corpus (libFuzzer adds what it finds to the copy, never to the source tree). A finding fails
# the test; the input that triggered it is kept beside the build and its path printed, to be
# fixed and then added to the corpus.
#
# usage: run_fuzz.sh HARNESS CORPUS_DIR [extra libFuzzer options]
set -euo pipefail
harness=$1 corpus=$2
shift 2
name=$(basename "$harness")
work=${DT_FUZZ_WORK:-$(dirname "$harness")/fuzz-work}/$name
mkdir -p "$work/corpus" "$work/artifacts"
cp -n "$corpus"/* "$work/corpus/" 2>/dev/null || true
jobs=${DT_FUZZ_JOBS:-1}
extra=()
[ "$jobs" -gt 1 ] && extra=(-fork="$jobs")
echo "$name: ${DT_FUZZ_SECONDS:-60} s from $(ls "$work/corpus" | wc -l) inputs in $work/corpus"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
set +e
"$harness" "$work/corpus" -max_total_time="${DT_FUZZ_SECONDS:-60}" -timeout=10 -rss_limit_mb=2560 -max_len=16384 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "${extra[@]}" "$@" 2>&1 | tail -n 40
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" != 0 ] || [ -n "$(ls -A "$work/artifacts")" ]; then
  echo "$name: FINDING (exit $rc); inputs: $(ls -d "$work"/artifacts/* 2>/dev/null | tr '\n' ' ')"
  exit 1
fi
