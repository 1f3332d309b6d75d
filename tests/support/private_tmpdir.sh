#!/usr/bin/env bash
# Runs a test command with a TMPDIR of its own, removed afterwards.
# See Note [a private TMPDIR per test] (tests/support/test_main.cpp).
# Usage: private_tmpdir.sh COMMAND [ARGS...]
set -u
dir="$(mktemp -d "${TMPDIR:-/tmp}/p2p-test.XXXXXX")" || { echo "private_tmpdir.sh: mktemp failed" >&2; exit 1; }
# Like /tmp: tests run some commands as another user (setpriv), and Open MPI makes its session
# directory here for them too.
chmod 1777 "$dir"
export TMPDIR="$dir"
"$@"
status=$?
rm -rf "$dir"
exit "$status"
