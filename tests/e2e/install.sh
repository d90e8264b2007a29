#!/usr/bin/env bash
# meson install --destdir: the tree holds dtrun (whose --help works), the bash completion (which
# completes in a bash started here), the zsh completion, a manual page that man renders and groff
# reads without a warning, the Python results module (importable) and the example configs.
# usage: install.sh DTRUN MPIEXEC SOURCE_ROOT
set -u
. "$(dirname "$0")/../checks.sh"
e2e_start "$@"
build=$(dirname "$dtrun")
meson install -C "$build" --destdir "$tmp/root" --quiet > "$tmp/install.log" 2>&1 || { bad "meson install: $(tail -5 "$tmp/install.log")"; exit 1; }
prefix=$(meson introspect "$build" --buildoptions | python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
share=$tmp/root$prefix/share
bin=$tmp/root$prefix/bin/dtrun
"$bin" --help > "$tmp/help" 2>&1 && grep -q "^commands:" "$tmp/help" && ok || bad "the installed dtrun --help: $(head -3 "$tmp/help")"
"$bin" help compare | grep -q -- "--facet" && ok || bad "the installed dtrun help compare"
comp=$share/bash-completion/completions/dtrun
[ -f "$comp" ] && [ "$(bash --norc --noprofile -c 'source "$1"; COMP_WORDS=(dtrun compare --fa); COMP_CWORD=2; _dtrun; echo "${COMPREPLY[*]}"' _ "$comp" 2>/dev/null)" = "--facet" ] \
  && ok || bad "the installed bash completion does not complete"
head -1 "$share/zsh/site-functions/_dtrun" 2>/dev/null | grep -q "^#compdef dtrun" && ok || bad "no zsh completion installed"
man=$share/man/man1/dtrun.1
[ -f "$man" ] && [ -z "$(groff -man -Tutf8 -ww -Wbreak -z "$man" 2>&1)" ] && ok || bad "the man page: $(groff -man -Tutf8 -ww -Wbreak -z "$man" 2>&1 | head -3)"
MANWIDTH=100 man -l "$man" 2>/dev/null > "$tmp/man.txt"
grep -q "EXIT STATUS" "$tmp/man.txt" && grep -q "experiment.graph.num_nodes" "$tmp/man.txt" && grep -q -- "--facet" "$tmp/man.txt" && ok \
  || bad "man -l does not show the exit codes, the config keys and compare's options"
[ -f "$share/dtrun/configs/dist_mnist.yaml" ] && [ -f "$share/dtrun/configs/README.md" ] && ok || bad "the example configs are not installed"
init=$(find "$tmp/root" -path '*/dtrun/__init__.py' | head -1)
[ -n "$init" ] && PYTHONPATH=$(dirname "$(dirname "$init")") "${DTRUN_PYTHON:-/usr/bin/python3}" -c "import dtrun; dtrun.load_runs" && ok \
  || bad "the Python module is not installed where it imports: ${init:-none}"
# ... and where that Python looks by default (a clean environment, outside the checkout), for
# the prefix the build installs to (scripts/setup.sh --install: /usr/local)
site=${init#"$tmp/root"}
site=$(dirname "$(dirname "$site")")
(cd / && env -i "${DTRUN_PYTHON:-/usr/bin/python3}" -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' "$site") && ok \
  || bad "the module went to $site, which ${DTRUN_PYTHON:-/usr/bin/python3} does not search (prefix $prefix)"

echo "install: $pass ok, $fail failed"
[ $fail = 0 ]
