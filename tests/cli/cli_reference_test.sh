#!/usr/bin/env bash
# scripts/cli-reference.sh: writes every command's --help, and its --check fails (exit 1, saying
# what to run) on a file that is not what it would write. Whether docs/cli.md itself is current is
# scripts/test.sh's check, against the Debian 12 build.
set -uo pipefail
bin="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL $*"; exit 1; }

bash "$root/scripts/cli-reference.sh" "$bin" "$dir/cli.md" >/dev/null || fail "writing the reference"
for command in prepare inspect train train-classifier translate evaluate export report bench "bench --what train"; do
  grep -qF "## \`pix2pix $command --help\`" "$dir/cli.md" || fail "no section for $command"
done
grep -qF -- "--cudnn-benchmark arg (=auto)" "$dir/cli.md" || fail "train's options are not in it"
bash "$root/scripts/cli-reference.sh" --check "$bin" "$dir/cli.md" >"$dir/same.log" 2>&1 || { cat "$dir/same.log"; fail "a fresh file is stale"; }
sed -i 's/--cudnn-benchmark arg (=auto)/--cudnn-benchmark arg (=on)/' "$dir/cli.md"
status=0
bash "$root/scripts/cli-reference.sh" --check "$bin" "$dir/cli.md" >"$dir/stale.log" 2>&1 || status=$?
[ "$status" = 1 ] || { cat "$dir/stale.log"; fail "--check of an edited file exited $status, not 1"; }
grep -qF "is not the program's --help any more; run: bash scripts/cli-reference.sh $bin" "$dir/stale.log" ||
  { cat "$dir/stale.log"; fail "the stale message does not say what to run"; }
grep -qF -- "+  --cudnn-benchmark arg (=auto)" "$dir/stale.log" || { cat "$dir/stale.log"; fail "the difference is not shown"; }
echo "cli-reference writes every command's --help and --check catches a stale file"
