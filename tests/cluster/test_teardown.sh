#!/usr/bin/env bash
# The cluster leaves nothing behind, also when its test is killed: a cluster test (lib.sh)
# with a daemon running on a host is SIGKILLed; within seconds no process of it is left and
# no namespace of it is visible. Skipped (77) where namespaces cannot be made.
# usage: test_teardown.sh    (test_teardown.sh --probe MARK READY_FILE is the killed test)
set -u
. "$(dirname "$0")/lib.sh"
if [ "${1:-}" = --probe ]; then
  cluster_enter "$@"
  cluster_up 2
  on_host h2 setsid sh -c 'sleep 1000' "dtc-probe-$2" &   # a daemon on host h2
  on_host h1 sh -c 'sleep 1000' "dtc-probe-$2" &
  sleep 0.5
  echo "$DTC_DIR" > "$3"
  wait
  exit 0
fi
cluster_require
mark=$$-$RANDOM
ready=$(mktemp)
rm -f "$ready"
"$0" --probe "$mark" "$ready" &
probe=$!
for ((t = 0; t < 200; t++)); do [ -s "$ready" ] && break; sleep 0.1; done
fail=0
[ -s "$ready" ] || { echo "FAIL: the probe cluster did not come up"; fail=1; }
[ "$(pgrep -f -c "dtc-probe-$mark")" = 2 ] || { echo "FAIL: the probe's two processes are not running"; fail=1; }
dir=$(cat "$ready" 2>/dev/null)
kill -9 $probe
wait $probe 2>/dev/null
for ((t = 0; t < 50; t++)); do [ "$(pgrep -f -c "dtc-probe-$mark")" = 0 ] && break; sleep 0.1; done
left=$(pgrep -af "dtc-probe-$mark")
[ -z "$left" ] || { echo "FAIL: processes left after the test was killed: $left"; fail=1; }
ip netns list 2>/dev/null | grep -q dtc- && { echo "FAIL: namespaces visible after the test: $(ip netns list)"; fail=1; }
grep -q "dtcluster" /proc/mounts && { echo "FAIL: mounts left: $(grep dtcluster /proc/mounts)"; fail=1; }
rm -rf "$ready" "$dir"
[ $fail = 0 ] && echo "cluster teardown: nothing left after SIGKILL"
exit $fail
