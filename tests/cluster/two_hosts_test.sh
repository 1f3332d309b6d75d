#!/usr/bin/env bash
# Two "hosts" (network + UTS + mount namespaces joined by a veth pair, hostnames node1/node2):
#  1. launch/mpirun-hosts.sh with one rank on each host trains over TCP and gives, epoch by epoch,
#     the same losses and validation PSNR as the same 2-rank run on one host, with both hosts'
#     shared Open MPI session tops blocked and a TMPDIR of node2's own;
#  2. a rank killed (kill -9) on node2 ends the mpirun job within seconds;
#  3. a two-node Slurm (slurmctld + slurmd on node1, slurmd on node2) runs slurm/train.sbatch
#     across both hosts with srun --mpi=pmix and with LAUNCHER=mpirun, and a killed rank ends that
#     job within seconds.
# Fails loudly (never skips) when namespaces cannot be created.
# Usage: two_hosts_test.sh PIX2PIX_BIN
set -uo pipefail
bin="$(realpath "$1")"
root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/tests/cluster/cluster_lib.sh"
trap cluster_teardown EXIT
trap 'exit 130' INT TERM

cluster_init
cluster_make_hosts
work="$CLUSTER_DIR/jobs"
cd "$work" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 330 --out "$work/d.h5" >/dev/null 2>&1 || { echo "prepare failed"; exit 1; }
opts=(--device cpu --config "$root/configs/smoke.cfg" --data "$work/d.h5" --max-epochs 3 --collective-timeout 30)
read -r -a two_hosts <<<"$(cluster_mpirun_hosts)"

# 1. one rank per host (launch/mpirun-hosts.sh) vs. both ranks on one host.
# See Note [an mpirun's session directory of its own]: each host's shared session top
# (TMPDIR/ompi.HOST.UID) is a file, so the launcher's mpirun on node1 and the daemon it starts on
# node2 fail unless both use the launcher's folder; node2 sees a TMPDIR of its own (an empty folder
# mounted over the same path), as a node with its own /tmp does, so the folder is made there anew;
# it is gone from both afterwards.
start=$(date +%s)
hosts_tmp="$CLUSTER_DIR/tmp-hosts" node2_tmp="$CLUSTER_DIR/tmp-node2"
mkdir -p "$hosts_tmp" "$node2_tmp" && chmod 1777 "$hosts_tmp" "$node2_tmp" &&
  on_host 2 mount --bind "$node2_tmp" "$hosts_tmp" || cluster_fail "cannot give node2 a TMPDIR of its own"
: >"$hosts_tmp/ompi.node1.$(id -u)" && : >"$node2_tmp/ompi.node2.$(id -u)"
on_host 1 env TMPDIR="$hosts_tmp" PIX2PIX_BIN="$bin" MPIRUN_ARGS="$(cluster_mpirun_transport)" \
  "$root/launch/mpirun-hosts.sh" "$CLUSTER_DIR/hostfile" "${opts[@]}" --run-dir "$work/across" >"$work/across.log" 2>&1
status=$?
left="$(find "$hosts_tmp" "$node2_tmp" -mindepth 1 ! -name 'ompi.node[12].*')"
on_host 2 umount "$hosts_tmp"
mpirun -np 2 --oversubscribe "$bin" train "${opts[@]}" --run-dir "$work/local" >"$work/local.log" 2>&1 ||
  fail "the single-host reference run failed"
if [ "$status" -ne 0 ]; then
  fail "mpirun-hosts.sh across two hosts: status $status"; tail -20 "$work/across.log"
elif ! grep -q "rank 0  host node1" "$work/across.log" || ! grep -q "rank 1  host node2" "$work/across.log"; then
  fail "the start-up table does not show one rank on each host"; grep "host" "$work/across.log"
elif ! diff <(cut -d, -f1-10 "$work/local/metrics.csv") <(cut -d, -f1-10 "$work/across/metrics.csv") >/dev/null; then
  fail "two hosts and one host disagree"; paste -d'\n' "$work/local/metrics.csv" "$work/across/metrics.csv"
elif [ -n "$left" ]; then
  fail "mpirun-hosts.sh left session folders on node1 or node2: $left"
else
  echo "ok   mpirun-hosts.sh across node1/node2 over TCP: $(( $(date +%s) - start )) s, metrics equal to one host's"
fi

# 2. kill -9 of the rank on node2
on_host 1 mpirun -np 2 "${two_hosts[@]}" -x OMP_NUM_THREADS "$bin" train "${opts[@]}" --run-dir "$work/killed" \
  --test-kill-at-step 8 >"$work/killed.log" 2>&1
expect_killed_job "kill -9 of the rank on node2 under mpirun" $? "$work/killed.log"

# 3. two-node Slurm
cluster_start_two_nodes
export PIX2PIX_BIN="$bin"
sb=(sbatch --wait --nodes=2 --ntasks-per-node=1 --gpus-per-task=0 --cpus-per-task=1 --time=5)
# two_node_job LAUNCHER: train.sbatch across both nodes, a rank on each, the single host's metrics.
# Under mpirun Open MPI's daemon on node2 is started through Slurm, and the job's session folder
# (See Note [an mpirun's session directory of its own]) is gone afterwards.
two_node_job() {
  local launcher="$1" name="twonode-$1" status run
  on_host 1 env LAUNCHER="$launcher" "${sb[@]}" --job-name="$name" -o "$work/$name.out" "$root/slurm/train.sbatch" \
    "${opts[@]}" >"$work/$name.sbatch" 2>&1
  status=$?
  run="$work/runs/$name-$(sed -n 's/^Submitted batch job //p' "$work/$name.sbatch")"
  if [ "$status" -ne 0 ] || [ ! -f "$run/summary.json" ]; then
    fail "two-node sbatch ($launcher): status $status"; cat "$work/$name.sbatch"; tail -20 "$work/$name.out"
  elif ! grep -q "rank 1  host node2" "$work/$name.out"; then
    fail "two-node sbatch ($launcher) did not place rank 1 on node2"; grep host "$work/$name.out"
  elif ! diff <(cut -d, -f1-10 "$work/local/metrics.csv") <(cut -d, -f1-10 "$run/metrics.csv") >/dev/null; then
    fail "the two-node Slurm run ($launcher) disagrees with the single-host run"
  elif compgen -G "${TMPDIR:-/tmp}/pix2pix-mpirun.*" >/dev/null; then
    fail "two-node sbatch ($launcher) left its session folder: $(echo "${TMPDIR:-/tmp}"/pix2pix-mpirun.*)"
  else
    echo "ok   sbatch train.sbatch on 2 nodes ($launcher): metrics equal to one host's"
  fi
}
two_node_job srun
two_node_job mpirun
on_host 1 "${sb[@]}" --job-name=twonode-killed -o "$work/twonode-killed.out" "$root/slurm/train.sbatch" "${opts[@]}" \
  --test-kill-at-step 8 >/dev/null 2>&1
expect_killed_job "kill -9 of rank 1 on 2 Slurm nodes (srun --kill-on-bad-exit)" $? "$work/twonode-killed.out"

[ "$failures" -eq 0 ] && echo "two hosts: OK"
exit "$failures"
