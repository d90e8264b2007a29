# A cluster inside this machine, for the cluster suite (sourced by its tests).
#
# Hosts h1..hN are Linux network namespaces, each with its own UTS namespace (hostname hI),
# address 10.77.0.I/24 on eth0, and a veth into a bridge that lives in a namespace of its own
# (the switch). Names resolve through an /etc/hosts that exists only for this test. OpenMPI
# reaches the hosts through a launch agent (agent.sh: nsenter into the host's namespaces, where
# a real cluster would use ssh) and talks TCP between hosts, shared memory inside one.
#
# Teardown cannot be forgotten: the test re-executes itself as the first process of a PID
# namespace with a private mount namespace (cluster_enter). When it ends, however it ends (a
# failure, a timeout's SIGKILL), the kernel kills every process it started — daemons, ranks,
# OpenMPI's and SLURM's — and, as the namespaces' handles live on a tmpfs of that mount
# namespace only, drops the hosts, their links and the switch. Nothing is changed outside.
#
# Needs root, unshare/nsenter (util-linux) and ip (iproute2); where namespaces cannot be made
# the test exits 77 and says why.

DTC_SUBNET=10.77.0

cluster_skip() { echo "SKIP: $*"; exit 77; }

# cluster_require: skips the test (77, saying why) where the cluster cannot be made.
cluster_require() {
  [ "$(id -u)" = 0 ] || cluster_skip "the cluster suite needs root (network namespaces)"
  for c in unshare nsenter ip mount; do
    command -v "$c" >/dev/null || cluster_skip "no $c (util-linux, iproute2)"
  done
  local why
  why=$(unshare --net --uts --mount --pid --fork true 2>&1) || cluster_skip "cannot create namespaces here: $why"
}

# cluster_enter "$@": first thing a test calls. Checks what the cluster needs, then runs the
# test again in its own PID and mount namespaces (once).
cluster_enter() {
  if [ -n "${DTC_INSIDE:-}" ]; then return 0; fi
  cluster_require
  DTC_INSIDE=1 exec unshare --pid --fork --kill-child --mount-proc --propagation private "$0" "$@"
}

# ---- checks the tests share: ok / bad count, same_results compares two run folders ---------
. "$(dirname "${BASH_SOURCE[0]}")/../checks.sh"

# cluster_up N [SLOTS...]: hosts h1..hN (SLOTS: each host's slots in the hostfile, default 2).
cluster_up() {
  local n=$1 i
  shift
  DTC_DIR=$(mktemp -d /tmp/dtcluster.XXXXXX)
  export DTC_DIR DTC_HOSTS=$n
  trap cluster_down EXIT
  mkdir -p /run/netns
  mount -t tmpfs dtcluster /run/netns # handles visible to this test only
  ip netns add dtc-sw
  ip -n dtc-sw link set lo up
  ip -n dtc-sw link add br0 type bridge
  ip -n dtc-sw link set br0 up
  printf '127.0.0.1 localhost\n' > "$DTC_DIR/hosts"
  : > "$DTC_DIR/hostfile"
  for ((i = 1; i <= n; i++)); do
    ip netns add "dtc-h$i"
    ip link add eth0 netns "dtc-h$i" type veth peer name "h$i" netns dtc-sw
    ip -n dtc-sw link set "h$i" master br0 up
    ip -n "dtc-h$i" addr add "$DTC_SUBNET.$i/24" dev eth0
    ip -n "dtc-h$i" link set eth0 up
    ip -n "dtc-h$i" link set lo up
    touch "$DTC_DIR/uts-h$i"
    unshare --uts="$DTC_DIR/uts-h$i" hostname "h$i"
    echo "$DTC_SUBNET.$i h$i" >> "$DTC_DIR/hosts"
    echo "h$i slots=${1:-2}" >> "$DTC_DIR/hostfile"
    [ $# -gt 0 ] && shift
  done
  mount --bind "$DTC_DIR/hosts" /etc/hosts
}

# on_host hI CMD...: runs CMD on host hI (its network and hostname).
on_host() {
  local h=$1
  shift
  nsenter --net="/run/netns/dtc-$h" --uts="$DTC_DIR/uts-$h" -- "$@"
}

# cluster_mpirun ARGS...: mpirun on h1 with the cluster's hostfile, launch agent and networks,
# stopped after DTC_TIMEOUT seconds (default 600).
cluster_mpirun() {
  on_host h1 timeout "${DTC_TIMEOUT:-600}" mpirun --hostfile "$DTC_DIR/hostfile" \
    --mca plm_rsh_agent "$(dirname "${BASH_SOURCE[0]}")/agent.sh" \
    --mca oob_tcp_if_include "$DTC_SUBNET.0/24" --mca btl_tcp_if_include "$DTC_SUBNET.0/24" "$@"
}

# cluster_netem DELAY_MS LOSS: every packet a host receives on eth0 waits DELAY_MS and is lost
# with probability LOSS (netdelay through NFQUEUE; the kernel here has no netem): each link
# direction gets the delay once, a round trip twice.
# cluster_netem off: back to the plain links; prints what each host's netdelay did.
cluster_netem() {
  local i
  if [ "$1" = off ]; then
    for ((i = 1; i <= DTC_HOSTS; i++)); do
      on_host "h$i" iptables -D INPUT -i eth0 -j NFQUEUE --queue-num 0
    done
    [ -n "${DTC_NETEM_PIDS:-}" ] && kill $DTC_NETEM_PIDS && wait $DTC_NETEM_PIDS 2>/dev/null
    DTC_NETEM_PIDS=
    cat "$DTC_DIR"/netdelay-h*.log
    return 0
  fi
  command -v iptables >/dev/null || { echo "no iptables (Debian package iptables)"; return 1; }
  [ -x "$DTC_NETDELAY" ] || { echo "no netdelay program (needs libnetfilter-queue-dev at build time)"; return 1; }
  DTC_NETEM_PIDS=
  for ((i = 1; i <= DTC_HOSTS; i++)); do
    nsenter --net="/run/netns/dtc-h$i" -- "$DTC_NETDELAY" --delay-ms "$1" --loss "$2" --seed "$i" > "$DTC_DIR/netdelay-h$i.log" 2>&1 &
    DTC_NETEM_PIDS="$DTC_NETEM_PIDS $!"
  done
  for ((i = 1; i <= DTC_HOSTS; i++)); do # queue first, then the rule: no packet meets no reader
    local tries=0
    until grep -q '^netdelay: queue' "$DTC_DIR/netdelay-h$i.log" 2>/dev/null; do
      tries=$((tries + 1))
      [ $tries -gt 100 ] && { cat "$DTC_DIR/netdelay-h$i.log"; return 1; }
      sleep 0.05
    done
    on_host "h$i" iptables -A INPUT -i eth0 -j NFQUEUE --queue-num 0 || return 1
  done
}

# cluster_kill_host hI: every process on host hI dies at once (a host that fails).
cluster_kill_host() {
  ip netns pids "dtc-$1" | xargs -r kill -9
}

cluster_down() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
  done
  if [ -n "${DTC_DIR:-}" ]; then
    umount "$DTC_DIR"/uts-h* 2>/dev/null
    rm -rf "$DTC_DIR"
  fi
}

# ---- SLURM on the cluster: slurmctld on h1, a slurmd on every host, one munged --------------

# slurm_up: installs Debian's slurm-wlm and munge when missing (apt-get), then starts the
# daemons with a configuration of this test's own (nothing under /etc is used or changed).
slurm_up() {
  local i missing=
  command -v slurmctld >/dev/null || missing="$missing slurm-wlm"
  command -v munged >/dev/null || missing="$missing munge"
  if [ -n "$missing" ]; then
    echo "installing$missing"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing > "$DTC_DIR/apt.log" 2>&1 \
      || { tail -5 "$DTC_DIR/apt.log"; return 1; }
  fi
  local s=$DTC_DIR/slurm
  mkdir -p "$s/state" "$s/munge"
  chmod 700 "$s/munge"
  head -c 1024 /dev/urandom > "$s/munge/munge.key"
  chmod 400 "$s/munge/munge.key"
  on_host h1 munged --force --socket="$s/munge/socket" --key-file="$s/munge/munge.key" --pid-file="$s/munge/pid" \
    --log-file="$s/munge/log" --seed-file="$s/munge/seed" || { cat "$s/munge/log"; return 1; }
  cat > "$s/slurm.conf" <<CONF
ClusterName=dtcluster
SlurmctldHost=h1
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$s/munge/socket
CredType=cred/munge
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool-%n
TmpFS=$s/tmp-%n
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd-%n.pid
SlurmctldLogFile=$s/slurmctld.log
SlurmdLogFile=$s/slurmd-%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
KillWait=10
InactiveLimit=0
SlurmdTimeout=30
NodeName=h[1-$DTC_HOSTS] CPUs=2 State=UNKNOWN
PartitionName=dtc Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$s/slurm.conf
  on_host h1 slurmctld -i || { cat "$s/slurmctld.log"; return 1; }
  for ((i = 1; i <= DTC_HOSTS; i++)); do
    mkdir -p "$s/spool-h$i" "$s/tmp-h$i" # each host's own spool and /tmp (PMIx puts files there)
    on_host "h$i" slurmd || { cat "$s/slurmd-h$i.log"; return 1; }
  done
  local tries=0
  until [ "$(on_host h1 sinfo -h -o '%T %D' 2>/dev/null)" = "idle $DTC_HOSTS" ]; do
    tries=$((tries + 1))
    if [ $tries -gt 300 ]; then
      echo "SLURM nodes not idle after 30 s:"
      on_host h1 sinfo
      tail -5 "$s"/*.log
      return 1
    fi
    sleep 0.1
  done
}

# slurm_on CMD...: a SLURM client command (srun, sbatch, squeue, scancel) on the login host h1.
slurm_on() { on_host h1 "$@"; }
