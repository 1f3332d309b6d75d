#!/usr/bin/env bash
# No writer reports success after a failed write (docs/input-checks.md, "Writes"): every command
# that writes files is pointed at a full filesystem and at a read-only one (two small tmpfs
# mounts, so it needs root and fails loudly without it). Each must end with status 1 and a message
# naming what it could not write and why, and leave no temporary or partial file behind: every
# file it left must be whole (images end with their IEND chunk, nothing is empty).
# Usage: full_disk_test.sh PIX2PIX_BIN
set -uo pipefail
bin="$(realpath "$1")"
[ "$(id -u)" -eq 0 ] || { echo "FAIL full_disk_test needs root (it mounts two small tmpfs)"; exit 1; }
dir="$(mktemp -d)"
full="$dir/full" ro="$dir/ro"
cleanup() {
  umount "$full" 2>/dev/null
  umount "$ro" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
smoke="$(cd "$(dirname "$0")/../.." && pwd)/configs/smoke.cfg"
failures=0
fashion=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# What the writers read: a dataset with labels, a short run, a classifier, a copy of the run.
"$bin" prepare --images "idx:$fashion/t10k-images-idx3-ubyte.gz" --labels \
  --derive edges --size 32 --limit 200 --out "$dir/d.h5" >/dev/null 2>&1 &&
  "$bin" train --config "$smoke" --data "$dir/d.h5" --run-dir "$dir/run" --max-epochs 1 >/dev/null 2>&1 ||
  { echo "FAIL the inputs of the writers"; exit 1; }

mkdir -p "$full" "$ro" "$dir/tmp"
mount -t tmpfs -o size=2m tmpfs "$full" && mount -t tmpfs -o size=2m tmpfs "$ro" || { echo "FAIL mount tmpfs"; exit 1; }
# The run to report on (what report reads), on both filesystems, before they fill up or turn read-only.
for fs in "$full" "$ro"; do
  mkdir -p "$fs/run" && cp "$dir/run/metrics.csv" "$dir/run/summary.json" "$fs/run/" || { echo "FAIL copy"; exit 1; }
done
# Full: a filler takes every free block (dd stops at ENOSPC).
dd if=/dev/zero of="$full/filler" bs=4k >/dev/null 2>&1
mount -o remount,ro "$ro" || { echo "FAIL remount read-only"; exit 1; }

# Every file under $1 except the filler and the copied run's own files is whole: not empty, no
# temporary names, PNGs complete.
whole_files() {
  "${PIX2PIX_TEST_PYTHON:-/usr/bin/python3}" - "$1" <<'PY'
import os, sys
root = sys.argv[1]
bad = []
for folder, _, names in os.walk(root):
    for name in names:
        path = os.path.join(folder, name)
        if name == "filler" or "/run/" in path and name != "curves.png":
            continue
        data = open(path, "rb").read()
        if ".tmp" in name or not data or (name.endswith(".png") and not data.endswith(b"IEND\xaeB`\x82")):
            bad.append(f"{path} ({len(data)} bytes)")
if bad:
    sys.exit("partial or temporary files left: " + ", ".join(bad[:5]))
PY
}

# expect_write_error NAME FS NEEDLE -- command...: status 1, NEEDLE and FS's errno text in the
# output, only whole files left on FS.
expect_write_error() {
  local name="$1" fs="$2" needle="$3"; shift 4
  local status reason why
  [ "$fs" = "$full" ] && reason="No space left on device" || reason="Read-only file system"
  timeout 120 "$bin" "$@" >"$dir/$name.log" 2>&1
  status=$?
  if [ "$status" -ne 1 ] || ! grep -q -- "$needle" "$dir/$name.log" || ! grep -q "$reason" "$dir/$name.log"; then
    echo "FAIL $name: status $status (expected 1), expected '$needle' and '$reason' in:"
    tail -n 6 "$dir/$name.log"
    failures=$((failures + 1))
  elif ! why="$(whole_files "$fs" 2>&1)"; then
    echo "FAIL $name: $why"
    failures=$((failures + 1))
  else
    echo "ok   $name: status 1: $(grep -m1 -o -- "$needle.*" "$dir/$name.log" | cut -c1-150)"
  fi
}

# Nearly full: room for a few of translate's 20 images. Those written are whole, the rest an error.
truncate -s -24K "$full/filler"
expect_write_error translate-nearly-full "$full" "$full/nearly" -- \
  translate --checkpoint "$dir/run" --data "$dir/d.h5" --split val --output "$full/nearly"
# The others were still tried: the summary counts both, and the files are those it says it wrote.
written="$(find "$full/nearly" -name '*.png' | wc -l)"
if [ "$written" -lt 1 ] || [ "$written" -ge 20 ] ||
  ! grep -q "translated $written of 20 images (0 skipped, $((20 - written)) not written)" "$dir/translate-nearly-full.log" ||
  ! grep -q "error: $((20 - written)) of 20 outputs could not be written; the first: cannot write" \
    "$dir/translate-nearly-full.log"; then
  echo "FAIL translate-nearly-full: $written of 20 images written (expected some, not all, and counted):"
  tail -n 3 "$dir/translate-nearly-full.log"
  failures=$((failures + 1))
fi
dd if=/dev/zero of="$full/filler" bs=4k oflag=append conv=notrunc >/dev/null 2>&1

have_onnx=1
"$bin" --version | grep -q "ONNX *none" && have_onnx=0
for fs in "$full" "$ro"; do
  tag="$(basename "$fs")"
  expect_write_error "translate-$tag" "$fs" "$fs/t" -- \
    translate --checkpoint "$dir/run" --data "$dir/d.h5" --split val --output "$fs/t"
  expect_write_error "evaluate-$tag" "$fs" "$fs/e" -- \
    evaluate --checkpoint "$dir/run" --data "$dir/d.h5" --split val --out "$fs/e"
  if [ "$have_onnx" = 1 ]; then  # a build with PIX2PIX_WITH_ONNX=OFF has no ONNX writer to test
    expect_write_error "export-onnx-$tag" "$fs" "cannot write $fs/g.onnx" -- \
      export --checkpoint "$dir/run" --format onnx --out "$fs/g.onnx"
  fi
  expect_write_error "export-pytorch-$tag" "$fs" "cannot write $fs/g.json" -- \
    export --checkpoint "$dir/run" --format pytorch --out "$fs/g.pth"
  expect_write_error "prepare-$tag" "$fs" "$fs/\(\.\)\?p.h5" -- \
    prepare --images "idx:$fashion/t10k-images-idx3-ubyte.gz" --derive edges --size 32 --limit 2000 --out "$fs/p.h5"
  TMPDIR="$dir/tmp" expect_write_error "bench-csv-$tag" "$fs" "cannot append to $fs/b.csv" -- \
    bench --what train --config "$smoke" --data "$dir/d.h5" --steps 1 --warmup 0 --csv "$fs/b.csv"
  expect_write_error "report-$tag" "$fs" "cannot draw $fs/run/curves.png" -- report "$fs/run"
  expect_write_error "train-classifier-$tag" "$fs" "$fs/c.pt" -- \
    train-classifier --data "$dir/d.h5" --out "$fs/c.pt" --max-epochs 1 --filters 4
  expect_write_error "train-$tag" "$fs" "$fs/r" -- train --config "$smoke" --data "$dir/d.h5" --run-dir "$fs/r"
done

# Room for export's side file (FILE.json, written first) but not its state dict: the state dict's
# error, and the side file taken away again, so that neither is left without the other.
truncate -s -16K "$full/filler"
expect_write_error export-pytorch-nearly-full "$full" "cannot write $full/g2.pth" -- \
  export --checkpoint "$dir/run" --format pytorch --out "$full/g2.pth"
if [ -e "$full/g2.json" ]; then
  echo "FAIL export-pytorch-nearly-full: the side file g2.json was left without its state dict"
  failures=$((failures + 1))
fi

# A failed bench leaves no scratch run directory behind either (its benches ran with TMPDIR there).
# (Open MPI 5 keeps its own session folder there too: only ours count.)
if compgen -G "$dir/tmp/pix2pix-bench-*" >/dev/null; then
  echo "FAIL a failed bench left its scratch run directory: $(ls "$dir/tmp")"
  failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] && echo "full and read-only filesystems: OK"
exit "$failures"
