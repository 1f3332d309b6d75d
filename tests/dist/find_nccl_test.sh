#!/usr/bin/env bash
# cmake/FindNCCL.cmake picks the NCCL it is pointed to (NCCL_HOME: a pip wheel's folder, which has
# only libnccl.so.2) over a system libnccl.so found later in the search, and reads the version from
# that folder's nccl.h. A configure of an empty project with fake library files; no compiler.
# Arguments: the cmake, the generator and its build program the build folder was made with (a GPU
# node's root has ninja and no make).
set -euo pipefail
cmake="${1:-cmake}" generator="${2:-Unix Makefiles}" make_program="${3:-}"
module_dir="$(cd "$(dirname "$0")/../../cmake" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

header() {  # header DIR MINOR PATCH: an nccl.h of version 2.MINOR.PATCH
  mkdir -p "$1"
  printf '#define NCCL_MAJOR 2\n#define NCCL_MINOR %s\n#define NCCL_PATCH %s\n' "$2" "$3" >"$1/nccl.h"
}
header "$work/wheel/include" 28 9
mkdir -p "$work/wheel/lib" "$work/system/lib" "$work/project"
: >"$work/wheel/lib/libnccl.so.2"
header "$work/system/include" 28 3
: >"$work/system/lib/libnccl.so"
cat >"$work/project/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.18)
project(find_nccl NONE)
list(APPEND CMAKE_MODULE_PATH "$module_dir")
set(CMAKE_FIND_LIBRARY_PREFIXES lib)
set(CMAKE_FIND_LIBRARY_SUFFIXES .so)
# Where a system NCCL lies: searched after the hints, as /usr/lib is.
list(APPEND CMAKE_SYSTEM_LIBRARY_PATH "$work/system/lib")
list(APPEND CMAKE_SYSTEM_INCLUDE_PATH "$work/system/include")
find_package(NCCL REQUIRED)
get_target_property(location NCCL::nccl IMPORTED_LOCATION)
message(STATUS "found NCCL \${NCCL_VERSION} at \${location}")
CMAKE

configure() {  # configure NAME ARGS...: the project configured afresh, its output in NAME.log
  local name="$1"
  shift
  rm -rf "$work/build"
  "$cmake" -S "$work/project" -B "$work/build" -G "$generator" ${make_program:+-DCMAKE_MAKE_PROGRAM="$make_program"} "$@" \
    >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "$name: configure failed"; }
}
configure hinted -DNCCL_HOME="$work/wheel"
grep -qF -- "found NCCL 2.28.9 at $work/wheel/lib/libnccl.so.2" "$work/hinted.log" ||
  { cat "$work/hinted.log"; fail "NCCL_HOME's libnccl.so.2 was not the one found"; }
# Without a hint the system's is found: the search itself works, and the case above can tell them apart.
configure unhinted
grep -qF -- "found NCCL 2.28.3 at $work/system/lib/libnccl.so" "$work/unhinted.log" ||
  { cat "$work/unhinted.log"; fail "without NCCL_HOME the system's libnccl.so was not found"; }
echo "OK: the hinted wheel's libnccl.so.2 over a system libnccl.so; the system's without a hint"
