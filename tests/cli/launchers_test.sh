#!/usr/bin/env bash
# launch/mpirun-local.sh and launch/mpirun-hosts.sh start real 2-rank training jobs (smoke config)
# and the run directory shows 2 ranks; launch/sweep-local.sh runs a sweep file's lines side by side,
# each bound to a core of its own, skips finished lines, reports a failed one, stops gracefully on
# SIGTERM and continues when run again, and
# slurm/collect-sweep.sh reads the result; bad arguments are refused with usage and status 2. The
# launchers run with Open MPI 4's shared session top blocked: each mpirun has a folder of its own,
# gone when it ends (tests/support/shared_session_top.sh), or, where mpirun was SIGKILLed, when the
# next launch starts.
set -euo pipefail
bin="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
# The blocked top is a file in TMPDIR: never left there by a test that failed.
trap 'rm -rf "$dir"; [ ! -f "${shared_top:-}" ] || rm -f "$shared_top"' EXIT
export PIX2PIX_BIN="$bin"

"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 120 --out "$dir/d.h5" >/dev/null 2>&1

# shellcheck source=tests/support/shared_session_top.sh
source "$root/tests/support/shared_session_top.sh"
block_shared_top
"$root/launch/mpirun-local.sh" 2 --config "$root/configs/smoke.cfg" --data "$dir/d.h5" --run-dir "$dir/local" \
  >"$dir/local.log" 2>&1 || { cat "$dir/local.log"; exit 1; }
grep -q '"world": 2' "$dir/local/summary.json" || { cat "$dir/local/summary.json"; echo "local run was not 2 ranks"; exit 1; }
# One rank per core where there are enough cores, counted whatever OMP_NUM_THREADS says (nproc
# alone honours it: with OMP_NUM_THREADS=1 every 2-rank run was oversubscribed and unbound).
cores="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
if [ "$cores" -ge 2 ]; then want="--bind-to core"; else want="--oversubscribe --bind-to none"; fi
grep -q -- "mpirun-local: mpirun -np 2 .*$want" "$dir/local.log" ||
  { grep 'mpirun-local:' "$dir/local.log"; echo "launcher did not use $want"; exit 1; }
# A redirected log holds lines, not a bar redrawn with carriage returns (mpirun gives rank 0 a
# pty, so the binary alone would draw one); --progress given by the options is kept.
! grep -q $'\r' "$dir/local.log" && grep -q -- 'mpirun-local: .* --progress lines$' "$dir/local.log" ||
  { grep -c $'\r' "$dir/local.log"; echo "a redirected mpirun-local log has carriage returns"; exit 1; }
PIX2PIX_BIN="$(type -P echo)" "$root/launch/mpirun-local.sh" 1 --progress=none >"$dir/echo.log" 2>&1 &&
  grep -q -- 'train --progress=none$' "$dir/echo.log" || { cat "$dir/echo.log"; echo "--progress=none not kept"; exit 1; }

# An mpirun SIGKILLed leaves its session folder (Open MPI 4 removes it in every other end); the
# next launch on this host removes it, and keeps the folder of an mpirun that still runs (here
# the test's own PID stands for one). Open MPI 5 is given no folder.
if mpirun --version | grep -qE '^mpirun \(Open MPI\) [1-4]\.'; then
  printf '#!/bin/sh\necho $$ >"%s/rank.pid"\nexec sleep 60\n' "$dir" >"$dir/idle" && chmod +x "$dir/idle"
  PIX2PIX_BIN="$dir/idle" "$root/launch/mpirun-local.sh" 1 >"$dir/killed.log" 2>&1 &
  killed=$!
  for _ in $(seq 1 300); do [ -s "$dir/rank.pid" ] && break; sleep 0.1; done
  [ -s "$dir/rank.pid" ] || { kill -KILL "$killed"; cat "$dir/killed.log"; echo "the idle rank did not start"; exit 1; }
  kill -KILL "$killed"
  wait "$killed" || true
  kill -KILL "$(cat "$dir/rank.pid")" 2>/dev/null || true
  prefix="${TMPDIR:-/tmp}/pix2pix-mpirun.$(hostname | cut -d. -f1)."
  compgen -G "$prefix$killed.*" >/dev/null ||
    { echo "no session folder of the SIGKILLed mpirun ($prefix$killed.*)"; exit 1; }
  mkdir "$prefix$$.live"
  PIX2PIX_BIN="$(type -P true)" "$root/launch/mpirun-local.sh" 1 >"$dir/after.log" 2>&1 ||
    { cat "$dir/after.log"; exit 1; }
  ! compgen -G "$prefix$killed.*" >/dev/null && [ -d "$prefix$$.live" ] ||
    { ls -d "$prefix"*; echo "the next launch did not remove the SIGKILLed mpirun's folder alone"; exit 1; }
  rmdir "$prefix$$.live"
fi
unblock_shared_top "mpirun-local.sh" || exit 1

# The 2-rank run continues on one process: replicated state, the log says the global batch changed.
"$bin" train --config "$root/configs/smoke.cfg" --data "$dir/d.h5" --run-dir "$dir/local" --resume auto \
  --max-epochs 3 >"$dir/resume.log" 2>&1 || { cat "$dir/resume.log"; exit 1; }
grep -q 'global batch changed from 16 (2 ranks) to 8 (1 ranks)' "$dir/resume.log" || { cat "$dir/resume.log"; exit 1; }
grep -q '"world": 1' "$dir/local/summary.json" && [ "$(tail -n +2 "$dir/local/metrics.csv" | wc -l)" = 3 ] \
  || { cat "$dir/local/metrics.csv"; echo "resumed run did not add epoch 2"; exit 1; }

block_shared_top
echo "localhost slots=2" >"$dir/hosts"
"$root/launch/mpirun-hosts.sh" "$dir/hosts" --config "$root/configs/smoke.cfg" --data "$dir/d.h5" \
  --run-dir "$dir/hosts-run" --global-batch 16 >"$dir/hosts.log" 2>&1 || { cat "$dir/hosts.log"; exit 1; }
grep -q '"global_batch": 16' "$dir/hosts-run/summary.json" || { echo "hosts run: wrong global batch"; exit 1; }
grep -q 'rank 1  host' "$dir/hosts.log" || { cat "$dir/hosts.log"; echo "no per-rank start-up table"; exit 1; }
! grep -q $'\r' "$dir/hosts.log" && grep -q 'progress = lines' "$dir/hosts-run/config.cfg" ||
  { echo "a redirected mpirun-hosts log has carriage returns, or its run did not take --progress lines"; exit 1; }

# A sweep of two lines (a comment and a blank line between), two at once where there are 2 cores.
jobs=$([ "$cores" -ge 2 ] && echo 2 || echo 1)
printf -- '--global-batch 4 --lr-scaling none\n# the rule\n\n--global-batch 8 --lr-scaling sqrt --base-batch 4\n' >"$dir/two.sweep"
JOBS=$jobs "$root/launch/sweep-local.sh" "$dir/two.sweep" "$dir/sweep" --config "$root/configs/smoke.cfg" \
  --data "$dir/d.h5" --max-epochs 1 >"$dir/sweep.log" 2>&1 || { cat "$dir/sweep.log" "$dir"/sweep/task-*.log; exit 1; }
grep -q '"global_batch": 4' "$dir/sweep/task-001/summary.json" && grep -q '"global_batch": 8' "$dir/sweep/task-002/summary.json" &&
  grep -q '"lr_scaling": "sqrt"' "$dir/sweep/task-002/summary.json" || { cat "$dir"/sweep/task-*/summary.json; echo "sweep lines not applied"; exit 1; }
if [ "$jobs" = 2 ]; then
  # Side by side, each on its own core: the launcher was told which, and mpirun kept the rank there.
  grep -q 'task 002 on cores 1-1' "$dir/sweep.log" && grep -q -- '--cpu-set 1 ' "$dir/sweep/task-002.log" ||
    { cat "$dir/sweep.log" "$dir/sweep/task-002.log"; echo "second line not on core 1"; exit 1; }
fi
"$root/slurm/collect-sweep.sh" "$dir/sweep" --csv "$dir/sweep.csv" >"$dir/table.txt"
grep -q '^task-001,4,none,0.0002,0,-1,null,[0-9]*,max-epochs$' "$dir/sweep.csv" &&
  grep -q '^task-002,8,sqrt,0.0002828[0-9]*,0,-1,null,[0-9]*,max-epochs$' "$dir/sweep.csv" ||
  { cat "$dir/sweep.csv"; echo "collector rows wrong"; exit 1; }
# Again: nothing left to run. With a failing line added: status 1, its log's end, the rest done.
printf -- '--global-batch 2 --no-such-option 1\n' >>"$dir/two.sweep"
set +e
JOBS=$jobs "$root/launch/sweep-local.sh" "$dir/two.sweep" "$dir/sweep" --config "$root/configs/smoke.cfg" \
  --data "$dir/d.h5" --max-epochs 1 >"$dir/again.log" 2>&1
status=$?
set -e
[ "$status" = 1 ] && [ "$(grep -c 'already finished, skipped' "$dir/again.log")" = 2 ] &&
  grep -q 'task 003 failed with status 2' "$dir/again.log" && grep -q 'no-such-option' "$dir/again.log" ||
  { cat "$dir/again.log"; echo "rerun with a failing line: status $status"; exit 1; }

# SIGTERM to the sweep mid-line: the line checkpoints, the sweep ends with 75 and no summary; the
# same command resumes the line and finishes it.
printf -- '--global-batch 4 --lr-scaling none\n' >"$dir/long.sweep"
long=(JOBS=1 "$root/launch/sweep-local.sh" "$dir/long.sweep" "$dir/long" --config "$root/configs/smoke.cfg"
  --data "$dir/d.h5" --max-epochs 40)
env "${long[@]}" >"$dir/long.log" 2>&1 &
sweeper=$!
for _ in $(seq 1 600); do [ -f "$dir/long/task-001/checkpoints/last.pt" ] && break; sleep 0.1; done
kill -TERM "$sweeper"
set +e
wait "$sweeper"
status=$?
set -e
[ "$status" = 75 ] && grep -q 'stopped by a signal' "$dir/long.log" && [ ! -f "$dir/long/task-001/summary.json" ] ||
  { cat "$dir/long.log" "$dir/long/task-001.log"; echo "SIGTERM to the sweep: status $status"; exit 1; }
env "${long[@]}" >"$dir/long-again.log" 2>&1 || { cat "$dir/long-again.log" "$dir/long/task-001.log"; exit 1; }
grep -q 'resumed from .*last.pt' "$dir/long/task-001.log" && grep -q '"last_epoch": 39' "$dir/long/task-001/summary.json" ||
  { cat "$dir/long/task-001.log"; echo "the stopped line did not resume and finish"; exit 1; }

set +e
"$root/launch/mpirun-local.sh" two >/dev/null 2>&1; s1=$?
"$root/launch/mpirun-hosts.sh" "$dir/nowhere" >/dev/null 2>&1; s2=$?
PIX2PIX_CPU_SET=1-2 "$root/launch/mpirun-local.sh" 1 >/dev/null 2>&1; s3=$?
"$root/launch/sweep-local.sh" "$dir/no.sweep" "$dir/x" >/dev/null 2>&1; s4=$?
JOBS=$((cores + 1)) "$root/launch/sweep-local.sh" "$dir/two.sweep" "$dir/x" >"$dir/toomany.log" 2>&1; s5=$?
set -e
[ "$s1" = 2 ] && [ "$s2" = 2 ] && [ "$s3" = 2 ] && [ "$s4" = 2 ] && [ "$s5" = 2 ] ||
  { echo "bad arguments gave $s1 / $s2 / $s3 / $s4 / $s5, expected 2"; exit 1; }
grep -q "need $((cores + 1)) cores; this node has $cores" "$dir/toomany.log" || { cat "$dir/toomany.log"; exit 1; }
unblock_shared_top "mpirun-hosts.sh and sweep-local.sh" || exit 1
# slurm/scaling-study.sh without Slurm (--local): 1 and 2 ranks here, one row each in scaling.csv
# with the threads per rank; a --batch the ranks cannot share is refused for that point.
PIX2PIX_BIN="$bin" "$root/slurm/scaling-study.sh" --local --max-gpus 2 --cpu --batch 16 --steps 2 --warmup 1 \
  --out "$dir/scaling" -- --config "$root/configs/smoke.cfg" --data "$dir/d.h5" >"$dir/scaling.log" 2>&1 ||
  { cat "$dir/scaling.log" "$dir"/scaling/point-*.out; echo "scaling-study.sh --local failed"; exit 1; }
[ "$(tail -n +2 "$dir/scaling/scaling.csv" | cut -d, -f1,10 | tr '\n' ' ')" = "1,1 2,1 " ] ||
  { cat "$dir/scaling/scaling.csv"; echo "scaling-study.sh --local: not one row per point with 1 thread"; exit 1; }
if PIX2PIX_BIN="$bin" "$root/slurm/scaling-study.sh" --local --max-gpus 2 --cpu --batch 3 --steps 1 --warmup 0 \
  --out "$dir/scaling-odd" -- --config "$root/configs/smoke.cfg" --data "$dir/d.h5" >"$dir/odd.log" 2>&1; then
  cat "$dir/odd.log"; echo "scaling-study.sh: --batch 3 on 2 ranks passed"; exit 1
fi
grep -q "batch 3 does not divide by 2 ranks" "$dir/odd.log" || { cat "$dir/odd.log"; exit 1; }
echo "launchers: OK"
