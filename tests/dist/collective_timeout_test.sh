#!/usr/bin/env bash
# mpirun -np 2 of collective_timeout_probe: the job must end non-zero within a few seconds of the
# 2 s collective timeout, with a message naming the stalled collective and the rank.
set -uo pipefail
probe="$1"; shift
start=$(date +%s)
out="$(timeout 100 "$@" -np 2 "$probe" 2 2>&1)"
status=$?
elapsed=$(( $(date +%s) - start ))
echo "$out" | tail -5
echo "exit status $status after ${elapsed}s"
[ "$status" -ne 0 ] || { echo "the job did not fail"; exit 1; }
[ "$status" -ne 124 ] || { echo "the job hung until the test's own timeout"; exit 1; }
[ "$elapsed" -lt 30 ] || { echo "the job took ${elapsed}s to end"; exit 1; }
grep -q 'rank 0: collective #2 (allreduce_sum, 4000 bytes) did not complete within --collective-timeout 2 s' <<<"$out" \
  || { echo "no report naming the collective"; exit 1; }
echo "collective timeout: OK"
