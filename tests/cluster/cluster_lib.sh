#!/usr/bin/env bash
# Throw-away clusters for the tests in this folder (see ../../docs/slurm.md, "How CI proves it"):
# a one-node Slurm (munge + slurmctld + slurmd) on this machine, N "hosts" in network
# namespaces joined through a bridge, and a two-node Slurm across two of them. Everything lives under
# $CLUSTER_DIR; daemons are stopped by their PID files and namespaces deleted by cluster_teardown,
# which the tests run from an EXIT trap. Source this file; it runs nothing by itself.

CLUSTER_DIR="${CLUSTER_DIR:-}"
HOST_PIDS=()
HOST_NAMES=()
CLUSTER_SUBNET=10.213.7

cluster_fail() {
  echo "CLUSTER SETUP FAILED: $*" >&2
  exit 1
}

# Test bookkeeping shared by the scripts in this folder.
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
elapsed_since() { echo $(($(date +%s) - $1)); }
# Seconds from the "dying now ... at unix time T" line (hidden --test-kill-at-step) in log $1 to now.
since_death() {
  local died
  died=$(sed -n 's/.*dying now .* at unix time \([0-9.]*\).*/\1/p' "$1" | head -1)
  [ -n "$died" ] || { echo 999; return; }
  awk -v d="$died" -v now="$(date +%s.%N)" 'BEGIN { printf "%.1f", now - d }'
}
# expect_killed_job WHAT STATUS LOG: a job with a killed rank must have failed within 15 s of the death.
expect_killed_job() {
  local what="$1" status="$2" log="$3" took
  took=$(since_death "$log")
  if [ "$status" -eq 0 ] || awk -v t="$took" 'BEGIN { exit !(t > 15) }'; then
    fail "$what: status $status, $took s after the death"; tail -10 "$log"
    return 1
  fi
  echo "ok   $what: status $status, job ended $took s after the rank died"
}

# Daemons left by a run that was killed before its trap ran (ctest's timeout kills): they would
# hold the Slurm ports. Only processes named in the PID files of a state folder whose owning test
# is gone are touched.
cluster_reap_stale() {
  local d f pid
  for d in /tmp/p2p-cluster.*; do
    [ -f "$d/owner" ] && ! kill -0 "$(cat "$d/owner")" 2>/dev/null || continue
    for f in "$d"/slurmd-*.pid "$d"/slurmctld.pid "$d"/munge/munged.pid; do
    [ -f "$f" ] || continue
    pid="$(cat "$f")"
    case "$(cat /proc/"$pid"/comm 2>/dev/null)" in slurmd | slurmctld | munged) kill -9 "$pid" 2>/dev/null ;; esac
    done
    rm -rf "$d"
  done
}

# cluster_init: the state folder and a munge daemon (one key for every node).
cluster_init() {
  [ "$(id -u)" -eq 0 ] || cluster_fail "the cluster tests need root (Slurm daemons, namespaces, mounts); run them as root"
  local tool
  for tool in munged slurmctld slurmd sbatch unshare nsenter ip; do
    command -v "$tool" >/dev/null || cluster_fail "$tool is missing (scripts/install-deps.sh installs it)"
  done
  cluster_reap_stale
  CLUSTER_DIR="$(mktemp -d /tmp/p2p-cluster.XXXXXX)"
  chmod 755 "$CLUSTER_DIR"
  echo $$ >"$CLUSTER_DIR/owner"
  mkdir -p "$CLUSTER_DIR"/{state,spool,tmp,log,munge,jobs}
  chmod 777 "$CLUSTER_DIR/jobs"
  dd if=/dev/urandom of="$CLUSTER_DIR/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$CLUSTER_DIR/munge/munge.key"
  chmod 0700 "$CLUSTER_DIR/munge"
  munged --force --socket="$CLUSTER_DIR/munge/munge.socket.2" --key-file="$CLUSTER_DIR/munge/munge.key" \
    --pid-file="$CLUSTER_DIR/munge/munged.pid" --log-file="$CLUSTER_DIR/log/munged.log" \
    --seed-file="$CLUSTER_DIR/munge/munge.seed" || cluster_fail "munged did not start"
  export SLURM_CONF="$CLUSTER_DIR/slurm.conf"
  # Note [the lab's ranks yield]: the hosts of these tests share this machine's cores, but their
  # hostfile (4 slots a host) and slurm.conf (2 CPUs a node) give each more than its share, so Open
  # MPI sees no oversubscription and a waiting rank spins in its progress engine instead of yielding
  # (it yields by itself only where it knows the ranks outnumber the slots, as with mpirun
  # --oversubscribe on one host). Sixteen spinning ranks on 2 cores starved the ranks with work: a
  # 2-epoch 16-rank run across the four hosts took 36-72 s, 16-20 s with yielding, the same metrics
  # (docs/performance.md, "The lab's ranks yield"). On a real cluster a rank has its core, and
  # spinning is right, so only the lab sets it; mpirun and srun pass it to every rank.
  export OMPI_MCA_mpi_yield_when_idle=1
}

# cluster_write_conf CTLD_HOST CTLD_ADDR "NodeName=... lines"...
cluster_write_conf() {
  local host="$1" addr="$2"
  shift 2
  cat >"$SLURM_CONF" <<CONF
ClusterName=p2ptest
SlurmctldHost=${host}(${addr})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$CLUSTER_DIR/munge/munge.socket.2
StateSaveLocation=$CLUSTER_DIR/state
SlurmdSpoolDir=$CLUSTER_DIR/spool/%n
TmpFS=$CLUSTER_DIR/tmp/%n
SlurmctldPidFile=$CLUSTER_DIR/slurmctld.pid
SlurmdPidFile=$CLUSTER_DIR/slurmd-%n.pid
SlurmctldLogFile=$CLUSTER_DIR/log/slurmctld.log
SlurmdLogFile=$CLUSTER_DIR/log/slurmd-%n.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
KillWait=5
MinJobAge=4
KillOnBadExit=1
SchedulerParameters=defer_batch
$(printf '%s\n' "$@")
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  for n in $(sed -n 's/^NodeName=\([^ ]*\).*/\1/p' "$SLURM_CONF"); do mkdir -p "$CLUSTER_DIR/spool/$n" "$CLUSTER_DIR/tmp/$n"; done
}

# cluster_wait_idle N: until N nodes report idle (10 s at most).
cluster_wait_idle() {
  local want="$1" run=("${@:2}")
  for _ in $(seq 100); do
    [ "$("${run[@]}" sinfo -h -o '%t %D' 2>/dev/null | awk '$1=="idle"{n+=$2} END{print n+0}')" -ge "$want" ] && return 0
    sleep 0.1
  done
  "${run[@]}" sinfo >&2
  tail -n 20 "$CLUSTER_DIR"/log/*.log >&2
  cluster_fail "$want node(s) did not become idle"
}

# cluster_start_one_node: slurmctld + slurmd on this machine, 2 CPUs.
cluster_start_one_node() {
  cluster_init
  local host
  host="$(hostname)"
  cluster_write_conf "$host" 127.0.0.1 "NodeName=$host NodeAddr=127.0.0.1 CPUs=2 RealMemory=2000"
  slurmctld -c || cluster_fail "slurmctld did not start (log: $CLUSTER_DIR/log/slurmctld.log)"
  slurmd || cluster_fail "slurmd did not start (log: $CLUSTER_DIR/log/slurmd-$host.log)"
  cluster_wait_idle 1
}

# cluster_make_hosts [N [SLOTS]]: N hosts (node1 .. nodeN, 2 by default) with their own network,
# hostname and /etc/hosts, each joined by a veth pair (p2pv<i> on the host) to one bridge in a
# switch namespace of its own, on $CLUSTER_SUBNET.0/24 (node<i> is .<i>); the hostfile gives each
# host SLOTS slots (1 by default). Fails loudly when namespaces cannot be created.
NETNS_MOUNTED_BEFORE=1
SWITCH_PID=""
SWITCH_NAME=""
cluster_make_hosts() {
  local count="${1:-2}" slots="${2:-1}" i
  mountpoint -q /run/netns 2>/dev/null || NETNS_MOUNTED_BEFORE=0
  {
    echo "127.0.0.1 localhost"
    for i in $(seq "$count"); do echo "$CLUSTER_SUBNET.$i node$i"; done
  } >"$CLUSTER_DIR/hosts"
  for i in $(seq "$count"); do
    unshare --net --uts --mount --propagation private \
      sh -c "hostname node$i && mount --bind '$CLUSTER_DIR/hosts' /etc/hosts && ip link set lo up && exec sleep infinity" &
    HOST_PIDS+=("$!")
    HOST_NAMES+=("p2p-node$i-$$")
  done
  unshare --net sh -c "exec sleep infinity" &
  SWITCH_PID=$!
  SWITCH_NAME="p2p-switch-$$"
  sleep 0.3
  for i in $(seq 0 $((count - 1))); do
    kill -0 "${HOST_PIDS[$i]}" 2>/dev/null ||
      cluster_fail "cannot create network/UTS/mount namespaces (unshare needs root or CAP_SYS_ADMIN); the host tests cannot run here"
    ip netns attach "${HOST_NAMES[$i]}" "${HOST_PIDS[$i]}" || cluster_fail "ip netns attach failed"
  done
  kill -0 "$SWITCH_PID" 2>/dev/null || cluster_fail "cannot create the switch's network namespace"
  ip netns attach "$SWITCH_NAME" "$SWITCH_PID" || cluster_fail "ip netns attach failed (switch)"
  ip -n "$SWITCH_NAME" link add p2pbr type bridge && ip -n "$SWITCH_NAME" link set p2pbr up ||
    cluster_fail "cannot create the bridge joining the hosts"
  for i in $(seq "$count"); do
    ip link add "p2pv$i" netns "${HOST_NAMES[$((i - 1))]}" type veth peer name "p2pb$i" netns "$SWITCH_NAME" ||
      cluster_fail "cannot create the veth pair from node$i to the bridge"
    ip -n "$SWITCH_NAME" link set "p2pb$i" master p2pbr up || cluster_fail "cannot attach node$i's link to the bridge"
    on_host "$i" ip addr add "$CLUSTER_SUBNET.$i/24" dev "p2pv$i"
    on_host "$i" ip link set "p2pv$i" up
    on_host "$i" ip -br addr show "p2pv$i" | grep -q "UP.*$CLUSTER_SUBNET.$i/24" || cluster_fail "node$i's link is not up"
  done
  # mpirun's "ssh": enter the named host's namespaces, then run the command there.
  {
    echo '#!/bin/sh'
    echo 'host="$1"; shift'
    echo 'case "$host" in'
    for i in $(seq "$count"); do echo "  node$i) pid=${HOST_PIDS[$((i - 1))]} ;;"; done
    echo '  *) echo "rsh: unknown host $host" >&2; exit 1 ;;'
    echo 'esac'
    echo 'exec nsenter -t "$pid" -n -u -m --wd="$PWD" -- sh -c "$*"'
  } >"$CLUSTER_DIR/rsh"
  chmod +x "$CLUSTER_DIR/rsh"
  for i in $(seq "$count"); do echo "node$i slots=$slots"; done >"$CLUSTER_DIR/hostfile"
  # $CLUSTER_DIR/mpirun-hosts: mpirun on node1 over every host, for scripts that take an mpirun
  # command line; started in the background, its PID is mpirun's (sh and nsenter exec).
  {
    echo '#!/bin/sh'
    echo "exec nsenter -t ${HOST_PIDS[0]} -n -u -m --wd=\"\$PWD\" -- mpirun $(cluster_mpirun_hosts)" \
      '-x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS "$@"'
  } >"$CLUSTER_DIR/mpirun-hosts"
  chmod +x "$CLUSTER_DIR/mpirun-hosts"
}

# on_host N CMD...: run CMD on host N (in the current directory).
on_host() {
  local pid="${HOST_PIDS[$(($1 - 1))]}"
  shift
  nsenter -t "$pid" -n -u -m --wd="$PWD" -- "$@"
}

# The mpirun options that launch ranks on the hosts (the hostfile's slots) over TCP on their subnet;
# cluster_mpirun_transport the same without the hostfile (for launch/mpirun-hosts.sh's MPIRUN_ARGS).
cluster_mpirun_hosts() { echo --hostfile "$CLUSTER_DIR/hostfile" "$(cluster_mpirun_transport)"; }
cluster_mpirun_transport() {
  echo --mca plm_rsh_agent "$CLUSTER_DIR/rsh" --mca pml ob1 --mca btl tcp,self \
    --mca btl_tcp_if_include "$CLUSTER_SUBNET.0/24" --mca oob_tcp_if_include "$CLUSTER_SUBNET.0/24"
}

# cluster_start_two_nodes: slurmctld and slurmd on node1, slurmd on node2 (after cluster_make_hosts).
cluster_start_two_nodes() {
  cluster_write_conf node1 "$CLUSTER_SUBNET.1" "NodeName=node1 NodeAddr=$CLUSTER_SUBNET.1 CPUs=2 RealMemory=2000" \
    "NodeName=node2 NodeAddr=$CLUSTER_SUBNET.2 CPUs=2 RealMemory=2000"
  on_host 1 slurmctld -c || cluster_fail "slurmctld did not start on node1"
  on_host 1 slurmd -N node1 || cluster_fail "slurmd did not start on node1"
  on_host 2 slurmd -N node2 || cluster_fail "slurmd did not start on node2"
  cluster_wait_idle 2 on_host 1
}

cluster_teardown() {
  [ -n "$CLUSTER_DIR" ] || return 0
  local f
  for f in "$CLUSTER_DIR"/slurmd-*.pid "$CLUSTER_DIR"/slurmctld.pid "$CLUSTER_DIR"/munge/munged.pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  sleep 0.5
  for f in "$CLUSTER_DIR"/slurmd-*.pid "$CLUSTER_DIR"/slurmctld.pid "$CLUSTER_DIR"/munge/munged.pid; do
    [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
  done
  local pid name
  for pid in "${HOST_PIDS[@]}" $SWITCH_PID; do kill "$pid" 2>/dev/null; done
  for name in "${HOST_NAMES[@]}" $SWITCH_NAME; do ip netns del "$name" 2>/dev/null; done
  # `ip netns attach` mounted /run/netns; undo that when it was ours.
  [ "$NETNS_MOUNTED_BEFORE" = 0 ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ] && umount /run/netns 2>/dev/null
  if [ "${KEEP_CLUSTER_DIR:-0}" = 1 ]; then echo "cluster state kept in $CLUSTER_DIR"; else rm -rf "$CLUSTER_DIR"; fi
}
