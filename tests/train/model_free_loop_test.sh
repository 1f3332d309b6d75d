#!/usr/bin/env bash
# scripts/check-model-free-loop.sh: the tree passes; a run-loop file that names a model or a score
# kind fails it, and one that only says the program's name (namespace pix2pix) does not.
# Usage: model_free_loop_test.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
check="$root/scripts/check-model-free-loop.sh"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

bash "$check" "$root" >"$dir/tree.log" 2>&1 || fail "the tree: $(cat "$dir/tree.log")"
grep -q "names none of: .*cyclegan.*deviation" "$dir/tree.log" || fail "the names read from src/gan: $(cat "$dir/tree.log")"

copy() {  # NAME: a copy of the tree's src/gan and run loop under $dir/NAME
  mkdir -p "$dir/$1/src" "$dir/$1/include/pix2pix"
  cp -r "$root/src/gan" "$root/src/train" "$dir/$1/src/"
  cp -r "$root/include/pix2pix/train" "$dir/$1/include/pix2pix/"
}
copy namespace
printf 'namespace pix2pix::train {}  // `pix2pix train`\n' >"$dir/namespace/src/train/extra.cpp"
bash "$check" "$dir/namespace" >/dev/null 2>&1 || fail "the program's name alone was refused"
for line in 'if (model == "onesided") {}' '// CycleGAN only' 'score == "deviation"' 'auto* p = dynamic_cast<gan::Pix2PixModel*>(m);'; do
  copy named
  printf '%s\n' "$line" >"$dir/named/src/train/extra.cpp"
  if bash "$check" "$dir/named" >"$dir/named.log" 2>&1; then
    fail "taken: $line"
  elif ! grep -q "extra.cpp:1:" "$dir/named.log"; then
    fail "the refusal does not name the line: $(cat "$dir/named.log")"
  fi
  rm -rf "$dir/named"
done
((failures == 0)) && echo "model_free_loop_test: passed"
exit $((failures > 0))
