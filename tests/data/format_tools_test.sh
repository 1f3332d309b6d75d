#!/usr/bin/env bash
# The dataset format as other tools see it: a file made by `pix2pix prepare` is read by h5py
# (tests/data/read_with_h5py.py) and described by h5dump as docs/data-format.md says.
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

"$bin" prepare --images idx:/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz \
  --derive edges --size 16 --labels --limit 40 --compression 4 --out "$dir/f.h5" >/dev/null
/usr/bin/python3 "$here/read_with_h5py.py" "$dir/f.h5"
header="$(h5dump -H "$dir/f.h5")"
for needle in 'GROUP "train"' 'GROUP "val"' 'DATASET "A"' 'DATASET "B"' 'DATASET "labels"' 'DATASET "names"' \
              'ATTRIBUTE "format"' 'ATTRIBUTE "version"' 'H5T_STD_U8LE' '( 36, 16, 16, 1 )'; do
  grep -qF "$needle" <<<"$header" || { echo "h5dump -H lacks: $needle"; exit 1; }
done
h5dump -a /format "$dir/f.h5" | grep -q '"pix2pix-h5"' || { echo "h5dump cannot read the format attribute"; exit 1; }
echo "h5dump and h5py read the file as documented"
