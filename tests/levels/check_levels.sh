#!/usr/bin/env bash
# The levels hold (README "Architecture"): no file includes the header of a level above its own,
# no level reaches into src/'s private headers, and no loop over parameter entries lives outside
# src/backend (every update is a backend op). The link half of the rule is in meson.build
# (level_check_*): a call into a higher level does not link. And every function a header declares
# returning dt_status is DT_MUST_USE.
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
# The run context's insides (optimizers/run_impl.h) are the run services' alone: plug-ins, their
# helpers and the runner use dt/optimizer.h's accessors (the header also refuses to compile
# without DT_RUN_SERVICES, which only the dt_run library defines).
for f in optimizers/*/ optimizers/exact.c optimizers/compression.c optimizers/local_step.c optimizers/registry.c experiments tests; do
  forbid "$f" '#include "[^"]*run_impl\.h"' "a plug-in, helper, the runner or a test includes the run services' private header"
done
for level in problems optimizers experiments; do
  forbid "$level" '#include "(\.\./)+src/' "$level/ reaches into src/'s private headers"
done
# Loops over a vector's entries (bounded by a dim, len or d) outside the backend. Allowed: the
# transport's rank-0 accumulation of received host copies (comm.c), which does not touch backend
# memory.
loops=$(grep -rnE --include='*.c' 'for \([a-z_ ]+ [a-z]+ = 0; [a-z]+ < [a-z_>.-]*(dim|len|d)\b' \
          src problems optimizers experiments |
        grep -vE '^src/backend/|^src/graph/comm\.c:.*s->out\[i\] \+= x\[i\]' || true)
if [ -n "$loops" ]; then
  printf 'levels: a loop over vector entries outside src/backend (use a backend op):\n%s\n' "$loops" >&2
  fail=1
fi
# Every function that returns a dt_status is declared DT_MUST_USE (include/dt/status.h), so that a
# dropped status is a build error: each declaration or definition in a header (static inline ones
# and those a macro generates included), with DT_MUST_USE before the return type on its line, or
# ending the line above. Pointers to such functions (dt_status (*fn)(...)) are left alone.
headers=$(find include src problems optimizers experiments \( -name '*.h' -o -name '*.cuh' \) | sort)
unmarked=$(awk '
  FNR == 1 { state = 0; prev = "" }
  { # the line without comments and literals (state: 0 code, 1 block comment)
    s = $0; code = ""
    while (s != "") {
      if (state == 1) {
        i = index(s, "*/"); if (i == 0) { s = ""; break }
        s = substr(s, i + 2); state = 0; code = code " "; continue
      }
      c = substr(s, 1, 1); two = substr(s, 1, 2)
      if (two == "/*") { state = 1; s = substr(s, 3); continue }
      if (two == "//") break
      if (c == "\"" || c == "\047") { # skip a literal, escapes included
        j = 2
        while (j <= length(s) && substr(s, j, 1) != c) j += (substr(s, j, 1) == "\\") ? 2 : 1
        s = substr(s, j + 1); code = code " 0 "; continue
      }
      code = code c; s = substr(s, 2)
    }
    head = 0
    if (code !~ /typedef/) {
      if (match(code, /(^|[^A-Za-z0-9_])dt_status[ \t*]+[A-Za-z_][A-Za-z0-9_#]*[ \t]*(\(|DT_OP_PARAMS)/)) head = 1
      else if (code ~ /^[ \t]*((static|inline|extern)[ \t]+)*dt_status[ \t*]*$/) { head = 1; RSTART = index(code, "dt_status") }
    }
    if (head) {
      start = RSTART; if (substr(code, start, 9) != "dt_status") start++
      before = substr(code, 1, start - 1)
      if (before !~ /(^|[^A-Za-z0-9_])DT_MUST_USE([^A-Za-z0-9_]|$)/ &&
          !(before ~ /^[ \t]*((static|inline|extern)[ \t]+)*$/ && prev ~ /(^|[^A-Za-z0-9_])DT_MUST_USE[ \t]*$/))
        printf "%s:%d: %s\n", FILENAME, FNR, $0
    }
    if (code !~ /^[ \t]*$/) prev = code
  }' $headers)
if [ -n "$unmarked" ]; then
  printf 'levels: a function returning dt_status declared without DT_MUST_USE (add it before the return type):\n%s\n' "$unmarked" >&2
  fail=1
fi
# Each library where its level may use it (meson.build gives each level only its own
# dependencies, but system headers such as <sqlite3.h> sit on every include path): MPI in the
# core's transport and wrappers, SQLite in the runner, libyaml in the config, igraph in the graph
# generators, zlib in the IDX reader, CUDA in its backend.
only_in() { # HEADER_REGEX ALLOWED_PATH_REGEX WHAT
  local hits
  hits=$(grep -rnE --include='*.c' --include='*.h' --include='*.cu' "#include <($1)" src problems optimizers experiments |
         grep -vE "^($2)" || true)
  if [ -n "$hits" ]; then
    printf 'levels: %s\n%s\n' "$3" "$hits" >&2
    fail=1
  fi
}
only_in 'mpi\.h' 'src/graph/|src/core/wrap\.c' "<mpi.h> outside the core's transport (src/graph, src/core/wrap.c): use the exchange services"
only_in 'sqlite3\.h' 'experiments/' "<sqlite3.h> below the runner"
only_in 'yaml\.h' 'src/config/' "<yaml.h> outside src/config"
only_in 'igraph\.h' 'src/graph/' "<igraph.h> outside src/graph"
only_in 'zlib\.h' 'src/data/' "<zlib.h> outside src/data"
only_in 'cuda|cublas' 'src/backend/cuda/' "CUDA headers outside src/backend/cuda"
# A plug-in's traffic goes through the run's exchange services (optimizers/run_ctx.c, mix.c),
# which time it and count its bytes; no plug-in calls the transport itself.
raw=$(grep -rnE '\bdt_comm_[a-z_]+\(' optimizers/*/ || true)
if [ -n "$raw" ]; then
  printf 'levels: a plug-in calls the transport (use the dt_run_* exchange services):\n%s\n' "$raw" >&2
  fail=1
fi
[ $fail -eq 0 ] && echo "levels: every include points down, each library in its level, no parameter loop outside src/backend, every dt_status DT_MUST_USE"
exit $fail
