#!/usr/bin/env bash
# cmake/Pix2PixCuda.cmake builds the fused kernels where nvcc builds a CUDA program with our C++
# compiler as its host compiler, and where it does not (a GPU node's nvcc refusing the node's
# compiler, say) configures on without them, with a warning, instead of failing the configure
# (See Note [fused bias and LeakyReLU]). A configure of a project that includes the module, once
# with the C++ compiler and once with a host compiler that fails every compile.
# Arguments: the cmake, the generator and its build program the build folder was made with.
set -euo pipefail
cmake="${1:-cmake}" generator="${2:-Unix Makefiles}" make_program="${3:-}"
module_dir="$(cd "$(dirname "$0")/../../cmake" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$work/project"
cat >"$work/project/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.18)
project(cuda_kernels_configure CXX)
list(APPEND CMAKE_MODULE_PATH "$module_dir")
set(PIX2PIX_WITH_CUDA AUTO)
include(Pix2PixCuda)
message(STATUS "fused kernels: \${PIX2PIX_HAVE_CUDA_KERNELS}")
CMAKE
printf '#!/bin/sh\nexit 1\n' >"$work/failing-c++"
chmod +x "$work/failing-c++"

configure() {  # configure NAME [ARGS...]: its output in $work/NAME.log; its status echoed
  local name="$1" status=0
  shift
  "$cmake" -S "$work/project" -B "$work/$name" -G "$generator" ${make_program:+-DCMAKE_MAKE_PROGRAM="$make_program"} \
    "$@" >"$work/$name.log" 2>&1 || status=$?
  echo "$status"
}
[ "$(configure good)" = 0 ] || { cat "$work/good.log"; fail "the configure failed"; }
grep -q "fused kernels: ON" "$work/good.log" || { cat "$work/good.log"; fail "no kernels with a working host compiler"; }
[ "$(configure failing -DCMAKE_CUDA_HOST_COMPILER="$work/failing-c++")" = 0 ] ||
  { cat "$work/failing.log"; fail "a host compiler nvcc cannot use failed the configure"; }
grep -q "fused kernels: OFF" "$work/failing.log" || { cat "$work/failing.log"; fail "kernels with a failing host compiler"; }
echo "the fused kernels are built where nvcc builds with the host compiler, and left out with a warning where not"
