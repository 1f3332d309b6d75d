#!/usr/bin/env bash
# One job per run directory (See Note [one job per run directory]): while a 2-rank training job runs
# in a --run-dir, a second job there is refused whatever it asks (a new run, --resume auto,
# --overwrite) with a message naming the holder, and the running job's files are untouched; once
# the holder is killed with SIGKILL, the kernel has dropped its lock and --resume auto continues.
# Usage: run_lock_test.sh PIX2PIX_BIN MPIRUN...
set -uo pipefail
bin="$1"; shift
mpirun=("$@" -np 2)
dir="$(mktemp -d)"
holder_job=""
cleanup() {
  [ -n "$holder_job" ] && kill -9 "$holder_job" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
smoke="$(cd "$(dirname "$0")/../.." && pwd)/configs/smoke.cfg"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
rows() { tail -n +2 "$1/metrics.csv" 2>/dev/null | wc -l; }

"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 200 --out "$dir/d.h5" >/dev/null 2>&1 || { echo "FAIL prepare"; exit 1; }
run="$dir/run"
train() { timeout 120 "${mpirun[@]}" "$bin" train --config "$smoke" --data "$dir/d.h5" --collective-timeout 30 \
  --run-dir "$run" "$@"; }

# The holder: long enough to outlive the checks below, which start once it has finished an epoch.
train --max-epochs 1000 >"$dir/holder.log" 2>&1 &
holder_job=$!
for _ in $(seq 1 120); do
  [ "$(rows "$run")" -ge 1 ] && break
  sleep 0.5
done
[ "$(rows "$run")" -ge 1 ] || { fail "the holder did not finish an epoch in 60 s"; tail -n 10 "$dir/holder.log"; exit 1; }
pid="$(sed -n 's/^pid=//p' "$run/.pix2pix.lock")"
host="$(hostname)"
[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || fail "the lock file does not name the live rank 0 (pid '$pid')"

# expect_refused NAME -- options: status 1 within 30 s, the holder named; the holder's config,
# lock record and checkpoint still there, unchanged, and the holder still running.
expect_refused() {
  local name="$1"; shift 2
  local before after status start
  before="$(cksum "$run/config.cfg" "$run/.pix2pix.lock")"
  start=$(date +%s)
  train "$@" >"$dir/$name.log" 2>&1
  status=$?
  after="$(cksum "$run/config.cfg" "$run/.pix2pix.lock")"
  if [ "$status" -ne 1 ] || [ $(($(date +%s) - start)) -gt 30 ] ||
    ! grep -q "is in use by another job (host $host, PID $pid, started .*, command .*train" "$dir/$name.log"; then
    fail "$name: status $status, expected 1 and the holder (host $host, PID $pid) named:"; tail -n 6 "$dir/$name.log"
  elif [ ! -s "$run/checkpoints/last.pt" ] || [ "$before" != "$after" ] || ! kill -0 "$pid" 2>/dev/null; then
    fail "$name: the running job's run directory changed, or the job died"; ls -la "$run"
  else
    echo "ok   $name: refused (status 1), naming host $host, PID $pid; the running job's files intact"
  fi
}
expect_refused fresh-run --
rows_before="$(rows "$run")"
expect_refused resume-auto -- --resume auto
expect_refused overwrite -- --overwrite
# The holder's metrics were not doubled by the refused --resume (each epoch one row).
epochs="$(tail -n +2 "$run/metrics.csv" | cut -d, -f1 | sort | uniq -d | wc -l)"
[ "$epochs" -eq 0 ] && [ "$(rows "$run")" -ge "$rows_before" ] || fail "metrics.csv has repeated epochs"

# The holder dies without a word (SIGKILL of rank 0): its lock goes with it.
kill -9 "$pid"
wait "$holder_job"
holder_job=""
done_epochs="$(rows "$run")"
train --resume auto --max-epochs $((done_epochs + 1)) >"$dir/after.log" 2>&1
status=$?
if [ "$status" -eq 0 ] && grep -q "resumed from $run/checkpoints/last" "$dir/after.log"; then
  echo "ok   after a SIGKILL of the holder: --resume auto took the run directory and finished (no stale lock)"
else
  fail "after the holder's death: status $status"; tail -n 8 "$dir/after.log"
fi

[ "$failures" -eq 0 ] && echo "run lock: OK"
exit "$failures"
