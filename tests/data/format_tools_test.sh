#!/usr/bin/env bash
# The dataset format as other tools see it: a file made by `pix2pix prepare` is read by h5py
# (tests/data/read_with_h5py.py) and described by h5dump as docs/data-format.md says.
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz \
  --derive edges --size 16 --labels --limit 40 --compression 4 --out "$dir/f.h5" >/dev/null
/usr/bin/python3 "$here/read_with_h5py.py" "$dir/f.h5"
header="$(h5dump -H "$dir/f.h5")"
for needle in 'GROUP "train"' 'GROUP "val"' 'DATASET "A"' 'DATASET "B"' 'DATASET "labels"' 'DATASET "names"' \
              'ATTRIBUTE "format"' 'ATTRIBUTE "version"' 'H5T_STD_U8LE' '( 36, 16, 16, 1 )'; do
  grep -qF "$needle" <<<"$header" || { echo "h5dump -H lacks: $needle"; exit 1; }
done
h5dump -a /format "$dir/f.h5" | grep -q '"pix2pix-h5"' || { echo "h5dump cannot read the format attribute"; exit 1; }
# An unpaired file (version 3): two folders of PGM images, 6 and 4 of them.
/usr/bin/python3 - "$dir" <<'PY'
import os, sys
for domain, count in (("a", 6), ("b", 4)):
    os.makedirs(f"{sys.argv[1]}/{domain}")
    for i in range(count):
        with open(f"{sys.argv[1]}/{domain}/img{i}.pgm", "wb") as out:
            out.write(b"P5 8 8 255\n" + bytes((3 * x + 7 * i + (40 if domain == "b" else 0)) % 256 for x in range(64)))
PY
"$bin" prepare --unpaired "$dir/a" "$dir/b" --channels 1 --val-fraction 0.25 --out "$dir/u.h5" >/dev/null
/usr/bin/python3 "$here/read_with_h5py.py" "$dir/u.h5"
h5dump -a /train/pairing "$dir/u.h5" | grep -q '"unpaired"' || { echo "h5dump cannot read a split's pairing"; exit 1; }
echo "h5dump and h5py read the files as documented"
