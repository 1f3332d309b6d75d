#!/usr/bin/env bash
# Training at 3 and 4 ranks (issue 30), oversubscribed on a 2-core machine with tiny networks: a
# train split that no world size divides (each rank the same floor(N/W) samples, the steps that
# follow), rank 0's stop decision reaching every rank, elastic resumes 4 -> 3, 3 -> 2 and 1 -> 4
# that continue the interrupted epoch at the step nearest to the samples seen and leave one
# metrics row per epoch, a rank killed in a 4-rank job ending it within seconds, and the replica
# check and collective log at 4 ranks.
# Usage: many_ranks_test.sh PIX2PIX_BIN MPIRUN...
set -uo pipefail
bin="$1"; shift
mpirun=("$@")
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# PIX2PIX_TEST_CONFIG: another base config (scripts/gpu-smoke.sh: the smoke with --deterministic on GPUs).
smoke="${PIX2PIX_TEST_CONFIG:-$(cd "$(dirname "$0")/../.." && pwd)/configs/smoke.cfg}"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# 101 images, 10 % val: 91 train pairs, divided by neither 3 nor 4.
"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 101 --out "$dir/d.h5" >/dev/null 2>&1 || { echo "FAIL prepare"; exit 1; }
train() {  # train RANKS LOG [options]: smoke's networks (or $CONFIG's), batch 2 a rank
  local ranks="$1" log="$2"; shift 2
  local launch=()
  [ "$ranks" -gt 1 ] && launch=("${mpirun[@]}" -np "$ranks")
  timeout 240 "${launch[@]}" "$bin" train --config "${CONFIG:-$smoke}" --data "$dir/d.h5" --batch-size 2 \
    --collective-timeout 60 --progress none "$@" >"$log" 2>&1
}
rows() { tail -n +2 "$1/metrics.csv" 2>/dev/null | cut -d, -f1 | tr '\n' ' '; }

# 1. Uneven shards: floor(91 / 3) = 30 samples a rank, 15 steps of 2; floor(91 / 4) = 22, 11 steps.
for ranks in 3 4; do
  steps=$(((91 / ranks) / 2))
  if train "$ranks" "$dir/shards-$ranks.log" --run-dir "$dir/shards-$ranks" --max-epochs 1 &&
    grep -q "2 per rank, $((2 * ranks)) global; $steps steps/epoch" "$dir/shards-$ranks.log"; then
    echo "ok   $ranks ranks on 91 train pairs: $steps steps of $((2 * ranks)) an epoch ($((91 - ranks * (91 / ranks))) pairs left out)"
  else
    fail "$ranks ranks on 91 train pairs: expected $steps steps an epoch"; tail -n 8 "$dir/shards-$ranks.log"
  fi
done

# 2. Rank 0's stop decision reaches every rank: a flat PSNR (lr 1e-30) stops at best + patience
# (smoke's options with early stopping on).
grep -v '^no-early-stop' "$smoke" >"$dir/es.cfg"
CONFIG="$dir/es.cfg" train 4 "$dir/stop.log" --run-dir "$dir/stop" --max-epochs 20 --lr 1e-30 --es-window 1 \
  --es-patience 2
status=$?
if [ "$status" -eq 0 ] && grep -q '"stop_reason": "early stopping' "$dir/stop/summary.json" 2>/dev/null &&
  [ "$(rows "$dir/stop" | wc -w)" -lt 20 ]; then
  echo "ok   4 ranks: early stopping on rank 0 ended every rank (status 0) after $(rows "$dir/stop" | wc -w) epochs"
else
  fail "4 ranks: rank 0's stop decision (status $status)"; tail -n 8 "$dir/stop.log"
fi

# 3. Elastic resumes: stopped by SIGUSR1 in epoch 1 (or as epoch 0 ends), continued on another
# world size with one metrics row per epoch. Mid-epoch, the interrupted epoch continues at the step
# nearest to the samples seen: the new world's shards are other samples, so it is the nearest, not
# exact (docs/distributed.md); at an epoch boundary the next epoch runs whole on the new world.
elastic() {  # elastic NAME FROM TO STOP_STEP|boundary
  local name="$1" from="$2" to="$3" at="$4" run="$dir/$1"
  local per_epoch=$(((91 / from) / 2)) to_epoch=$(((91 / to) / 2)) status resumed expected expected_note=""
  if [ "$at" = boundary ]; then
    train "$from" "$dir/$name-1.log" --run-dir "$run" --max-epochs 3 --test-signal-in-validation 0 --test-rank 0
    status=$?
    expected="resumed from $run/checkpoints/last.pt: epoch 0 done, global step $per_epoch"
  else
    train "$from" "$dir/$name-1.log" --run-dir "$run" --max-epochs 3 --test-signal-at-step "$at" --test-rank 0
    status=$?
    local done_steps=$((at + 1 - per_epoch))  # the stop comes after global step `at` has run
    local nearest=$((done_steps * from / to))   # the same samples in the new world's steps of 2 a rank
    [ "$nearest" -gt "$to_epoch" ] && nearest=$to_epoch
    expected="epoch 1 stopped after step $done_steps, global step $((at + 1))"
    expected_note="; epoch 1 counts $nearest of its $to_epoch steps as done, the nearest to the $((done_steps * 2 * from)) samples seen"
  fi
  train "$to" "$dir/$name-2.log" --run-dir "$run" --max-epochs 3 --resume auto
  resumed=$?
  if [ "$status" -eq 75 ] && [ "$resumed" -eq 0 ] && [ "$(rows "$run")" = "0 1 2 " ] &&
    grep -q "$expected" "$dir/$name-2.log" &&
    grep -qF "global batch changed from $((2 * from)) ($from ranks) to $((2 * to)) ($to ranks)$expected_note" "$dir/$name-2.log"; then
    echo "ok   elastic $from -> $to ($at): '$expected'; epochs $(rows "$run")"
  else
    fail "elastic $from -> $to ($at): statuses $status then $resumed, epochs '$(rows "$run")', expected '$expected'"
    tail -n 6 "$dir/$name-1.log" "$dir/$name-2.log"
  fi
}
elastic four-to-three 4 3 14        # 11 steps an epoch: stopped after step 4 of epoch 1
elastic three-to-two 3 2 boundary   # 15 steps an epoch, stopped as epoch 0 validates
elastic one-to-four 1 4 50          # 45 steps an epoch: stopped after step 6 of epoch 1

# 4. A rank killed in a 4-rank job ends the job within seconds, not at the collective timeout.
start=$(date +%s)
train 4 "$dir/killed.log" --run-dir "$dir/killed" --max-epochs 50 --test-kill-at-step 5 --test-rank 2
status=$?
took=$(($(date +%s) - start))
if [ "$status" -ne 0 ] && [ "$took" -lt 50 ] && grep -q "rank 2: --test-kill-at-step 5: dying now" "$dir/killed.log"; then
  echo "ok   rank 2 of 4 killed at step 5: the job ended with status $status after ${took} s (collective timeout 60 s)"
else
  fail "rank 2 of 4 killed: status $status after ${took} s"; tail -n 8 "$dir/killed.log"
fi

# 5. The replica check every 3 steps and the collective log at 4 ranks: the same collectives on all.
if train 4 "$dir/logs.log" --run-dir "$dir/logs" --max-epochs 1 --check-replicas 3 --collective-log; then
  same=1
  for r in 1 2 3; do
    diff <(cut -f1-4 "$dir/logs/logs/rank-0.collectives.tsv") <(cut -f1-4 "$dir/logs/logs/rank-$r.collectives.tsv") \
      >/dev/null || same=0
  done
  count=$(($(wc -l <"$dir/logs/logs/rank-0.collectives.tsv") / 2))
  if [ "$same" -eq 1 ] && [ "$count" -gt 0 ]; then
    echo "ok   4 ranks with --check-replicas 3 and --collective-log: the same $count collectives on every rank"
  else
    fail "4 ranks: the collective logs differ"
  fi
else
  fail "4 ranks with --check-replicas 3 --collective-log"; tail -n 8 "$dir/logs.log"
fi

[ "$failures" -eq 0 ] && echo "many ranks: OK"
exit "$failures"
