#!/usr/bin/env bash
# gpu-node-run.sh BUNDLE_DIR [--out DIR] [--budget SECONDS] [--node DIR] [--jobs N] [--no-tests]
#
# Everything to run on a held GPU node, as one command inside the time the node is held: what the
# node has, gpu-node-build.sh (verify, unpack, build, the C++ runtime check), scripts/gpu-smoke.sh
# with the budget left less a reserve for the tests, then the test suite (all but the cluster
# tests) with what is left. What to send back lands in --out (default: gpu-node-report beside the
# bundle): node.txt, node-build.txt, ninja-build.log.xz, link-pix2pix.txt, gpu-smoke-report.txt,
# smoke.txt, ctest.txt and LastTest.log.xz (every test's output). --budget (default 1500 s, 25 minutes of a 30-minute
# hold) counts from the start. --no-tests gives the smoke the whole budget (GPU_SMOKE_ONLY and the
# smoke's other variables pass through). Exit status: 0 when the build, the smoke and the tests
# (unless --no-tests) all passed.
# docs/platforms.md: "Building on an air-gapped GPU node".
{  # See Note [read whole before running] (scripts/gpu-node-build.sh).
set -uo pipefail
usage() { sed -n '2p' "$0" | sed 's/^# //'; exit 2; }
bundle="" out="" budget=1500 node="" jobs="$(nproc)" tests=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --budget) budget="$2"; shift 2 ;;
    --node) node="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --no-tests) tests=0; shift ;;
    -h|--help) usage ;;
    -*) echo "gpu-node-run: unknown option '$1'" >&2; usage ;;
    *) [ -z "$bundle" ] || usage; bundle="$1"; shift ;;
  esac
done
[ -n "$bundle" ] || usage
case "$budget" in ''|*[!0-9]*) echo "gpu-node-run: --budget is a whole number of seconds, not '$budget'" >&2; exit 2 ;; esac
[ -f "$bundle/gpu-node-build.sh" ] || { echo "gpu-node-run: $bundle has no gpu-node-build.sh: not a bundle of scripts/gpu-bundle.sh" >&2; exit 1; }
bundle="$(cd "$bundle" && pwd)"
node="${node:-$(dirname "$bundle")/pix2pix-node}"
out="${out:-$(dirname "$bundle")/gpu-node-report}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
log() { printf 'gpu-node-run: %s\n' "$*"; }
keep_log() {  # keep_log FILE NAME: FILE into --out as NAME.xz (or NAME where the node has no xz)
  if command -v xz >/dev/null; then xz -c "$1" >"$out/$2.xz"; else cp "$1" "$out/$2"; fi
}
# mpirun's tests and the smoke's ranks, where the node's commands run as root.
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

{
  date -u
  echo "cores $(nproc)"
  free -g 2>/dev/null | head -n 2
  nvidia-smi 2>&1 || echo "no nvidia-smi"
  if command -v nvcc >/dev/null; then nvcc --version | tail -n 2; else echo "no nvcc on PATH"; fi
  python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "C++11 ABI",
    torch._C._GLIBCXX_USE_CXX11_ABI, "NCCL", ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "-")' 2>&1
  cmake --version 2>&1 | head -n 1
  echo "ninja $(ninja --version 2>&1)"
  c++ --version 2>&1 | head -n 1
  ldd --version 2>&1 | head -n 1
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
} >"$out/node.txt" 2>&1
log "the node: $out/node.txt"

bash "$bundle/gpu-node-build.sh" "$bundle" --node "$node" --jobs "$jobs" 2>&1 | tee "$out/node-build.txt"
build_status=${PIPESTATUS[0]}
[ -f "$node/build.log" ] && keep_log "$node/build.log" ninja-build.log
[ -f "$node/link-pix2pix.txt" ] && cp "$node/link-pix2pix.txt" "$out/"
if [ ! -x "$node/build/bin/pix2pix" ]; then
  log "no pix2pix was built (gpu-node-build.sh exited $build_status): see $out/node-build.txt"
  exit 1
fi
# shellcheck disable=SC1091 # written by gpu-node-build.sh
. "$node/env.sh"

# The tests take about 100 s on 16 cores: keep that for them when the budget allows.
reserve=120
[ "$tests" = 1 ] || reserve=0
smoke_budget=$((budget - SECONDS - reserve))
[ "$smoke_budget" -ge 60 ] || smoke_budget=$((budget - SECONDS))
smoke_status=1
if [ "$smoke_budget" -gt 0 ]; then
  log "smoke: ${smoke_budget} s"
  (cd "$node/pix2pix-mpi" && GPU_SMOKE_BUDGET_S=$smoke_budget bash scripts/gpu-smoke.sh "$node/build" \
    "$out/gpu-smoke-report.txt") 2>&1 | tee "$out/smoke.txt"
  smoke_status=${PIPESTATUS[0]}
else
  log "no time left for the smoke (--budget $budget)"
fi

tests_status=1
left=$((budget - SECONDS))
if [ "$tests" = 0 ]; then
  tests_status=0
  log "tests: not run (--no-tests)"
elif [ "$left" -gt 10 ]; then
  log "tests: ${left} s"
  timeout "$left" ctest --test-dir "$node/build" -j "$jobs" -E '^cluster' --timeout 120 --output-on-failure \
    >"$out/ctest.txt" 2>&1
  tests_status=$?
  [ "$tests_status" = 124 ] && echo "gpu-node-run: stopped at --budget $budget" >>"$out/ctest.txt"
  grep -E 'tests passed|tests failed' "$out/ctest.txt" || tail -n 3 "$out/ctest.txt"
  log_file="$node/build/Testing/Temporary/LastTest.log"
  [ -f "$log_file" ] && keep_log "$log_file" LastTest.log
else
  log "no time left for the tests (--budget $budget)"
fi
log "build exit $build_status, smoke exit $smoke_status, tests exit $tests_status, ${SECONDS} s; send back $out"
[ "$build_status" = 0 ] && [ "$smoke_status" = 0 ] && [ "$tests_status" = 0 ]
exit $?
}
