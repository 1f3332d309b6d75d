#!/usr/bin/env bash
# The README's test command: install what is missing, configure, build, run every test
# (unit tests and the real `mpirun -np 2` cases) through CTest on this machine's Debian 12, then
# the same on Debian 13 (scripts/test-debian13.sh, docs/platforms.md), then the GPU-node bundle:
# made, and built from alone in a bare Debian 13 root with its CPU suite (docs/platforms.md).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each part's wall time, said as it ends and again at the end: CI shows the tail of this log, and its
# 90 minutes are the budget (stop 57 ran past them; docs/performance.md, "CI's time").
run_start=$SECONDS part_start=$SECONDS parts=""
took() {
  parts+="$(printf '\n  %-48s %5d s' "$1" $((SECONDS - part_start)))"
  echo "test: $1 took $((SECONDS - part_start)) s ($((SECONDS - run_start)) s into the run)"
  part_start=$SECONDS
}

bash scripts/install-deps.sh
took "packages (install-deps.sh)"
# Every Note referred to is defined once (docs/architecture.md, "Notes").
bash scripts/check-notes.sh
# Note [the Debian 13 root in the background]: making the second leg's root (debootstrap, then
# apt inside it; a cache hit when it exists) is mostly downloading and unpacking, so it runs
# while the Debian 12 leg compiles instead of after it. If this script ends early, it still waits
# for the root to be finished (or refused), so no half-made root or mount is left behind.
mkdir -p build
bash scripts/test-debian13.sh --root-only >build/debian13-root.log 2>&1 &
root_job=$!
# The bare root of the bundle leg likewise (scripts/test-gpu-bundle.sh; ~3 minutes on a fresh machine).
bash scripts/test-gpu-bundle.sh --root-only >build/gpu-bundle-root.log 2>&1 &
bundle_root_job=$!
# Note [the bundle's libraries in the background]: on a fresh machine scripts/gpu-bundle.sh builds
# Open MPI, HDF5, OpenCV and the rest from Debian 12's sources (~20 minutes of both cores; seconds
# when they are cached). It starts here at the lowest priority: it downloads beside the builds and
# compiles in what CPU time the two legs leave, and the bundle leg waits for it. Its writes are its
# own (build/gpu-bundle, its work folder), and if this script ends early it is waited for too.
nice -n 19 bash scripts/gpu-bundle.sh build/gpu-bundle >build/gpu-bundle.log 2>&1 &
bundle_job=$!
wait_for_background() {
  local job
  for job in "$root_job" "$bundle_root_job" "$bundle_job"; do wait "$job" 2>/dev/null || true; done
}
trap wait_for_background EXIT

# One BLAS/OpenMP thread per process: on CPU, parallelism comes from ranks (docs/performance.md).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
# Cores, counted before OMP_NUM_THREADS=1 is seen: nproc honours OMP_NUM_THREADS (coreutils), and
# with it every build and ctest of CI ran one job at a time.
jobs="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
# See Note [ccache across fresh clones] (scripts/test-debian13.sh): a fresh clone recompiles every
# source; ccache answers those that did not change, the precompiled torch/torch.h included.
export CCACHE_BASEDIR="$PWD" CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
# Tests ON explicitly: launch/quickstart.sh configures the same folder without them.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPIX2PIX_BUILD_TESTS=ON -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DCMAKE_CXX_FLAGS=-fpch-preprocess
ccache --zero-stats >/dev/null
cmake --build build -j"$jobs"
ccache --show-stats | grep -Ei '^ *(hits|misses)' | head -n 2 || true
took "Debian 12: configure and build"
ctest --test-dir build --output-on-failure -j"$jobs"
took "Debian 12: ctest"
# docs/cli.md is this build's own --help (scripts/cli-reference.sh; Boost's wrapping is Debian 12's).
bash scripts/cli-reference.sh --check build/bin/pix2pix

# The second platform: LibTorch 2.6, Open MPI 5, HDF5 1.14, OpenCV 4.10, GCC 14.
root_status=0
wait "$root_job" || root_status=$?
cat build/debian13-root.log
[ "$root_status" = 0 ] || { echo "test: the Debian 13 root could not be made (above); the second leg did not run" >&2; exit 1; }
took "Debian 13 root: the wait for it after Debian 12"
bash scripts/test-debian13.sh
took "Debian 13 leg: build and ctest"

# The bundle for an air-gapped GPU node (issue 31): built from Debian 12's sources (cached), then
# the project built from it alone, and its CPU suite run, where none of its libraries is installed.
bundle_status=0
wait "$bundle_job" || bundle_status=$?
cat build/gpu-bundle.log
[ "$bundle_status" = 0 ] || { echo "test: the GPU bundle could not be made (above); its leg did not run" >&2; exit 1; }
took "GPU bundle: the wait for its libraries"
root_status=0
wait "$bundle_root_job" || root_status=$?
cat build/gpu-bundle-root.log
[ "$root_status" = 0 ] || { echo "test: the bundle leg's root could not be made (above); that leg did not run" >&2; exit 1; }
bash scripts/test-gpu-bundle.sh build/gpu-bundle
took "GPU bundle leg: root, node build and ctest"
echo "test: every leg passed in $((SECONDS - run_start)) s:$parts"
