#!/usr/bin/env bash
# Packs what a run on the device machine needs into DEST/bundle.tar.xz: stripped binaries
# (hark, the GPU parity tests), espeak-ng and its libraries (the image lacks them), English
# espeak-ng data, a voice folder and reference audio. usage: bundle.sh DEST VOICE_DIR [REF_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=$1; VOICE=$2; REF=${3:-}
STAGE=$(mktemp -d)
mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/voices" "$STAGE/espeak-ng-data"
# Build both: the binaries embed the kernel sources, and the kernel cache is keyed by them.
cargo build --release
strip -o "$STAGE/bin/hark" target/release/hark
T=$(cargo test --release --no-run --test gpu_parity 2>&1 | grep -o "target/release/deps/gpu_parity-[a-f0-9]*" | head -1)
strip -o "$STAGE/bin/gpu_parity" "$T"
# Every non-glibc library the binary needs; run.sh drops those the device already has.
ldd target/release/hark | awk '/=> \//{print $3}' | grep -vE '/(libc|libm|libgcc_s|ld-linux)[.-]' |
  while read -r f; do cp -L "$f" "$STAGE/lib/"; done
D=/usr/lib/x86_64-linux-gnu/espeak-ng-data
cp -r "$D"/{phontab,phonindex,phondata,intonations,en_dict} "$STAGE/espeak-ng-data/"
cp -r "$D"/voices "$D"/lang "$STAGE/espeak-ng-data/" 2>/dev/null || true
cp -r "$VOICE" "$STAGE/voices/"
[ -n "$REF" ] && cp -r "$REF" "$STAGE/ref"
cp scripts/cuda/run.sh "$STAGE/"
mkdir -p "$DEST"
XZ_OPT=-3 tar -C "$STAGE" -cJf "$DEST/bundle.tar.xz" .
rm -rf "$STAGE"
ls -la "$DEST"
