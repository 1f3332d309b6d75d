#!/usr/bin/env bash
# A run stopped by SIGUSR1 and resumed on the same world size continues exactly, on 1 rank and on
# 4; one stopped on 4 ranks, continued on 1 and finished on 4 again (a job preempted and given
# fewer GPUs for a while) keeps its global batch, its steps and one metrics row per epoch, and the
# log says where the world changed. The global batch is the same 8 on every world, so an epoch is
# 11 steps on 1 rank and on 4 (91 train pairs). Elastic legs are compared by their bookkeeping, not
# their figures: the new world's shards are other samples (docs/distributed.md, "Resuming with
# another world size"), which is so on CPUs and GPUs alike.
# Usage: resume_worlds_test.sh PIX2PIX_BIN MPIRUN...
set -uo pipefail
bin="$1"; shift
mpirun=("$@")
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# shellcheck source=../support/same_figures.sh
. "$(dirname "$0")/../support/same_figures.sh"
# PIX2PIX_TEST_CONFIG: another base config (scripts/gpu-smoke.sh: the smoke with --deterministic on GPUs).
smoke="${PIX2PIX_TEST_CONFIG:-$(cd "$(dirname "$0")/../.." && pwd)/configs/smoke.cfg}"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 101 --out "$dir/d.h5" >/dev/null 2>&1 || { echo "FAIL prepare"; exit 1; }
train() {  # train RANKS NAME [options]: 2 epochs of smoke's networks into $dir/NAME, the log $dir/NAME-N.log
  local ranks="$1" name="$2" n=1 launch=()
  shift 2
  [ "$ranks" -gt 1 ] && launch=("${mpirun[@]}" -np "$ranks")
  while [ -e "$dir/$name-$n.log" ]; do n=$((n + 1)); done
  timeout 240 "${launch[@]}" "$bin" train --config "$smoke" --data "$dir/d.h5" --global-batch 8 --max-epochs 2 \
    --collective-timeout 60 --progress none --run-dir "$dir/$name" "$@" >"$dir/$name-$n.log" 2>&1
}
rows() { tail -n +2 "$1/metrics.csv" 2>/dev/null | cut -d, -f1 | tr '\n' ' '; }
says() { grep -qF -- "$2" "$dir/$1.log" || { echo "  $1.log does not say '$2'"; return 1; }; }

# 1. The same world: stopped, resumed, equal to the uninterrupted run in every loss and val figure.
exact() {  # exact RANKS STOP_STEP STOPPED RESUMED
  local ranks="$1" at="$2" stopped="$3" resumed="$4" name="w$1" status why=""
  train "$ranks" "$name-straight"
  train "$ranks" "$name" --test-signal-at-step "$at" --test-rank $((ranks - 1))
  status=$?
  [ "$ranks" -eq 4 ] && cp -r "$dir/$name" "$dir/chain"  # the stopped run, for 4 -> 1 -> 4 below
  if [ "$status" -eq 75 ] && says "$name-1" "stopped by signal 10 after $stopped" &&
    train "$ranks" "$name" --resume auto && says "$name-2" "resumed from $dir/$name/checkpoints/last.pt: $resumed" &&
    why="$(same_figures "$dir/$name-straight/metrics.csv" "$dir/$name/metrics.csv" 2)"; then
    echo "ok   $ranks rank(s): SIGUSR1 after $stopped (75), then '$resumed' and the uninterrupted run's figures"
  else
    fail "$ranks rank(s): stopped with status $status, then not the uninterrupted run: $why"
    tail -n 6 "$dir/$name-1.log" "$dir/$name-2.log"
  fi
}
exact 1 14 "step 4 of epoch 1" "epoch 0 done, epoch 1 stopped after step 4 of its 11, global step 15"
exact 4 5 "step 6 of epoch 0" "epoch 0 stopped after step 6 of its 11, global step 6"

# 2. 4 -> 1 -> 4: the 4-rank run stopped at step 6 of epoch 0 continues there on 1 rank, which
# stops as epoch 0 validates; 4 ranks run epoch 1 whole.
train 1 chain --resume auto --test-signal-in-validation 0 --test-rank 0
first=$?
train 4 chain --resume auto
second=$?
if [ "$first/$second" = 75/0 ] && [ "$(rows "$dir/chain")" = "0 1 " ] &&
  says chain-1 "resumed from $dir/chain/checkpoints/last.pt: epoch 0 stopped after step 6 of its 11, global step 6" &&
  says chain-1 "note: the world changed from 4 ranks to 1 with the global batch of 8 kept" &&
  says chain-1 "batch                  8 per rank, 8 global; 11 steps/epoch" &&
  says chain-2 "resumed from $dir/chain/checkpoints/last.pt: epoch 0 done, global step 11" &&
  says chain-2 "note: the world changed from 1 rank to 4 with the global batch of 8 kept"; then
  echo "ok   4 -> 1 -> 4: step 6 of epoch 0 continued on 1 rank, epoch 1 on 4; epochs $(rows "$dir/chain")"
else
  fail "4 -> 1 -> 4: statuses $first/$second, epochs '$(rows "$dir/chain")'"
  tail -n 6 "$dir/chain-1.log" "$dir/chain-2.log"
fi

[ "$failures" -eq 0 ] && echo "resume across worlds: OK"
exit "$failures"
