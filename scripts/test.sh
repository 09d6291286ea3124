#!/usr/bin/env bash
# Runs the whole test suite. Reference data (onnxruntime's intermediates, piper-phonemize's ids)
# is generated here from the real voice, never pasted into the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
ONNX=$(scripts/fetch-voice.sh)
export HARK_TEST_ONNX="$ONNX"
export HARK_TEST_DATA="$PWD/tests/data/generated"
# espeak-ng reads Piper's data, as an installed Hark does (scripts/run.sh).
HARK_ESPEAK_DATA=$(scripts/espeak-data.sh)
export HARK_ESPEAK_DATA
PY=build/venv/bin/python
mkdir -p "$HARK_TEST_DATA"
echo "== reference data"
$PY scripts/reference_phonemes.py "$HARK_TEST_DATA" --config "$ONNX.json"
$PY scripts/reference_languages.py "$HARK_TEST_DATA"
$PY scripts/oracle.py --onnx "$ONNX" --out "$HARK_TEST_DATA/oracle"
$PY scripts/export_reference_weights.py "$HARK_TEST_DATA" --onnx "$ONNX"
# A multi-speaker voice made from the real one (Piper's multi-speaker layout, random speaker
# weights), and onnxruntime's reference for two of its speakers.
MULTI=$($PY scripts/make_multispeaker_voice.py --onnx "$ONNX" --out "$HARK_TEST_DATA/multispeaker")
$PY scripts/oracle.py --onnx "$MULTI" --out "$HARK_TEST_DATA/multispeaker/oracle" --sid 0 --sid 2 --limit 2
echo "== format and lints"
cargo fmt --all --check
# --workspace: the engine crate and the desktop app (src-tauri).
cargo clippy --locked --workspace --all-targets -- -D warnings
echo "== tests"
cargo test --locked --workspace --all-targets
echo "== app end-to-end"
scripts/e2e.sh
