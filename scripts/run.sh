#!/usr/bin/env bash
# One command from a fresh Debian/Ubuntu machine to Hark speaking: installs what is missing,
# builds, installs the default voice, then speaks (the text given, or a greeting).
#   ./scripts/run.sh ["Text to speak"]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release --locked
HARK=target/release/hark
if ! $HARK voice list | grep -q '^en_US-joe-medium'; then
  ONNX=$(scripts/fetch-voice.sh)
  $HARK voice import "$ONNX"
fi
$HARK speak "${1:-Hello from Hark.}"
