#!/usr/bin/env bash
# The dataset format as other tools see it: a file made by `pix2pix prepare` is read by h5py
# (tests/data/read_with_h5py.py) and described by h5dump as docs/data-format.md says.
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
python="${PIX2PIX_TEST_PYTHON:-/usr/bin/python3}"  # with numpy (and h5py): a GPU node's venv
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz \
  --derive edges --size 16 --labels --limit 40 --compression 4 --out "$dir/f.h5" >/dev/null
"$python" "$here/read_with_h5py.py" "$dir/f.h5"
header="$(h5dump -H "$dir/f.h5")"
for needle in 'GROUP "train"' 'GROUP "val"' 'DATASET "A"' 'DATASET "B"' 'DATASET "labels"' 'DATASET "names"' \
              'ATTRIBUTE "format"' 'ATTRIBUTE "version"' 'H5T_STD_U8LE' '( 36, 16, 16, 1 )'; do
  grep -qF "$needle" <<<"$header" || { echo "h5dump -H lacks: $needle"; exit 1; }
done
h5dump -a /format "$dir/f.h5" | grep -q '"pix2pix-h5"' || { echo "h5dump cannot read the format attribute"; exit 1; }
# An unpaired file (version 3): two folders of PGM images, 6 and 4 of them.
"$python" - "$dir" <<'PY'
import os, sys
for domain, count in (("a", 6), ("b", 4)):
    os.makedirs(f"{sys.argv[1]}/{domain}")
    for i in range(count):
        with open(f"{sys.argv[1]}/{domain}/img{i}.pgm", "wb") as out:
            out.write(b"P5 8 8 255\n" + bytes((3 * x + 7 * i + (40 if domain == "b" else 0)) % 256 for x in range(64)))
PY
"$bin" prepare --unpaired "$dir/a" "$dir/b" --channels 1 --val-fraction 0.25 --out "$dir/u.h5" >/dev/null
"$python" "$here/read_with_h5py.py" "$dir/u.h5"
h5dump -a /train/pairing "$dir/u.h5" | grep -q '"unpaired"' || { echo "h5dump cannot read a split's pairing"; exit 1; }
# Values beyond 8 bits (version 4): 16-bit PGM frames paired with 8-bit ones, and 5-band float
# .npy stacks; h5py gets the very values back, in their own types, with the ranges.
"$python" - "$dir" <<'PY'
import os, sys
import numpy as np
root = sys.argv[1]
rng = np.random.default_rng(7)
for split, count in (("train", 6), ("val", 2)):
    for side in ("t", "v", "s", "w"):
        os.makedirs(f"{root}/{side}/{split}")
    for i in range(count):
        frame = rng.integers(0, 65536, size=(8, 8), dtype=np.uint16)
        with open(f"{root}/t/{split}/f{i}.pgm", "wb") as out:
            out.write(b"P5 8 8 65535\n" + frame.astype(">u2").tobytes())
        np.save(f"{root}/t/{split}/f{i}.expected.npy", frame)
        with open(f"{root}/v/{split}/f{i}.pgm", "wb") as out:
            out.write(b"P5 8 8 255\n" + rng.integers(0, 256, size=64, dtype=np.uint8).tobytes())
        np.save(f"{root}/s/{split}/s{i}.npy", rng.normal(size=(8, 8, 5)).astype(np.float32))
        with open(f"{root}/w/{split}/s{i}.pgm", "wb") as out:
            out.write(b"P5 8 8 255\n" + rng.integers(0, 256, size=64, dtype=np.uint8).tobytes())
PY
# The expected values lie beside the frames as .npy files, which prepare would take for images: move them.
mkdir -p "$dir/expected" && for f in "$dir"/t/*/*.expected.npy; do mv "$f" "$dir/expected/$(basename "$(dirname "$f")")-$(basename "$f")"; done
"$bin" prepare --paired "$dir/t" "$dir/v" --channels-b 1 --out "$dir/deep.h5" >/dev/null
"$bin" prepare --paired "$dir/s" "$dir/w" --channels-b 1 --range-a=-4,4 --out "$dir/bands.h5" >/dev/null
"$python" "$here/read_with_h5py.py" "$dir/deep.h5"
"$python" "$here/read_with_h5py.py" "$dir/bands.h5"
"$python" - "$dir" <<'PY'
import sys
import h5py
import numpy as np
root = sys.argv[1]
with h5py.File(f"{root}/deep.h5", "r") as f:
    a = f["val/A"]
    assert a.dtype == np.uint16 and a.shape == (2, 8, 8, 1), (a.dtype, a.shape)
    names = list(f["val/names"].asstr()[:])
    for i, name in enumerate(names):
        expected = np.load(f"{root}/expected/val-{name.split('.')[0]}.expected.npy")
        assert (a[i][:, :, 0] == expected).all(), name
    assert list(f.attrs["range_A"]) == [0, 65535] and list(f.attrs["range_B"]) == [0, 255]
with h5py.File(f"{root}/bands.h5", "r") as f:
    assert f["train/A"].dtype == np.float32 and f["train/A"].shape[3] == 5
    assert list(f.attrs["range_A"]) == [-4, 4]
print("h5py reads the uint16 values and the 5-band float stacks as prepare was given them")
PY
echo "h5dump and h5py read the files as documented"
