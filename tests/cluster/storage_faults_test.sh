#!/usr/bin/env bash
# Checkpoints under faults, on real files and file systems (2 CPU ranks under mpirun):
#  1. rank 0 killed half-way through writing last.pt: the job ends, the previous last.pt is intact
#     and --resume auto continues from it;
#  2. a damaged (bit flip) or truncated newest checkpoint: reported, and --resume auto falls back
#     to last.prev.pt;
#  3. disk full at checkpoint time (a 6 MiB tmpfs in a private mount namespace): a clear error,
#     a non-zero exit, and the previous checkpoint still resumes;
#  4. the checkpoints folder turning read-only mid-run: a clear error naming it, the checkpoint kept.
# Usage: storage_faults_test.sh PIX2PIX_BIN
set -uo pipefail
bin="$(realpath "$1")"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/p2p-storage.XXXXXX)"
cleanup() {
  [ -n "${holder:-}" ] && kill "$holder" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
source "$root/tests/cluster/cluster_lib.sh"  # fail(), failures (no cluster is started here)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpirun=(mpirun -np 2 --oversubscribe)
"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 330 --out "$work/d.h5" >/dev/null 2>&1 || { echo "prepare failed"; exit 1; }
opts=(--device cpu --config "$root/configs/smoke.cfg" --data "$work/d.h5" --collective-timeout 30)
rows() { tail -n +2 "$1/metrics.csv" 2>/dev/null | wc -l; }

# 1. killed while writing a checkpoint
run="$work/killed"
start=$(date +%s)
timeout 120 "${mpirun[@]}" "$bin" train "${opts[@]}" --run-dir "$run" --max-epochs 3 --test-kill-in-checkpoint 1 \
  >"$work/killed.log" 2>&1
status=$?
took=$(elapsed_since "$start")
timeout 120 "${mpirun[@]}" "$bin" train "${opts[@]}" --run-dir "$run" --max-epochs 3 --resume auto \
  >"$work/killed-resume.log" 2>&1
resumed=$?
if [ "$status" -eq 0 ] || [ "$took" -gt 30 ] || ! grep -q "killed while writing" "$work/killed.log"; then
  fail "kill during checkpoint: status $status after $took s"; tail -10 "$work/killed.log"
elif [ "$resumed" -ne 0 ] || ! grep -q "resumed from $run/checkpoints/last.pt: epoch 0 done" "$work/killed-resume.log" ||
  [ "$(rows "$run")" != 3 ]; then
  fail "resume after a kill during checkpoint: status $resumed"; tail -10 "$work/killed-resume.log"
else
  echo "ok   killed half-way through last.pt: job ended (status $status, ${took} s for 2 epochs + the kill); last.pt of epoch 0 intact, resumed to epoch 2"
fi

# 2. damaged and truncated newest checkpoints
last="$run/checkpoints/last.pt"
# expect_fallback WHAT NEEDLE EPOCH MAX_EPOCHS: --resume auto reports NEEDLE and resumes from
# last.prev.pt at EPOCH.
expect_fallback() {
  local what="$1" needle="$2" epoch="$3" max="$4" status
  timeout 120 "${mpirun[@]}" "$bin" train "${opts[@]}" --run-dir "$run" --max-epochs "$max" --resume auto \
    >"$work/$max.log" 2>&1
  status=$?
  if [ "$status" -ne 0 ] || ! grep -q "last.pt is damaged ($needle" "$work/$max.log" ||
    ! grep -q "resumed from $run/checkpoints/last.prev.pt: epoch $epoch done" "$work/$max.log"; then
    fail "$what: status $status"; grep -E "damaged|resumed|error" "$work/$max.log"
  else
    echo "ok   $what: reported, resumed from last.prev.pt (epoch $epoch)"
  fi
}
size=$(stat -c %s "$last")
printf '\x55' | dd of="$last" bs=1 seek=$((size / 3)) conv=notrunc status=none
expect_fallback "a bit flip in last.pt" "checksum mismatch" 1 4
truncate -s $(($(stat -c %s "$last") / 2)) "$last"
expect_fallback "a truncated last.pt" "no seal" 2 5

# 3. disk full: the run directory on a 6 MiB tmpfs (one 3.8 MB checkpoint fits, not a second)
mkdir -p "$work/full"
unshare --mount --propagation private sh -c "mount -t tmpfs -o size=6m p2p-full '$work/full' &&
  exec timeout 120 ${mpirun[*]} '$bin' train ${opts[*]} --run-dir '$work/full/run' --max-epochs 3" \
  >"$work/full.log" 2>&1
status=$?
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ] || ! grep -q "cannot write $work/full/run/checkpoints/last.pt" "$work/full.log"; then
  fail "disk full: status $status"; tail -10 "$work/full.log"
else
  echo "ok   disk full at the epoch 1 checkpoint: status $status, '$(grep -o "cannot write [^(]*" "$work/full.log" | head -1 | cut -c1-90)...'"
fi

# 4. the checkpoints folder becomes read-only mid-run: a read-only bind mount over it, in the
# trainer's private mount namespace (the run directory itself cannot be remounted read-only
# while the trainer holds train.log open for writing).
run="$work/ro"
mkdir -p "$run"
unshare --mount --propagation private sh -c "echo \$\$ >'$work/holder.pid' &&
  exec timeout 120 ${mpirun[*]} '$bin' train ${opts[*]} --run-dir '$run' --max-epochs 6" >"$work/ro.log" 2>&1 &
holder=$!
# Read-only once epoch 0's checkpoint is in place (renamed there whole), not at its metrics row:
# the row is written before the checkpoint, and on a loaded machine the mount then came first
# and left nothing to resume from.
for _ in $(seq 600); do [ -f "$run/checkpoints/last.pt" ] && break; sleep 0.1; done
nsenter -t "$(cat "$work/holder.pid")" -m sh -c "mount --bind '$run/checkpoints' '$run/checkpoints' &&
  mount -o remount,bind,ro '$run/checkpoints'" || fail "cannot make the checkpoints folder read-only"
wait "$holder"
status=$?
holder=""
cp -r "$run" "$work/ro-copy"
timeout 120 "${mpirun[@]}" "$bin" train "${opts[@]}" --run-dir "$work/ro-copy" --max-epochs 6 --resume auto \
  >"$work/ro-resume.log" 2>&1
resumed=$?
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ] || ! grep -q "$run/checkpoints/last.*Read-only file system" "$work/ro.log"; then
  fail "read-only checkpoints folder: status $status"; tail -10 "$work/ro.log"
elif [ "$resumed" -ne 0 ] || ! grep -q "resumed from" "$work/ro-resume.log"; then
  fail "no checkpoint survived the read-only checkpoints folder"; tail -10 "$work/ro-resume.log"
else
  echo "ok   checkpoints folder read-only mid-run: status $status, '$(grep -o "cannot [a-z]* $run/checkpoints/[^:]*: Read-only file system" "$work/ro.log" | head -1)'; the last checkpoint resumes"
fi

[ "$failures" -eq 0 ] && echo "storage faults: OK"
exit "$failures"
