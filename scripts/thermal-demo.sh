#!/usr/bin/env bash
# The 16-bit demonstration of docs/results.md ("Thermal to visible: 16-bit data", issue 34), in the
# spirit of Lupión et al.'s thermal images: Fashion-MNIST garments rendered as 16-bit "temperature"
# frames (20 °C = 29315 centi-kelvin of background with a random gentle gradient, up to 15 K warmer
# where the garment is bright, blurred as heat spreads, sensor noise) paired with the 8-bit images
# they come from. prepare keeps them uint16 with a measured range (--range-a auto); the quickstart
# model trains on them with early stopping; evaluate scores the test split; and a 640x480 frame of
# 300 test garments, never seen in training, is translated whole (--resize none) and tiled
# (--tile 128 --overlap 64), both against the 8-bit truth. Writes OUT/thermal-demo.csv and
# OUT/thermal-demo.png (a crop: 16-bit frame shown on its range | tiled translation | truth).
# Usage: scripts/thermal-demo.sh OUT
# Environment: RANKS (2), TRAIN (4000 pairs), EPOCHS (30), PIX2PIX_BIN (build/bin/pix2pix).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
out="$1"
ranks="${RANKS:-2}" train="${TRAIN:-4000}" epochs="${EPOCHS:-30}"
bin="$(realpath "${PIX2PIX_BIN:-build/bin/pix2pix}")"
fashion="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
mkdir -p "$out"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
mpirun=(mpirun -np "$ranks" --bind-to core -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)

# The pairs (train and val from the training set, test from t10k) and the frame, as PGM files
# (16-bit: maxval 65535, big-endian, as OpenCV reads them).
/usr/bin/python3 - "$out" "$fashion" "$train" <<'PY'
import gzip, os, sys
import numpy as np
out, fashion, train = sys.argv[1], sys.argv[2], int(sys.argv[3])
def images(name):
    raw = gzip.open(f"{fashion}/{name}-images-idx3-ubyte.gz").read()
    return np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 28, 28)
def blur(x, sigma=1.2):  # separable Gaussian, reflect borders
    r = int(3 * sigma)
    k = np.exp(-np.arange(-r, r + 1) ** 2 / (2 * sigma ** 2)); k /= k.sum()
    for axis in (0, 1):
        p = np.pad(x, [(r, r) if a == axis else (0, 0) for a in (0, 1)], mode="reflect")
        x = sum(k[i] * np.take(p, range(i, i + x.shape[axis]), axis=axis) for i in range(2 * r + 1))
    return x
rng = np.random.default_rng(34)
def thermal(visible):  # 8-bit image -> 16-bit temperature field in centi-kelvin
    h, w = visible.shape
    gy, gx = np.mgrid[0:h, 0:w] / max(h, w)
    ambient = 29315 + rng.uniform(-150, 150) + rng.uniform(-200, 200) * gx + rng.uniform(-200, 200) * gy
    field = ambient + 1500 * blur(visible.astype(np.float64) / 255) + rng.normal(0, 15, visible.shape)
    return np.clip(np.round(field), 0, 65535).astype(np.uint16)
def pgm(path, image):
    big = image.dtype == np.uint16
    with open(path, "wb") as f:
        f.write(b"P5 %d %d %d\n" % (image.shape[1], image.shape[0], 65535 if big else 255))
        f.write(image.astype(">u2").tobytes() if big else image.tobytes())
pad = lambda im: np.pad(im, 2)  # 28 -> 32, the U-Net's multiple
sources = {"train": images("train")[:train], "val": images("train")[train:train + train // 10],
           "test": images("t10k")[:500]}
for split, stack in sources.items():
    for side in ("thermal", "visible"):
        os.makedirs(f"{out}/pairs/{side}/{split}", exist_ok=True)
    for i, im in enumerate(stack):
        visible = pad(im)
        pgm(f"{out}/pairs/thermal/{split}/{i:05d}.pgm", thermal(visible))
        pgm(f"{out}/pairs/visible/{split}/{i:05d}.pgm", visible)
# The frame: 20 x 15 test garments 500..799 (not in any split) on one scene.
mosaic = np.zeros((480, 640), np.uint8)
for k, im in enumerate(images("t10k")[500:800]):
    r, c = divmod(k, 20)
    mosaic[32 * r:32 * r + 32, 32 * c:32 * c + 32] = pad(im)
os.makedirs(f"{out}/frame", exist_ok=True)
pgm(f"{out}/frame/scene.pgm", thermal(mosaic))
np.save(f"{out}/truth.npy", mosaic)
PY

"$bin" prepare --paired "$out/pairs/thermal" "$out/pairs/visible" --channels-b 1 --range-a auto \
  --out "$out/thermal.h5" --overwrite --progress none | tee "$out/prepare.log"
start=$SECONDS
"${mpirun[@]}" "$bin" train --config configs/quickstart.cfg --data "$out/thermal.h5" --run-dir "$out/run" \
  --overwrite --max-epochs "$epochs" --seed 0 --progress lines >"$out/train.log" 2>&1 ||
  { tail -n 30 "$out/train.log"; exit 1; }
train_seconds=$((SECONDS - start))
"${mpirun[@]}" "$bin" evaluate --checkpoint "$out/run" --data "$out/thermal.h5" --split test \
  --out "$out/evaluation-test" --overwrite --progress none >"$out/evaluate.log" 2>&1 ||
  { tail -n 30 "$out/evaluate.log"; exit 1; }
for way in whole tiled; do
  args=(--resize none)
  [ "$way" = tiled ] && args=(--tile 128 --overlap 64)
  /usr/bin/time -v "$bin" translate --checkpoint "$out/run" --input "$out/frame" --output "$out/$way" \
    --format npy --overwrite --progress none "${args[@]}" >"$out/$way.log" 2>&1 ||
    { tail -n 30 "$out/$way.log"; exit 1; }
done

/usr/bin/python3 - "$out" "$train_seconds" <<'PY'
import json, re, struct, sys, zlib
import numpy as np
out, train_seconds = sys.argv[1], int(sys.argv[2])
truth = np.load(f"{out}/truth.npy").astype(np.float64)
whole = np.load(f"{out}/whole/scene.npy").astype(np.float64)
tiled = np.load(f"{out}/tiled/scene.npy").astype(np.float64)
assert whole.shape == tiled.shape == truth.shape == (480, 640), (whole.shape, tiled.shape)
psnr = lambda x: 10 * np.log10(255 ** 2 / np.mean((x - truth) ** 2))
inside = (slice(64, -64), slice(64, -64))
diff = np.abs(tiled - whole)
rss = {w: int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(f"{out}/{w}.log").read()).group(1))
       for w in ("whole", "tiled")}
summary = json.load(open(f"{out}/run/summary.json"))
test = json.load(open(f"{out}/evaluation-test/evaluation.json"))
prep = open(f"{out}/prepare.log").read()
lo, hi = map(float, re.search(r"A: uint16, 1 channel, on \[([-\d.e+]+), ([-\d.e+]+)\]", prep).groups())
row = {
    "range_a_lo": lo, "range_a_hi": hi, "best_epoch": summary["best_epoch"], "last_epoch": summary["last_epoch"],
    "best_val_psnr_smoothed": round(summary["best_psnr_smoothed"], 3), "train_seconds": train_seconds,
    "test_psnr": round(test["psnr"]["mean"], 3), "test_ssim": round(test["ssim"]["mean"], 4),
    "test_baseline_psnr": round(test["baseline_psnr_mean_image"], 3),
    "frame_psnr_whole": round(psnr(whole), 3), "frame_psnr_tiled": round(psnr(tiled), 3),
    "tiled_vs_whole_mean_inside": round(diff[inside].mean(), 3), "tiled_vs_whole_max_inside": diff[inside].max(),
    "tiled_vs_whole_mean": round(diff.mean(), 3), "peak_rss_mib_whole": rss["whole"] // 1024,
    "peak_rss_mib_tiled": rss["tiled"] // 1024,
}
with open(f"{out}/thermal-demo.csv", "w") as f:
    f.write(",".join(row) + "\n" + ",".join(str(v) for v in row.values()) + "\n")
print(json.dumps(row, indent=1))
# The picture: a 256x160 crop, each panel enlarged x2: the 16-bit frame shown on its range | tiled | truth.
frame = np.fromfile(f"{out}/frame/scene.pgm", dtype=">u2", offset=len(b"P5 640 480 65535\n")).reshape(480, 640)
view = np.clip((frame.astype(np.float64) - lo) / (hi - lo) * 255, 0, 255)
crop = (slice(96, 256), slice(160, 416))
panels = [view[crop], tiled[crop], truth[crop]]
gap = np.full((160, 4), 255.0)
picture = np.concatenate([panels[0], gap, panels[1], gap, panels[2]], axis=1).round().astype(np.uint8)
picture = picture.repeat(2, axis=0).repeat(2, axis=1)
def png(path, grey):  # 8-bit greyscale PNG: signature, IHDR, IDAT (filter 0 per row), IEND
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + r.tobytes() for r in grey)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", grey.shape[1], grey.shape[0], 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))
png(f"{out}/thermal-demo.png", picture)
PY
