#!/usr/bin/env bash
# One command from a fresh Debian/Ubuntu machine to Hark running: installs what is missing,
# builds, installs the default voice on the first run, then
#   ./scripts/run.sh                   starts the desktop app (docs/APP.md), or
#   ./scripts/run.sh "Text to speak"   speaks the text with the command-line engine, or
#   ./scripts/run.sh --screen-reader   makes Hark the desktop's voice: speech-dispatcher's
#                                      default module, so Orca and every other client speak
#                                      with it (docs/SPEECHD.md; undo: hark speechd uninstall).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
HARK=target/release/hark
ONNX=$(scripts/fetch-voice.sh)
if [ "${1:-}" = "--screen-reader" ]; then
  cargo build --release --locked -p hark -p hark-speechd
elif [ $# -gt 0 ]; then
  cargo build --release --locked -p hark
else
  cargo build --release --locked -p hark -p hark-app
fi
# espeak-ng's data: Piper's own (the voices were trained on its phonemes), installed where every
# hark binary, the app and sd_hark find it (HARK_ESPEAK_DATA overrides).
DATA=${XDG_DATA_HOME:-$HOME/.local/share}/hark/espeak-ng-data
rm -rf "$DATA.new" && mkdir -p "$(dirname "$DATA")"
cp -r "$(scripts/espeak-data.sh)" "$DATA.new" && rm -rf "$DATA" && mv "$DATA.new" "$DATA"
if ! $HARK voice list | grep -q '^en_US-joe-medium'; then
  $HARK voice import "$ONNX"
fi
if [ "${1:-}" = "--screen-reader" ]; then
  exec $HARK speechd install --default --restart
fi
if [ $# -gt 0 ]; then
  exec $HARK speak "$1"
fi
if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  echo "error: no display to open the app on (DISPLAY is not set); try ./scripts/run.sh \"Some text\"" >&2
  exit 1
fi
# The onboarding panel can reinstall the default voice from these files if it is removed.
export HARK_DEFAULT_VOICE_ONNX="$ONNX"
exec target/release/hark-app
