#!/usr/bin/env bash
# cmake/SharedLibstdcxx.cmake with stand-in compilers (See Note [one C++ runtime] in
# src/CMakeLists.txt): the compiler's libstdc++.so where it finds one; where that is missing or a
# dangling symlink (passed over, as the linker passes it over), its libstdc++.so.6; then the first
# folder given that holds a libstdc++.so.6; "" where there is none.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$work/print.cmake" <<CMAKE
include("$root/cmake/SharedLibstdcxx.cmake")
pix2pix_shared_libstdcxx(found "\${COMPILER}" \${FOLDERS})
message(NOTICE "found=\${found}")
CMAKE
# compiler NAME SO SO6: a stand-in whose -print-file-name answers SO for libstdc++.so and SO6 for
# libstdc++.so.6 (a bare name where it finds none, as GCC does).
compiler() {
  printf '#!/bin/sh\ncase "$1" in\n  -print-file-name=libstdc++.so) echo "%s" ;;\n  -print-file-name=libstdc++.so.6) echo "%s" ;;\n  *) exit 1 ;;\nesac\n' \
    "$2" "$3" >"$work/$1"
  chmod +x "$work/$1"
}
# expect NAME WANT [FOLDER...]: the module with stand-in NAME (and FOLDERs) gives WANT.
expect() {
  local name="$1" want="$2" got
  shift 2
  got="$("${CMAKE:-cmake}" -DCOMPILER="$work/$name" -DFOLDERS="$(IFS=';'; echo "$*")" -P "$work/print.cmake" 2>&1 | sed -n 's/^found=//p')"
  [ "$got" = "$want" ] || fail "$name: '$got', not '$want'"
  echo "shared_libstdcxx: $name: ${want:-(none)}"
}

mkdir -p "$work/gcc/lib" "$work/sys/lib" "$work/empty"
touch "$work/gcc/lib/libstdc++.so" "$work/gcc/lib/libstdc++.so.6" "$work/sys/lib/libstdc++.so.6"
ln -s "$work/nowhere/libstdc++.so.6" "$work/gcc/lib/dangling.so"

compiler finds-so "$work/gcc/lib/libstdc++.so" "$work/gcc/lib/libstdc++.so.6"
expect finds-so "$work/gcc/lib/libstdc++.so" "$work/sys/lib"
compiler finds-so6 libstdc++.so "$work/gcc/lib/libstdc++.so.6"
expect finds-so6 "$work/gcc/lib/libstdc++.so.6" "$work/sys/lib"
compiler dangling "$work/gcc/lib/dangling.so" libstdc++.so.6
expect dangling "$work/sys/lib/libstdc++.so.6" "$work/empty" "$work/sys/lib"
compiler finds-none libstdc++.so libstdc++.so.6
expect finds-none "" "$work/empty"
