#!/usr/bin/env bash
# Prints the folder of espeak-ng's data that Hark phonemises with: the data of Piper's own
# phonemiser (the PyPI package piper-phonemize, installed in build/venv by install-deps.sh),
# which every Piper voice was trained on. Hark's espeak-ng 1.52.0.1 library reads it and then
# gives Piper's phonemes exactly, English, Russian and Mandarin included (its own data differs:
# docs/TEXT.md). Copied to build/espeak-ng-data, a short path (espeak-ng keeps 160 bytes).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(build/venv/bin/python -c 'import os, piper_phonemize; print(os.path.join(os.path.dirname(piper_phonemize.__file__), "espeak-ng-data"))')
DST=build/espeak-ng-data
if [ ! -f "$DST/phontab" ] || ! cmp -s "$SRC/phontab" "$DST/phontab" || [ "$SRC" -nt "$DST" ]; then
  rm -rf "$DST.new" && cp -r "$SRC" "$DST.new" && rm -rf "$DST" && mv "$DST.new" "$DST"
fi
echo "$PWD/$DST"
