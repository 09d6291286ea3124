#!/usr/bin/env bash
# Intelligibility across speeds: speaks each line of a sentence file at each speed with
# `hark speak --rate`, then scores the WAVs with the shared Whisper WER check
# (../shared/tools/asr/wer_check.py, faster-whisper base).
# usage: scripts/asr/intelligibility.sh PYTHON WER_CHECK.py [SENTENCES] [RATES…]
#   PYTHON: the Python of the ASR venv; WER_CHECK.py: the shared tool.
#   HARK_ASR_FLAG=--pitch: the values are pitch shifts in semitones instead.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=$1 check=$2 sentences=${3:-tests/data/asr_sentences.txt}
shift $(( $# < 3 ? $# : 3 ))
rates=${*:-1 2 3 4}
hark=${HARK_BIN:-target/release/hark}
flag=${HARK_ASR_FLAG:---rate}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for r in $rates; do
  mkdir -p "$work/$r"
  i=0
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    "$hark" speak "$flag=$r" --out "$work/$r/$(printf %03d "$i").wav" "$line"
    i=$((i + 1))
  done < "$sentences"
  wer=$("$py" "$check" "$sentences" "$work/$r" | tail -1)
  echo "${flag#--} $r: $wer"
done
