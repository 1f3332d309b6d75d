# shellcheck shell=bash
# Sourced by the shell tests that compare a stopped and resumed run with an uninterrupted one:
#   same_figures A/metrics.csv B/metrics.csv ROWS
# succeeds when both files have ROWS epoch rows and every loss_* and val_* field of A equals B's,
# row for row, to the last digit written; otherwise it says how they differ (on stdout) and fails.
same_figures() {
  "${PIX2PIX_TEST_PYTHON:-/usr/bin/python3}" - "$1" "$2" "$3" <<'PY'
import csv, sys


def fail(why):
    print(why)
    sys.exit(1)


try:
    rows = [list(csv.DictReader(open(path))) for path in sys.argv[1:3]]
except OSError as error:
    fail(error)
want = int(sys.argv[3])
if not (len(rows[0]) == len(rows[1]) == want):
    fail(f"rows: {len(rows[0])} and {len(rows[1])}, expected {want}")
keys = [k for k in rows[0][0] if k.startswith(("loss_", "val_"))]
diff = [(i, k, a[k], b[k]) for i, (a, b) in enumerate(zip(*rows)) for k in keys if a[k] != b[k]]
if diff:
    fail(f"differ (epoch, column, straight, resumed): {diff[:4]}")
PY
}
