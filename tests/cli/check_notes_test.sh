#!/usr/bin/env bash
# scripts/check-notes.sh on small repositories: a good one passes; each kind of bad Note is named
# with its file and line, and fails the check.
# Usage: check_notes_test.sh
set -uo pipefail
check="$(cd "$(dirname "$0")/../.." && pwd)/scripts/check-notes.sh"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

repo() {  # NAME: the files of $dir/NAME, tracked in a git repository when git is here
  if command -v git >/dev/null; then git -C "$dir/$1" init -q && git -C "$dir/$1" add -A; fi
}

mkdir -p "$dir/good/src" "$dir/good/docs"
cat >"$dir/good/src/a.cpp" <<'CPP'
// Note [one]: defined with its text on the same line.
int a;
  // Note [two]
  // defined above its text.
int b;  // See Note [one]
// A reference may end a sentence (See Note [two]).
CPP
cat >"$dir/good/run.sh" <<'SH'
# See Note [two]
# Note [three]: shell comments too.
SH
printf 'Prose may wrap a title: Note [one] and Note\n[three].\n' >"$dir/good/docs/x.md"
repo good
out="$(bash "$check" "$dir/good" 2>&1)" || fail "a good repository failed: $out"
case "$out" in *"3 Notes, 4 references"*) ;; *) fail "good: counted otherwise: $out" ;; esac

expect_problem() {  # NAME FILE-CONTENT EXPECTED-TEXT: the check fails and says EXPECTED-TEXT
  mkdir -p "$dir/$1"
  printf '%s\n' "$2" >"$dir/$1/f.cpp"
  repo "$1"
  local out status=0
  out="$(bash "$check" "$dir/$1" 2>&1)" || status=$?
  [ "$status" -ne 0 ] || fail "$1: passed: $out"
  case "$out" in *"$3"*) ;; *) fail "$1: no '$3' in: $out" ;; esac
}
expect_problem undefined '// See Note [nowhere]' 'f.cpp:1: See Note [nowhere]: no such Note is defined'
expect_problem twice $'// Note [x]: one\n// Note [x]: two' 'f.cpp:2: Note [x] is defined twice (also'
expect_problem bare $'// Note [x]: text\nint a;  // as in Note [x]' 'f.cpp:2: Note [x] is neither a reference'
expect_problem unclosed $'// Note [x]: text\n// See Note [x\n// ]' 'f.cpp:2: a Note title that does not close on its line'
expect_problem wrapped_see $'// Note [x]: text\n// as said (See\n// Note [x]).' 'f.cpp:3: a See Note [...] wrapped across two lines'
expect_problem wrapped_note $'// Note [x]: text\n// as said (See Note\n// [x]).' 'f.cpp:3: a See Note [...] wrapped across two lines'
expect_problem no_text $'// Note [x]\nint a;' 'f.cpp:1: Note [x] has no text after it'

# Outside git: every file is read, build/ left out.
mkdir -p "$dir/plain/build"
printf '// See Note [nowhere]\n' >"$dir/plain/a.cpp"
printf '// See Note [elsewhere]\n' >"$dir/plain/build/b.cpp"
out="$(bash "$check" "$dir/plain" 2>&1)" && fail "plain: passed: $out"
case "$out" in *"a.cpp:1: See Note [nowhere]"*) ;; *) fail "plain: a.cpp not read: $out" ;; esac
case "$out" in *elsewhere*) fail "plain: build/ was read: $out" ;; esac

[ "$failures" -eq 0 ] && echo "check-notes: every case as expected" || echo "check-notes: $failures failure(s)"
exit $((failures > 0))
