#!/usr/bin/env bash
# The run loop knows no model (See Note [the model registry]): no file of src/train/ or
# include/pix2pix/train/ names a registered model or its content score. The names are read from
# the shipped rows and scores in src/gan/ ('.name = "..."'); the program's own name, pix2pix,
# is also a model's, so for it only the quoted name and the model's class and files count.
# Usage: check-model-free-loop.sh [ROOT]   (ROOT: the repository, default this script's)
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
names=$(grep -ohE '\.name = "[A-Za-z0-9_]+"' "$root"/src/gan/*.cpp | sed 's/.*"\(.*\)"/\1/' | sort -u)
[[ -n "$names" ]] || { echo "check-model-free-loop: no model or score names in $root/src/gan" >&2; exit 2; }
found=0
for name in $names; do
  if [[ "$name" == pix2pix ]]; then
    pattern='"pix2pix"|Pix2PixModel|pix2pix_model'
  else
    pattern="(?i)\\b${name}\\b"
  fi
  if grep -rnP "$pattern" "$root/src/train" "$root/include/pix2pix/train"; then found=1; fi
done
if ((found)); then
  echo "check-model-free-loop: the lines above name a model or a score kind in the run loop;" \
    "the model's registry row and its own files own what they say (docs/architecture.md, \"Adding a model\")" >&2
  exit 1
fi
echo "check-model-free-loop: src/train names none of: $(echo $names)"
