#!/usr/bin/env bash
# A stop request at any moment of a run ends it with status 75 and a checkpoint from which
# --resume auto finishes with exactly the figures of an uninterrupted run: before the first step,
# mid-epoch 0 (SIGTERM, SIGINT and SIGUSR1), during the cache fill, during validation, while a
# checkpoint is written. The signals are raised by the hidden --test-* options
# (See Note [test fault injection]) on one rank, so the other ranks learn of the stop only through the job.
# Usage: stop_anywhere_test.sh PIX2PIX_BIN RANKS [MPIRUN...]   (RANKS 1: no launcher)
set -uo pipefail
bin="$1" ranks="$2"; shift 2
launch=()
[ "$ranks" -gt 1 ] && launch=("$@" -np "$ranks")
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# PIX2PIX_TEST_CONFIG: another base config (scripts/gpu-smoke.sh: the smoke with --deterministic on GPUs).
smoke="${PIX2PIX_TEST_CONFIG:-$(cd "$(dirname "$0")/../.." && pwd)/configs/smoke.cfg}"
failures=0
other=$((ranks - 1))  # the last rank: rank 0 itself in a single process

# 2 epochs of 6 steps: 96 train pairs, global batch 16 (--global-batch divides by the ranks).
"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 110 --val-fraction 0.12 --out "$dir/d.h5" >/dev/null 2>&1 ||
  { echo "FAIL prepare"; exit 1; }
train() {  # train RUN_DIR LOG [options]
  local run="$1" log="$2"; shift 2
  timeout 180 "${launch[@]}" "$bin" train --config "$smoke" --data "$dir/d.h5" --global-batch 16 --batch-size 1 \
    --collective-timeout 60 --run-dir "$run" "$@" >"$log" 2>&1
}
# shellcheck source=../support/same_figures.sh
. "$(dirname "$0")/../support/same_figures.sh"

train "$dir/straight" "$dir/straight.log" || { echo "FAIL the uninterrupted run"; tail -n 20 "$dir/straight.log"; exit 1; }

# expect_stop NAME NEEDLE CHECKPOINT RESUMED -- fault options: status 75 and NEEDLE in the log;
# with CHECKPOINT=yes last.pt exists (=no: nothing in checkpoints/); then --resume auto says
# RESUMED, ends with 0 and the uninterrupted run's figures.
expect_stop() {
  local name="$1" needle="$2" checkpoint="$3" resumed_from="$4"; shift 5
  local run="$dir/$name" status resumed
  train "$run" "$dir/$name.log" "$@"
  status=$?
  if [ "$status" -ne 75 ] || ! grep -q -- "$needle" "$dir/$name.log"; then
    echo "FAIL $name: status $status (expected 75), expected '$needle' in:"
    tail -n 12 "$dir/$name.log"
    failures=$((failures + 1))
    return
  fi
  if [ "$checkpoint" = yes ] && [ ! -s "$run/checkpoints/last.pt" ]; then
    echo "FAIL $name: no checkpoints/last.pt after the stop"; ls -R "$run"
    failures=$((failures + 1))
    return
  fi
  if [ "$checkpoint" = no ] && [ -n "$(ls "$run/checkpoints" 2>/dev/null)" ]; then
    echo "FAIL $name: a stop during set-up wrote $(ls "$run/checkpoints")"
    failures=$((failures + 1))
    return
  fi
  if compgen -G "$run/checkpoints/*.tmp*" >/dev/null; then
    echo "FAIL $name: a temporary checkpoint was left: $(ls "$run/checkpoints")"
    failures=$((failures + 1))
    return
  fi
  train "$run" "$dir/$name-resumed.log" --resume auto
  resumed=$?
  local why
  if [ "$resumed" -ne 0 ] || ! grep -q -- "$resumed_from" "$dir/$name-resumed.log" ||
    ! why="$(same_figures "$dir/straight/metrics.csv" "$run/metrics.csv" 2 2>&1)"; then
    echo "FAIL $name: the resumed run (status $resumed) is not the uninterrupted one: ${why:-}"
    tail -n 8 "$dir/$name-resumed.log"
    failures=$((failures + 1))
  else
    echo "ok   $name: 75 ($needle), then '$resumed_from' and the uninterrupted run's figures"
  fi
}

# Mid-epoch 0, each signal a scheduler or a user sends, on the last rank (rank 0 for one process).
expect_stop term-mid-epoch-0 "stopped by signal 15 after step 3 of epoch 0" yes \
  "last.pt: epoch 0 stopped after step 3 of its 6" -- \
  --test-signal TERM --test-signal-at-step 2 --test-rank "$other"
expect_stop int-mid-epoch-0 "stopped by signal 2 after step 4 of epoch 0" yes \
  "last.pt: epoch 0 stopped after step 4 of its 6" -- \
  --test-signal INT --test-signal-at-step 3 --test-rank 0
expect_stop usr1-mid-epoch-0 "stopped by signal 10 after step 5 of epoch 0" yes \
  "last.pt: epoch 0 stopped after step 5 of its 6" -- \
  --test-signal USR1 --test-signal-at-step 4 --test-rank "$other"
# Before the first step: that step is taken, then the checkpoint.
expect_stop before-first-step "stopped by signal 10 after step 1 of epoch 0" yes \
  "last.pt: epoch 0 stopped after step 1 of its 6" -- \
  --test-signal-at-step 0 --test-rank "$other"
# While the shard is cached: nothing is written, the next run starts afresh.
expect_stop during-cache-fill "interrupted by signal 15 while caching the shard" no \
  "no checkpoint in $dir/during-cache-fill yet: a fresh start" -- \
  --test-signal TERM --test-signal-in-setup --test-rank "$other"
# During epoch 0's validation (rank 0 validates; the other ranks wait for its decision), and
# while rank 0 writes epoch 0's last.pt: the run stops after that epoch's checkpoint.
expect_stop during-validation "stopped by signal 15 after epoch 0" yes "last.pt: epoch 0 done" -- \
  --test-signal TERM --test-signal-in-validation 0 --test-rank "$other"
expect_stop during-checkpoint "stopped by signal 10 after epoch 0" yes "last.pt: epoch 0 done" -- \
  --test-signal-in-checkpoint 0 --test-rank 0
# A signal in the last epoch's validation: the run is complete, so it ends as finished (0).
train "$dir/last-epoch" "$dir/last-epoch.log" --test-signal TERM --test-signal-in-validation 1 --test-rank "$other"
status=$?
if [ "$status" -eq 0 ] && same_figures "$dir/straight/metrics.csv" "$dir/last-epoch/metrics.csv" 2 &&
  [ -s "$dir/last-epoch/summary.json" ]; then
  echo "ok   a signal in the last epoch's validation: the run finished (0) with every figure"
else
  echo "FAIL signal in the last validation: status $status"; tail -n 8 "$dir/last-epoch.log"
  failures=$((failures + 1))
fi

[ "$failures" -eq 0 ] && echo "stop anywhere ($ranks rank(s)): OK"
exit "$failures"
