#!/usr/bin/env bash
# scripts/gpu-node-build.sh on a small bundle of the real layout (MANIFEST.tsv, parts, one split in
# pieces): a missing, cut-short or corrupt part, or a missing manifest, is an error that names the
# part and stops before anything is unpacked; a whole bundle unpacks in the manifest's order, a
# split part is its pieces joined, and files that spell the built-in prefix spell the node's.
# (The full build from a real bundle: scripts/test-gpu-bundle.sh, docs/platforms.md.)
set -euo pipefail
script="$(cd "$(dirname "$0")/../.." && pwd)/scripts/gpu-node-build.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_error NAME STATUS MESSAGE -- ARGS...: gpu-node-build.sh ARGS exits STATUS saying MESSAGE.
expect_error() {
  local name="$1" want="$2" message="$3"
  shift 4
  local status=0
  bash "$script" "$@" >"$work/$name.log" 2>&1 || status=$?
  [ "$status" = "$want" ] || { cat "$work/$name.log"; fail "$name: exit status $status, not $want"; }
  grep -qF -- "$message" "$work/$name.log" || { cat "$work/$name.log"; fail "$name: no '$message'"; }
}

# The bundle: part 1 "tools" (a text file naming the built-in prefix), part 2 "data" split in three
# pieces, into deps/share, and (with a source folder given) part 3 "source", unpacked at the top.
prefix=/opt/pix2pix-deps
mkdir -p "$work/src/tools/bin" "$work/src/data/fashion"
printf '#!/bin/sh\nprefix="%s"\necho "$prefix/lib"\n' "$prefix" >"$work/src/tools/bin/h5pcc"
head -c 300000 /dev/urandom >"$work/src/data/fashion/images.bin"
# xz, or Python's lzma where the machine has no xz (the Debian 13 root; the node script falls back the same way)
xzc() { if command -v xz >/dev/null; then xz -0; else python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.compress(sys.stdin.buffer.read()))'; fi; }
# make_bundle DIR [SOURCE_FOLDER]
make_bundle() {
  local b="$1" piece
  mkdir -p "$b"
  tar -C "$work/src/tools" -cf - . | xzc >"$b/tools.tar.xz"
  tar -C "$work/src/data" -cf - fashion | xzc >"$work/data.tar.xz"
  split -b 100000 -d -a 2 "$work/data.tar.xz" "$b/data.tar.xz.part"
  [ -z "${2:-}" ] || tar -C "$2" -cf - pix2pix-mpi | xzc >"$b/source.tar.xz"
  {
    echo "# pix2pix-mpi GPU-node bundle, made by hand for a test"
    echo "# commit 0000000; built-in prefix $prefix; needs glibc >= 2.35"
    printf 'order\tpart\tfile\tbytes\tsha256\tinto\tholds\n'
    printf '1\ttools\ttools.tar.xz\t%s\t%s\tdeps\ta wrapper script\n' \
      "$(stat -c %s "$b/tools.tar.xz")" "$(sha256sum "$b/tools.tar.xz" | cut -d' ' -f1)"
    for piece in "$b"/data.tar.xz.part*; do
      printf '2\tdata\t%s\t%s\t%s\tdeps/share/datasets\tsome images (piece of data.tar.xz)\n' \
        "$(basename "$piece")" "$(stat -c %s "$piece")" "$(sha256sum "$piece" | cut -d' ' -f1)"
    done
    [ -z "${2:-}" ] || printf '3\tsource\tsource.tar.xz\t%s\t%s\ttop\tthe source\n' \
      "$(stat -c %s "$b/source.tar.xz")" "$(sha256sum "$b/source.tar.xz" | cut -d' ' -f1)"
  } >"$b/MANIFEST.tsv"
}
bundle="$work/bundle"
make_bundle "$bundle"
[ "$(ls "$bundle"/data.tar.xz.part* | wc -l)" -ge 2 ] || fail "the test's data part did not split"

node="$work/node"
# A whole bundle unpacks; with no source part it stops there, saying so.
expect_error whole 1 "the 'source' part is missing" -- "$bundle" --node "$node" --cuda off
cmp "$node/deps/share/datasets/fashion/images.bin" "$work/src/data/fashion/images.bin" ||
  fail "the split part is not its pieces joined"
grep -q "prefix=\"$node/deps\"" "$node/deps/bin/h5pcc" || fail "h5pcc still names $prefix: $(cat "$node/deps/bin/h5pcc")"
grep -q "FASHION_MNIST_DIR=\"$node/deps/share/datasets/fashion-mnist\"" "$node/env.sh" || fail "env.sh: $(cat "$node/env.sh")"

# A source part, then a new bundle where one file changed and one is gone: the dependencies are not
# unpacked again, the changed file is replaced, the unchanged ones keep their time (so that ninja
# recompiles only what changed), the gone one is removed.
mkdir -p "$work/v1/pix2pix-mpi/src" "$work/v2/pix2pix-mpi/src"
echo 'project(x)' >"$work/v1/pix2pix-mpi/CMakeLists.txt"
echo 'int a;' >"$work/v1/pix2pix-mpi/src/a.cpp"
echo 'int b;' >"$work/v1/pix2pix-mpi/src/b.cpp"
echo 'int old;' >"$work/v1/pix2pix-mpi/src/old.cpp"
echo 'project(x)' >"$work/v2/pix2pix-mpi/CMakeLists.txt"
echo 'int a;' >"$work/v2/pix2pix-mpi/src/a.cpp"
echo 'int b = 2;' >"$work/v2/pix2pix-mpi/src/b.cpp"
make_bundle "$work/b1" "$work/v1"
bash "$script" "$work/b1" --node "$work/n" --unpack-only >"$work/b1.log" 2>&1 || { cat "$work/b1.log"; fail "b1"; }
touch -d '2001-01-01' "$work/n/pix2pix-mpi/src/a.cpp" "$work/n/pix2pix-mpi/src/b.cpp"
make_bundle "$work/b2" "$work/v2"
bash "$script" "$work/b2" --node "$work/n" --unpack-only >"$work/b2.log" 2>&1 || { cat "$work/b2.log"; fail "b2"; }
grep -q "dependencies unpacked before" "$work/b2.log" || { cat "$work/b2.log"; fail "the same dependencies were unpacked again"; }
[ "$(date -r "$work/n/pix2pix-mpi/src/a.cpp" +%Y)" = 2001 ] || fail "an unchanged source file got a new time"
[ "$(cat "$work/n/pix2pix-mpi/src/b.cpp")" = 'int b = 2;' ] || fail "the changed source file was not replaced"
[ "$(date -r "$work/n/pix2pix-mpi/src/b.cpp" +%Y)" != 2001 ] || fail "the changed source file kept its old time"
[ ! -e "$work/n/pix2pix-mpi/src/old.cpp" ] || fail "a file gone from the source stayed"

# Bad bundles: named, and nothing unpacked.
cp -r "$bundle" "$work/missing" && rm "$work/missing/data.tar.xz.part01"
expect_error missing 1 "part 2 'data' (some images (piece of data.tar.xz)): data.tar.xz.part01 is missing" -- \
  "$work/missing" --node "$work/node-missing"
[ ! -d "$work/node-missing/deps" ] || fail "a bundle with a missing part was unpacked"
cp -r "$bundle" "$work/short" && truncate -s 1000 "$work/short/tools.tar.xz"
expect_error short 1 "part 1 'tools' (a wrapper script): tools.tar.xz has 1000 bytes, the manifest says" -- \
  "$work/short" --node "$work/node-short"
# One byte changed for certain (writing a fixed 'X' left the part whole when byte 500 was an 'X').
cp -r "$bundle" "$work/corrupt"
byte="$(od -An -tu1 -j500 -N1 "$work/corrupt/data.tar.xz.part00" | tr -d ' ')"
printf "\\$(printf '%03o' $(((byte + 1) % 256)))" |
  dd of="$work/corrupt/data.tar.xz.part00" bs=1 seek=500 conv=notrunc 2>/dev/null
expect_error corrupt 1 "part 2 'data' (some images (piece of data.tar.xz)): data.tar.xz.part00 is corrupt" -- \
  "$work/corrupt" --node "$work/node-corrupt"
mkdir -p "$work/empty"
expect_error no-manifest 1 "MANIFEST.tsv is missing" -- "$work/empty"
# A --node folder the script did not make is refused, its files untouched.
mkdir -p "$work/mine" && echo keep >"$work/mine/notes.txt"
expect_error foreign-node 1 "--node $work/mine is not empty and is not a folder this script made" -- "$bundle" --node "$work/mine"
[ "$(cat "$work/mine/notes.txt")" = keep ] && [ "$(ls -A "$work/mine")" = notes.txt ] || fail "a foreign --node folder was touched"
expect_error bad-cuda 2 "--cuda is auto, on or off" -- "$bundle" --cuda maybe
echo "gpu_node_build: all checks passed"
