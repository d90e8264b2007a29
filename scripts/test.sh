#!/usr/bin/env bash
# Runs dtrun's whole test suite: makes sure everything is set up (scripts/setup.sh, fast when
# nothing changed), then runs every meson suite. Extra arguments go to `meson test`
# (e.g. --suite unit).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --with-torch
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec meson test -C build --print-errorlogs "$@"
