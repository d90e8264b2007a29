#!/bin/sh
# OpenMPI's launch agent for the namespace cluster (lib.sh), in place of ssh: mpirun runs
# `agent.sh HOST COMMAND...` to start its daemon on HOST; like ssh, the command is one shell
# line. DTC_DIR (from lib.sh) holds the hosts' UTS namespaces.
host=$1
shift
exec nsenter --net="/run/netns/dtc-$host" --uts="$DTC_DIR/uts-$host" -- /bin/sh -c "$*"
