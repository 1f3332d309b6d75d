# Sourced by the shell tests that run a command and check how it ended:
#   expect STATUS TEXT LOG command...
# runs the command (at most 300 s) with its output in LOG, and ends the test (exit 1, LOG shown)
# unless it exited with STATUS and LOG holds TEXT.
expect() {
  local status="$1" text="$2" log="$3" rc=0
  shift 3
  timeout 300 "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" != "$status" ] || ! grep -qF -- "$text" "$log"; then
    cat "$log"
    echo "FAILED: expected status $status and '$text', got status $rc: $*"
    exit 1
  fi
}
