#!/usr/bin/env bash
# 2-rank training jobs that must fail fast and clearly, never hang: a missing dataset, a file that
# is not a dataset, too few samples for ranks x batch, a run directory that holds something, a
# stop request during set-up (status 75, nothing written), a rank that dies mid-run (whose
# --collective-log files then show where each rank stopped), and CycleGAN and onesided runs
# stopped gracefully and resumed to the figures of uninterrupted ones.
set -uo pipefail
bin="$1"; shift
mpirun=("$@")
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
smoke="$(cd "$(dirname "$0")/../.." && pwd)/configs/smoke.cfg"
failures=0

# expect_failure NAME NEEDLE MAX_SECONDS -- train options...   (any non-zero status; with
# EXPECT_STATUS=N in the environment, exactly N)
expect_failure() {
  local name="$1" needle="$2" limit="$3"; shift 4
  local start status elapsed
  start=$(date +%s)
  timeout 120 "${mpirun[@]}" -np 2 "$bin" train --config "$smoke" --collective-timeout 20 "$@" >"$dir/$name.log" 2>&1
  status=$?
  elapsed=$(( $(date +%s) - start ))
  if [ "$status" -eq 0 ] || [ "$status" -eq 124 ] || [ "$elapsed" -gt "$limit" ] || ! grep -q -- "$needle" "$dir/$name.log" ||
    { [ -n "${EXPECT_STATUS:-}" ] && [ "$status" -ne "$EXPECT_STATUS" ]; }; then
    echo "FAIL $name: status $status after ${elapsed}s (limit ${limit}s), expected '$needle' in:"
    tail -15 "$dir/$name.log"
    failures=$((failures + 1))
  else
    echo "ok   $name: status $status after ${elapsed}s"
  fi
}

"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 200 --out "$dir/d.h5" >/dev/null 2>&1
"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 20 --out "$dir/tiny.h5" >/dev/null 2>&1
"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 9500 --out "$dir/big.h5" >/dev/null 2>&1  # 4,275 train pairs a rank: two cache blocks
echo "not hdf5" >"$dir/text.h5"
mkdir -p "$dir/taken" && echo keep >"$dir/taken/notes.txt"

expect_failure missing "missing.h5: no such file" 30 -- --data "$dir/missing.h5" --run-dir "$dir/r1"
expect_failure not-a-dataset "not an HDF5 file" 30 -- --data "$dir/text.h5" --run-dir "$dir/r2"
expect_failure too-few "fewer than --batch-size 10" 30 -- --data "$dir/tiny.h5" --run-dir "$dir/r3" --batch-size 10
EXPECT_STATUS=1 expect_failure run-dir-taken "is not empty (notes.txt)" 30 -- --data "$dir/d.h5" --run-dir "$dir/taken"
if [ "$(ls "$dir/taken")" != notes.txt ]; then
  echo "FAIL run-dir-taken: the refused run wrote into the folder: $(ls "$dir/taken" | tr '\n' ' ')"
  failures=$((failures + 1))
fi
EXPECT_STATUS=75 expect_failure setup-signal "rank 1: interrupted by signal 15 while caching the shard" 30 -- \
  --data "$dir/big.h5" --run-dir "$dir/r5" --test-signal TERM --test-signal-in-setup --test-rank 1
if [ -e "$dir/r5/checkpoints" ]; then
  echo "FAIL setup-signal: a checkpoint folder was written"
  failures=$((failures + 1))
fi
expect_failure rank-dies "dying now" 40 -- --data "$dir/d.h5" --run-dir "$dir/r4" --max-epochs 50 --test-kill-at-step 5 \
  --collective-log

# The collective logs of that job say where each rank stopped: rank 1 died between collectives
# (its last line is an `end`), rank 0 was waiting in the next one (a `begin` numbered one higher,
# without its `end`).
last0="$(tail -1 "$dir/r4/logs/rank-0.collectives.tsv" 2>/dev/null)"
last1="$(tail -1 "$dir/r4/logs/rank-1.collectives.tsv" 2>/dev/null)"
seq0="$(echo "$last0" | cut -f2)"
seq1="$(echo "$last1" | cut -f2)"
if [ "$(echo "$last0" | cut -f1)" = begin ] && [ "$(echo "$last1" | cut -f1)" = end ] && [ "$seq0" = $((seq1 + 1)) ]; then
  echo "ok   collective logs: rank 1 stopped after #$seq1, rank 0 waited in #$seq0 ($(echo "$last0" | cut -f3))"
else
  echo "FAIL collective logs do not show where the ranks stopped: rank 0 '$last0', rank 1 '$last1'"
  failures=$((failures + 1))
fi

# The unpaired models on the same engine: SIGUSR1 to rank 1 mid-run stops both ranks gracefully
# (75, last.pt written), --resume auto finishes the run with every epoch's row, and every loss
# and validation figure equals an uninterrupted run's: each rank got its image pools back
# (See Note [checkpointed image pools]; full from step 7, the stop is at step 14).
# shellcheck source=../support/same_figures.sh
. "$(dirname "$0")/../support/same_figures.sh"
for model in cyclegan onesided; do
  timeout 120 "${mpirun[@]}" -np 2 "$bin" train --config "$smoke" --model "$model" --data "$dir/d.h5" \
    --run-dir "$dir/$model-straight" --max-epochs 3 --collective-log >"$dir/$model-0.log" 2>&1
  status0=$?
  timeout 120 "${mpirun[@]}" -np 2 "$bin" train --config "$smoke" --model "$model" --data "$dir/d.h5" \
    --run-dir "$dir/$model" --max-epochs 3 --test-signal-at-step 14 --test-rank 1 >"$dir/$model-1.log" 2>&1
  status1=$?
  cp -r "$dir/$model" "$dir/$model-elastic"
  timeout 120 "${mpirun[@]}" -np 2 "$bin" train --config "$smoke" --model "$model" --data "$dir/d.h5" \
    --run-dir "$dir/$model" --max-epochs 3 --resume auto >"$dir/$model-2.log" 2>&1
  status2=$?
  rows="$(tail -n +2 "$dir/$model/metrics.csv" 2>/dev/null | wc -l)"
  if [ "$status0" -eq 0 ] && [ "$status1" -eq 75 ] && [ "$status2" -eq 0 ] && [ "$rows" -eq 3 ] &&
    grep -q "resumed from .*last.pt: epoch 0 done, epoch 1 stopped after step" "$dir/$model-2.log" &&
    ! grep -q "starts empty" "$dir/$model-2.log" &&
    same_figures "$dir/$model-straight/metrics.csv" "$dir/$model/metrics.csv" 3; then
    echo "ok   $model: stopped by SIGUSR1 on rank 1 (75), resumed mid-epoch to the end ($rows epochs), as an uninterrupted run"
  else
    echo "FAIL $model graceful stop: statuses $status0, $status1 then $status2, $rows metrics rows"
    tail -n 8 "$dir/$model-0.log" "$dir/$model-1.log" "$dir/$model-2.log"
    failures=$((failures + 1))
  fi
  # Its collective logs: both ranks ran the same collectives (order, kind, size), all finished.
  logs="$dir/$model-straight/logs"
  if [ -s "$logs/rank-0.collectives.tsv" ] &&
    diff <(cut -f1-4 "$logs/rank-0.collectives.tsv") <(cut -f1-4 "$logs/rank-1.collectives.tsv") >/dev/null &&
    [ "$(tail -1 "$logs/rank-0.collectives.tsv" | cut -f1)" = end ]; then
    echo "ok   $model: --collective-log, the same $(($(wc -l <"$logs/rank-0.collectives.tsv") / 2)) collectives on both ranks"
  else
    echo "FAIL $model --collective-log: the ranks' logs differ or end unfinished"
    diff <(cut -f1-4 "$logs/rank-0.collectives.tsv") <(cut -f1-4 "$logs/rank-1.collectives.tsv") | head -5
    failures=$((failures + 1))
  fi
  # The same checkpoint on one process: not exact (another global batch), its one rank continues rank 0's pools.
  if timeout 120 "$bin" train --config "$smoke" --model "$model" --data "$dir/d.h5" --run-dir "$dir/$model-elastic" \
    --max-epochs 3 --resume auto >"$dir/$model-3.log" 2>&1 &&
    grep -q "the checkpoint holds the image pools of 2 ranks: rank r takes rank (r mod 2)'s" "$dir/$model-3.log"; then
    echo "ok   $model: its 2-rank checkpoint continued on 1 process with rank 0's pools"
  else
    echo "FAIL $model: resuming the 2-rank checkpoint on 1 process"
    tail -8 "$dir/$model-3.log"
    failures=$((failures + 1))
  fi
done

[ "$failures" -eq 0 ] && echo "train faults: OK"
exit "$failures"
