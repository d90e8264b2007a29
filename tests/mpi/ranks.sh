#!/usr/bin/env bash
# Runs an MPI test program at several rank counts and checks that the lines it prints starting
# with "result:" are identical for every count: the placement-independence promise.
# usage: ranks.sh MPIEXEC "P1 P2 ..." PROGRAM [ARGS...]
set -u
mpiexec=$1 counts=$2
shift 2
ref="" ref_p="" status=0
for p in $counts; do
  out=$("$mpiexec" --oversubscribe -n "$p" "$@" 2>&1)
  rc=$?
  echo "== P=$p (exit $rc)"
  echo "$out"
  if [ $rc -ne 0 ]; then status=1; continue; fi
  res=$(grep '^result:' <<< "$out")
  if [ -z "$ref_p" ]; then ref=$res ref_p=$p
  elif [ "$res" != "$ref" ]; then
    echo "FAIL: results with P=$p differ from P=$ref_p:"
    diff <(echo "$ref") <(echo "$res")
    status=1
  fi
done
exit $status
