#!/usr/bin/env bash
# scripts/gpu-node-run.sh around stand-ins: a bundle whose gpu-node-build.sh leaves a node folder
# with a stand-in pix2pix and a one-test ctest, the real scripts/gpu-smoke.sh, and an nvidia-smi
# that lists one GPU. What is checked is the runner's own part: the budget split between the smoke
# and the tests (each stopped or skipped at it), what lands in --out, and the exit status.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The stand-in build: its pix2pix is a CUDA build with one GPU (HANG=1: every command then hangs),
# or not a CUDA build at all (HANG=0: the smoke stops at its first check).
mkdir -p "$work/bundle" "$work/bin"
printf '#!/bin/sh\necho "GPU 0: Stand-in (UUID: GPU-0)"\n' >"$work/bin/nvidia-smi"
cat >"$work/bundle/gpu-node-build.sh" <<EOF
#!/usr/bin/env bash
set -e
node="\$3"
mkdir -p "\$node/build/bin" "\$node/pix2pix-mpi/scripts"
cp "$root/scripts/gpu-smoke.sh" "\$node/pix2pix-mpi/scripts/"
echo 0123456789abcdef >"\$node/pix2pix-mpi/.bundle-commit"
echo "ninja: the stand-in's build log" >"\$node/build.log"
echo "export PATH=\"$work/bin:\\\$PATH\"" >"\$node/env.sh"
cat >"\$node/build/bin/pix2pix" <<'PIX'
#!/bin/sh
if [ "\$1" = --version ]; then
  echo "pix2pix-mpi (stand-in)"
  [ "\$HANG" = 1 ] && { echo "  CUDA/NCCL compiled for CUDA runtime 13.0"; echo "  GPUs      1 visible"; }
  exit 0
fi
exec sleep 600
PIX
chmod +x "\$node/build/bin/pix2pix"
echo 'add_test(standin "true")' >"\$node/build/CTestTestfile.cmake"
echo "gpu-node-build (stand-in): built"
EOF
chmod +x "$work/bin/nvidia-smi" "$work/bundle/gpu-node-build.sh"

# run NAME HANG BUDGET [OPTION...]: gpu-node-run.sh's exit status, its output in NAME.log, --out NAME/.
run() {
  local status=0 name="$1" hang="$2" budget="$3"
  shift 3
  HANG="$hang" bash "$root/scripts/gpu-node-run.sh" "$work/bundle" --node "$work/node-$name" --out "$work/$name" \
    --budget "$budget" --jobs 1 "$@" >"$work/$name.log" 2>&1 || status=$?
  echo "$status"
}
has() { grep -qF -- "$2" "$1" || { cat "$1"; fail "$1 lacks: $2"; }; }

# A smoke that fails at once: the tests still run, with the rest of the budget; exit 1.
[ "$(run quick 0 300)" = 1 ] || { cat "$work/quick.log"; fail "a failed smoke did not exit 1"; }
for f in node.txt node-build.txt gpu-smoke-report.txt smoke.txt ctest.txt; do [ -s "$work/quick/$f" ] || fail "quick: no $f"; done
[ -s "$work/quick/ninja-build.log.xz" ] || [ -s "$work/quick/ninja-build.log" ] || fail "quick: no build log"
has "$work/quick/gpu-smoke-report.txt" "commit   0123456 (from the bundle)"
has "$work/quick/gpu-smoke-report.txt" "is not a CUDA build"
has "$work/quick/ctest.txt" "100% tests passed"  # CMake 4 leaves out ", 0 tests failed"
has "$work/quick.log" "build exit 0, smoke exit 1, tests exit 0"

# A smoke that hangs, on a budget too small to keep the tests' reserve: the smoke gets it all and is
# stopped at it, the tests get nothing, and the whole run ends near the budget. 20 s: with 6, a loaded
# CI-2c spent the smoke's share before its hanging step began (SKIP "GPU_SMOKE_BUDGET_S=1 spent").
start=$SECONDS
[ "$(run hang 1 20)" = 1 ] || { cat "$work/hang.log"; fail "a hung smoke did not exit 1"; }
[ $((SECONDS - start)) -lt 50 ] || fail "a budget of 20 s took $((SECONDS - start)) s"
has "$work/hang/gpu-smoke-report.txt" "stopped at GPU_SMOKE_BUDGET_S="
has "$work/hang.log" "no time left for the tests (--budget 20)"

# --no-tests: the smoke alone; its failure is the run's.
[ "$(run notests 0 300 --no-tests)" = 1 ] || { cat "$work/notests.log"; fail "--no-tests: a failed smoke did not exit 1"; }
has "$work/notests.log" "tests: not run (--no-tests)"
[ ! -e "$work/notests/ctest.txt" ] || fail "--no-tests ran the tests"

# Not a bundle, and a budget that is not a number: clear errors before anything runs.
status=0
bash "$root/scripts/gpu-node-run.sh" "$work" >"$work/nobundle.log" 2>&1 || status=$?
[ "$status" = 1 ] || fail "a folder without gpu-node-build.sh: exit $status, not 1"
has "$work/nobundle.log" "has no gpu-node-build.sh: not a bundle of scripts/gpu-bundle.sh"
status=0
bash "$root/scripts/gpu-node-run.sh" "$work/bundle" --budget soon >"$work/badbudget.log" 2>&1 || status=$?
[ "$status" = 2 ] || fail "--budget soon: exit $status, not 2"
has "$work/badbudget.log" "--budget is a whole number of seconds, not 'soon'"
echo "gpu-node-run splits its budget, stops what outruns it and leaves what to send back in --out"
