#!/usr/bin/env bash
# Prints the espeak-ng data folder that the build of PROFILE (debug or release; default
# release) compiled: espeak-rs-sys builds espeak-ng 1.52 and its data (phoneme tables, every
# language's dictionary) into its OUT_DIR. The newest when there are several.
# usage: scripts/espeak-data-dir.sh [PROFILE]
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${1:-release}
TARGET=${CARGO_TARGET_DIR:-target}
D=$(ls -td "$TARGET/$PROFILE"/build/espeak-rs-sys-*/out/share/espeak-ng-data 2>/dev/null | head -1 || true)
if [ -z "$D" ] || [ ! -f "$D/phontab" ]; then
  echo "error: no espeak-ng data in $TARGET/$PROFILE/build (build hark first)" >&2
  exit 1
fi
echo "$PWD/$D"
