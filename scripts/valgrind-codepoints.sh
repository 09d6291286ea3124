#!/usr/bin/env bash
# espeak-ng (the vendored 1.52) over every Unicode scalar value, under valgrind's memcheck:
# each code point alone, doubled, before a bracket and before a quote, in texts of 256 code
# points through hark_text::phonemize (crates/text/examples/espeak_codepoints.rs). Any
# memory error fails the run (--error-exitcode=1). docs/RELIABILITY.md has the last result.
# usage: scripts/valgrind-codepoints.sh [VOICE...]   (default: en-us hi)
# JOBS (default: the number of cores) ranges run side by side; FROM/TO (hex) narrow the range.
# It takes long: about 25 min a voice on 2 shared cores (docs/RELIABILITY.md).
set -euo pipefail
cd "$(dirname "$0")/.."
VOICES=("$@")
[ ${#VOICES[@]} -gt 0 ] || VOICES=(en-us hi)
JOBS=${JOBS:-$(nproc)}
FROM=$((16#${FROM:-0})); TO=$((16#${TO:-10FFFF}))
# NO_BUILD=1: use the example as built (while another cargo command holds the build lock).
[ "${NO_BUILD:-0}" = 1 ] || cargo build -q -p hark-text --example espeak_codepoints
BIN=target/debug/examples/espeak_codepoints
# The data Hark reads: Piper's (HARK_ESPEAK_DATA overrides; empty: the build's own).
export HARK_ESPEAK_DATA=${HARK_ESPEAK_DATA-$(scripts/espeak-data.sh)}
LOG=$(mktemp -d)
start=$(date +%s)
pids=()
for v in "${VOICES[@]}"; do
  step=$(( (TO - FROM + JOBS) / JOBS ))
  for ((j = 0; j < JOBS; j++)); do
    lo=$((FROM + j * step)); hi=$((lo + step - 1)); [ $hi -le $TO ] || hi=$TO
    [ $lo -le $TO ] || continue
    valgrind -q --error-exitcode=1 --log-file="$LOG/$v.$j.vg" \
      "$BIN" "$v" "$(printf %X $lo)" "$(printf %X $hi)" > "$LOG/$v.$j.out" 2> "$LOG/$v.$j.err" &
    pids+=($!)
  done
  # One voice at a time: JOBS processes side by side.
  fail=0
  for p in "${pids[@]}"; do wait "$p" || fail=1; done
  pids=()
  cat "$LOG/$v".*.out
  if [ $fail != 0 ]; then
    echo "FAILED on $v: valgrind's reports:" >&2
    cat "$LOG/$v".*.vg "$LOG/$v".*.err >&2
    exit 1
  fi
done
echo "valgrind: no errors; ${VOICES[*]} over U+$(printf %04X $FROM)..U+$(printf %04X $TO) in $(( $(date +%s) - start )) s"
rm -rf "$LOG"
