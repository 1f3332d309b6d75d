#!/usr/bin/env bash
# one_cxx_runtime_test.sh BUILD_DIR: See Note [one C++ runtime] (src/CMakeLists.txt). bin/pix2pix is
# linked again, as the build links it, by a compiler that finds a folder holding only libstdc++.a
# before its own (as the GPU nodes' /opt/gcc does): the program must still run one C++ runtime,
# the shared one. The same link with -lstdc++ in place of the shared file, the option before
# 2026-11-30, must say the runtime is split (a static copy in the program), or this test could not
# tell the two apart.
set -euo pipefail
build="$(cd "$1" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The link line and the folder it runs in: Makefiles keep it in link.txt, Ninja prints it.
if [ -f "$build/src/CMakeFiles/pix2pix.dir/link.txt" ]; then
  dir="$build/src"
  line="$(tr '\n' ' ' <"$build/src/CMakeFiles/pix2pix.dir/link.txt")"
elif [ -f "$build/build.ninja" ]; then
  dir="$build"
  line="$(ninja -C "$build" -t commands bin/pix2pix | tail -n 1)"
  line="${line#: && }"
  line="${line% && :}"
else
  fail "$build: neither link.txt (Makefiles) nor build.ninja"
fi
compiler="${line%% *}"
named="$(grep -oE -- '--push-state,--no-as-needed,[^,]*,--pop-state' <<<"$line" | head -n 1 || true)"
[ -n "$named" ] || fail "the link line names no C++ runtime before the libraries: $line"
runtime="$(cut -d, -f3 <<<"$named")"
case "$runtime" in
  /*) ;;
  *) fail "the link names the C++ runtime as '$runtime', not by its shared file" ;;
esac
static="$("$compiler" -print-file-name=libstdc++.a)"
[ -f "$static" ] || fail "$compiler finds no libstdc++.a ('$static'): the case of a static runtime found first cannot be built here"
mkdir "$work/static-first"
cp "$static" "$work/static-first/"

# relink NAME RUNTIME: bin/pix2pix's link with -B static-first/ and RUNTIME as the named runtime,
# into $work/NAME; prints the program's "C++" line.
relink() {
  local out="$work/$1" l
  # no dependency file (CMake 3.27 and later name one; it would be written beside the build's)
  l="$(printf '%s' "$line" | sed -e 's| -Wl,--dependency-file=[^ ]*||')"
  l="${l/ -o ..\/bin\/pix2pix / -o $out }"
  l="${l/ -o bin\/pix2pix / -o $out }"
  l="${l/$named/--push-state,--no-as-needed,$2,--pop-state}"
  l="$compiler -B$work/static-first/ ${l#"$compiler" }"
  [[ "$l" == *" -o $out "* ]] || fail "the link line names no '-o bin/pix2pix': $line"
  (cd "$dir" && eval "$l") >"$work/$1.log" 2>&1 || { cat "$work/$1.log"; fail "$1: the link failed"; }
  "$out" --version 2>/dev/null | sed -n 's/^  C++       //p'
}

with_file="$(relink shared-file "$runtime")"
case "$with_file" in
  *", one runtime") echo "one_cxx_runtime: linked with $runtime named, a static libstdc++ found first: $with_file" ;;
  *) fail "linked with $runtime named, a static libstdc++ found first: '$with_file', not one runtime" ;;
esac
with_flag="$(relink dash-l -lstdc++)"
case "$with_flag" in
  "split: "*) echo "one_cxx_runtime: linked with -lstdc++ instead: $with_flag" ;;
  *) fail "linked with -lstdc++, a static libstdc++ found first: '$with_flag', not split: this test cannot tell" ;;
esac
