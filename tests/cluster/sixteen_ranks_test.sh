#!/usr/bin/env bash
# Issue 48's logic at 16 ranks: four "hosts" (network + UTS + mount namespaces on one bridge) with
# 4 ranks each, mpirun over TCP, tiny networks on 32x32 Fashion-MNIST, oversubscribed on 2 cores:
#  1. 16 ranks x B = 1 process x 16B with --sync-bn on, at B = 1 and 2, after an epoch (the bar of
#     tests/dist/sync_bn_epoch_test.sh, launched onto the hosts);
#  2. a train split that 16 does not divide (90 pairs: 5 steps of 16, 10 left out) and a val split of
#     10 pairs, fewer than the ranks: rank 0's early-stopping decision ends all 16, epoch by epoch
#     the same metrics as the same 16 ranks on one host;
#  3. elastic resumes 16 -> 5 in the middle of an epoch (the nearest step) -> 16 at an epoch
#     boundary (the next epoch whole on the new world): one metrics row per epoch;
#  4. SIGUSR1 to mpirun (it forwards it to every rank, as Slurm's scancel --signal does) ends all 16
#     with status 75 and one checkpoint, from which --resume auto on 16 ranks gives exactly the
#     metrics of the uninterrupted run;
#  5. kill -9 of one rank (rank 11, on node3) ends the job within seconds;
#  6. evaluate and translate on 16 ranks (most with one val image, some with none) write byte for
#     byte what one process writes.
# Fails loudly (never skips) when namespaces cannot be created.
# Usage: sixteen_ranks_test.sh PIX2PIX_BIN
set -uo pipefail
bin="$(realpath "$1")"
root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/tests/cluster/cluster_lib.sh"
trap cluster_teardown EXIT
trap 'exit 130' INT TERM

cluster_init
cluster_make_hosts 4 4
hosts="$CLUSTER_DIR/mpirun-hosts"
work="$CLUSTER_DIR/jobs"
cd "$work" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
fashion="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz"
"$bin" prepare --images "idx:$fashion" --derive edges --size 32 --limit 100 --val-fraction 0.1 --out "$work/d.h5" \
  >/dev/null 2>&1 || { echo "prepare failed"; exit 1; }
# train RANKS LOG [options]: batch 1 a rank on the four hosts (or, with LAUNCH=local, on this one).
train() {
  local ranks="$1" log="$2" launch=("$hosts")
  shift 2
  [ "${LAUNCH:-hosts}" = local ] && launch=(mpirun --oversubscribe)
  [ "$ranks" = 1 ] && launch=() || launch+=(-np "$ranks")
  timeout 300 "${launch[@]}" "$bin" train --config "${CONFIG:-$root/configs/smoke.cfg}" --data "$work/d.h5" \
    --batch-size 1 --collective-timeout 60 --progress none "$@" >"$log" 2>&1
}
rows() { tail -n +2 "$1/metrics.csv" 2>/dev/null | cut -d, -f1 | tr '\n' ' '; }
# The columns that do not depend on time: epoch, step, lr, the losses and the val scores.
same_metrics() { diff <(cut -d, -f1-10 "$1/metrics.csv") <(cut -d, -f1-10 "$2/metrics.csv") >/dev/null; }

# 1. Batch norm over 16 ranks at 1 and 2 images a rank (72 train pairs: 4 steps, then 2).
for batch in 1 2; do
  if out=$(bash "$root/tests/dist/sync_bn_epoch_test.sh" "$bin" 16 "$batch" "$hosts" 2>&1); then
    echo "ok   ${out##*$'\n'}"
  else
    fail "16 ranks x $batch with --sync-bn on"; echo "$out" | tail -n 12
  fi
done

# 2. Uneven shards, fewer val images than ranks, and the stop decision: a flat PSNR (lr 1e-30)
# stops at best + patience.
grep -v '^no-early-stop' "$root/configs/smoke.cfg" >"$work/es.cfg"
export CONFIG="$work/es.cfg"
stop=(--max-epochs 20 --lr 1e-30 --es-window 1 --es-patience 2)
train 16 "$work/stop.log" --run-dir "$work/stop" "${stop[@]}"
status=$?
LAUNCH=local train 16 "$work/stop-local.log" --run-dir "$work/stop-local" "${stop[@]}" ||
  fail "the same 16 ranks on one host (status $?)"
unset CONFIG
epochs=$(rows "$work/stop" | wc -w)
if [ "$status" -ne 0 ] || ! grep -q '"stop_reason": "early stopping' "$work/stop/summary.json" 2>/dev/null ||
  [ "$epochs" -ge 20 ]; then
  fail "16 ranks: rank 0's stop decision (status $status, $epochs epochs)"; tail -n 8 "$work/stop.log"
elif ! grep -q "data  *90 pairs 32x32, .*; val 10 pairs" "$work/stop.log" ||
  ! grep -q "1 per rank, 16 global; 5 steps/epoch" "$work/stop.log" ||
  [ "$(grep -c "host node[1-4]" "$work/stop.log")" != 16 ]; then
  fail "16 ranks on 4 hosts: expected 16 ranks over node1-4, 5 steps of 16 an epoch on 90 pairs"; grep -E "host|steps" "$work/stop.log"
elif ! same_metrics "$work/stop-local" "$work/stop"; then
  fail "16 ranks on four hosts and on one host disagree"; paste -d'\n' "$work/stop-local/metrics.csv" "$work/stop/metrics.csv"
else
  echo "ok   16 ranks on 4 hosts, 90 train pairs (5 steps of 16, 10 left out), 10 val pairs: rank 0's early stop" \
    "ended every rank after $epochs epochs, the same metrics as on one host"
fi

# 3. Elastic 16 -> 5 -> 16. 16 ranks: 5 steps an epoch; 5 ranks: 18. The first stop comes after
# global step 8, step 3 of epoch 1 (48 samples: step 9 of 18 on 5 ranks); the second as epoch 1
# validates, so epoch 2 runs whole on 16 ranks.
train 16 "$work/elastic-1.log" --run-dir "$work/elastic" --max-epochs 3 --test-signal-at-step 7 --test-rank 0
first=$?
train 5 "$work/elastic-2.log" --run-dir "$work/elastic" --max-epochs 3 --resume auto --test-signal-in-validation 1 --test-rank 0
second=$?
train 16 "$work/elastic-3.log" --run-dir "$work/elastic" --max-epochs 3 --resume auto
third=$?
if [ "$first/$second/$third" = 75/75/0 ] && [ "$(rows "$work/elastic")" = "0 1 2 " ] &&
  grep -qF "epoch 0 done, epoch 1 stopped after step 3, global step 8" "$work/elastic-2.log" &&
  grep -qF "from 16 (16 ranks) to 5 (5 ranks); epoch 1 counts 9 of its 18 steps as done, the nearest to the 48 samples seen" \
    "$work/elastic-2.log" &&
  grep -qF "epoch 1 done, global step 17" "$work/elastic-3.log" &&
  grep -qF "from 5 (5 ranks) to 16 (16 ranks)" "$work/elastic-3.log"; then
  echo "ok   elastic 16 -> 5 (mid-epoch: step 3 of 5 = step 9 of 18) -> 16 (at the epoch boundary): epochs $(rows "$work/elastic")"
else
  fail "elastic 16 -> 5 -> 16: statuses $first/$second/$third, epochs '$(rows "$work/elastic")'"
  grep -h -E "resumed|note: the global|stopped" "$work"/elastic-*.log
fi

# 4. SIGUSR1 to the job once epoch 0 is done: status 75, then the run resumed on 16 ranks ends
# with exactly the metrics of the same run uninterrupted.
train 16 "$work/whole.log" --run-dir "$work/whole" --max-epochs 3 || fail "the uninterrupted 16-rank run (status $?)"
"$hosts" -np 16 "$bin" train --config "$root/configs/smoke.cfg" --data "$work/d.h5" --batch-size 1 --collective-timeout 60 \
  --progress none --run-dir "$work/usr1" --max-epochs 3 >"$work/usr1-1.log" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q "^epoch 0:" "$work/usr1-1.log" && break; sleep 0.1; done
kill -USR1 "$job"
wait "$job"
status=$?
train 16 "$work/usr1-2.log" --run-dir "$work/usr1" --max-epochs 3 --resume auto
resumed=$?
if [ "$status" -eq 75 ] && [ "$(grep -c "stopped: stopped by signal 10" "$work/usr1-1.log")" = 1 ] &&
  [ -f "$work/usr1/checkpoints/last.pt" ] && [ "$resumed" -eq 0 ] && [ "$(rows "$work/usr1")" = "0 1 2 " ] &&
  same_metrics "$work/whole" "$work/usr1"; then
  echo "ok   SIGUSR1 to mpirun: 16 ranks ended with 75 ($(grep -o "stopped by signal 10 [^;]*" "$work/usr1-1.log"));" \
    "resumed on 16, the same metrics as the uninterrupted run"
else
  fail "SIGUSR1 to 16 ranks: status $status, resumed $resumed, epochs '$(rows "$work/usr1")'"
  grep -h -E "stopped|resumed" "$work"/usr1-*.log; paste -d'\n' "$work/whole/metrics.csv" "$work/usr1/metrics.csv"
fi

# 5. kill -9 of rank 11 (node3).
train 16 "$work/killed.log" --run-dir "$work/killed" --max-epochs 50 --test-kill-at-step 3 --test-rank 11
expect_killed_job "kill -9 of rank 11 of 16 (node3)" $? "$work/killed.log"

# 6. evaluate and translate: 16 ranks = 1 process (10 val images: ranks 10-15 have none).
one_and_sixteen() {  # NAME COMMAND...: the output folder is the last argument
  local name="$1"
  shift
  "$bin" "$@" "$work/$name-one" >"$work/$name-one.log" 2>&1 || { fail "$name on 1 process"; tail -n 5 "$work/$name-one.log"; return; }
  "$hosts" -np 16 "$bin" "$@" "$work/$name-16" >"$work/$name-16.log" 2>&1 ||
    { fail "$name on 16 ranks"; tail -n 5 "$work/$name-16.log"; return; }
  grep -q "on 16 ranks" "$work/$name-16.log" || { fail "$name: not on 16 ranks"; return; }
  if diff -r "$work/$name-one" "$work/$name-16" >/dev/null; then
    echo "ok   $name on 16 ranks over 4 hosts = 1 process ($(find "$work/$name-16" -type f | wc -l) files)"
  else
    fail "$name: 16 ranks and 1 process differ"
  fi
}
for mode in eval train; do
  one_and_sixteen "evaluate-$mode" evaluate --checkpoint "$work/whole" --data "$work/d.h5" --split val --mode "$mode" \
    --batch-size 1 --samples 3 --progress none --out
  one_and_sixteen "translate-$mode" translate --checkpoint "$work/whole" --data "$work/d.h5" --split val --mode "$mode" \
    --batch-size 1 --progress none --output
done

[ "$failures" -eq 0 ] && echo "16 ranks on four hosts: OK"
exit "$failures"
