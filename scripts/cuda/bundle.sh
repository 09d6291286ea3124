#!/usr/bin/env bash
# Packs what a run on the device machine needs into DEST/bundle.tar.xz: stripped binaries
# (hark, sd_hark, and the `parity` test binary as bin/gpu_parity), the libraries the image
# lacks, English espeak-ng data (the build's, espeak-ng 1.52), the voice and reference audio.
# VOICE is a Hark voice folder, or a Piper ONNX already passed through round_onnx.py and xz (NAME.onnx.xz,
# NAME.onnx.json beside it): run.sh then imports it on the device and gives it to onnxruntime
# for the benchmark's anchor.
# On the device: STEPS="parity speak bench sanitize" B=$PWD/.device/NAME bash .device/NAME/run.sh
# (run.sh's steps: parity speak bench ab abbench archs coldstart anchor onset sanitize speechd persist perf
# pspeak pbench psanitize soak export; scripts/cuda/soak.sh runs the soak alone)
# usage: bundle.sh DEST VOICE [REF_DIR]
# PARITY=0 leaves out the GPU parity tests (for runs that only need `hark`).
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=$1; VOICE=$2; REF=${3:-}
STAGE=$(mktemp -d)
mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/voices" "$STAGE/espeak-ng-data"
# Build both: the binaries embed the kernel sources, and the kernel cache is keyed by them.
cargo build --release -p hark -p hark-speechd
strip -o "$STAGE/bin/hark" target/release/hark
strip -o "$STAGE/bin/sd_hark" target/release/sd_hark
if [ "${PARITY:-1}" != 0 ]; then
  # The test build turns on hark-model's `test-hooks` (a dev-dependency feature) and relinks
  # target/release/hark with them: `hark` is taken above, before it.
  T=$(cargo test --release --no-run -p hark --test parity 2>&1 | grep -o "target/release/deps/parity-[a-f0-9]*" | head -1)
  strip -o "$STAGE/bin/gpu_parity" "$T"
fi
# Every non-glibc library the binary needs; run.sh drops those the device already has.
ldd target/release/hark | awk '/=> \//{print $3}' | grep -vE '/(libc|libm|libgcc_s|ld-linux)[.-]' |
  while read -r f; do cp -L "$f" "$STAGE/lib/"; done
# espeak-ng 1.52 is linked in statically; its data is Piper's (run.sh sets HARK_ESPEAK_DATA).
D=$(scripts/espeak-data.sh)
cp -r "$D"/{phontab,phonindex,phondata,intonations,en_dict} "$STAGE/espeak-ng-data/"
cp -r "$D"/voices "$D"/lang "$STAGE/espeak-ng-data/"
case "$VOICE" in
  *.onnx.xz) mkdir -p "$STAGE/onnx"; cp "$VOICE" "${VOICE%.xz}.json" "$STAGE/onnx/" ;;
  *) cp -r "$VOICE" "$STAGE/voices/" ;;
esac
[ -n "$REF" ] && cp -r "$REF" "$STAGE/ref"
cp scripts/cuda/run.sh scripts/cuda/wavf.py scripts/export-throughput.sh "$STAGE/"
mkdir -p "$DEST"
# The ONNX is compressed already: store the bundle's other files compressed, it as it is.
XZ_OPT=-3 tar -C "$STAGE" --exclude=onnx -cJf "$DEST/bundle.tar.xz" .
[ -d "$STAGE/onnx" ] && cp "$STAGE"/onnx/* "$DEST/"
cp scripts/cuda/run.sh scripts/cuda/soak.sh "$DEST/"
rm -rf "$STAGE"
ls -la "$DEST"
