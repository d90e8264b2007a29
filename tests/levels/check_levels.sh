#!/usr/bin/env bash
# The levels hold (README "Architecture"): no file includes the header of a level above its own,
# no level reaches into src/'s private headers, and no loop over parameter entries lives outside
# src/backend (every update is a backend op). The link half of the rule is in meson.build
# (level_check_*): a call into a higher level does not link.
set -uo pipefail
cd "${1:-$(dirname "$0")/../..}"
fail=0
forbid() { # forbid FOLDER PATTERN WHY
  local hits
  hits=$(grep -rnE --include='*.c' --include='*.h' --include='*.cu' "$2" "$1" || true)
  if [ -n "$hits" ]; then
    printf 'levels: %s\n%s\n' "$3" "$hits" >&2
    fail=1
  fi
}
above_core='#include "(dt/(problem|optimizer|run)\.h|\.\./+(problems|optimizers|experiments)/)'
forbid src "$above_core" "the core (src/) includes a problem, optimizer or runner header"
forbid problems '#include "(dt/(optimizer|run)\.h|\.\./+(optimizers|experiments)/)' \
  "a problem includes an optimizer or runner header"
forbid optimizers '#include "(dt/run\.h|\.\./+experiments/)' "an optimizer includes a runner header"
for level in problems optimizers experiments; do
  forbid "$level" '#include "(\.\./)+src/' "$level/ reaches into src/'s private headers"
done
# Loops over a vector's entries (bounded by a dim, len or d) outside the backend. Allowed: the
# transport's rank-0 accumulation of received host copies (comm.c) and the uint8 → float batch
# decoding of images (idx.c); neither touches backend memory.
loops=$(grep -rnE --include='*.c' 'for \([a-z_ ]+ [a-z]+ = 0; [a-z]+ < [a-z_>.-]*(dim|len|d)\b' \
          src problems optimizers experiments |
        grep -vE '^src/backend/|^src/graph/comm\.c:.*s->out\[i\] \+= x\[i\]|^src/data/idx\.c:.*lut\[src\[p\]\]|^experiments/compare\.c:.*plot\.len' || true)
if [ -n "$loops" ]; then
  printf 'levels: a loop over vector entries outside src/backend (use a backend op):\n%s\n' "$loops" >&2
  fail=1
fi
[ $fail -eq 0 ] && echo "levels: every include points down, no parameter loop outside src/backend"
exit $fail
