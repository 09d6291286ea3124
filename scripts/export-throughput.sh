#!/usr/bin/env bash
# Export throughput (issue 14 item 4): `hark speak --out` of a 2,160-word markdown book (three
# chapters of one sentence repeated; the same text here and on the device) to FLAC and Opus
# (FORMATS="flac opus wav" adds others), each timed once, × real time = seconds of audio / seconds of wall clock. Prints the
# machine's load beside it: figures from a loaded machine are not speed claims.
# usage: scripts/export-throughput.sh [HARK_BINARY] [cpu|cuda]   (HARK_VOICES_DIR as usual)
set -euo pipefail
HARK=${1:-target/release/hark}
BACKEND=${2:-cpu}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
S="The quick brown fox jumps over the lazy dog, while the old farmer watches from his porch and wonders whether the rain will ever come back to the valley before the end of this long, dry summer."
for c in 1 2 3; do
  echo "# Chapter $c"
  for _ in $(seq 20); do echo "$S"; done
  echo
done > "$W/book.md"
echo "text: $(wc -w < "$W/book.md") words; backend $BACKEND; load before: $(cat /proc/loadavg)"
secs=
for ext in ${FORMATS:-flac opus}; do
  t0=$(date +%s.%N)
  "$HARK" speak --backend "$BACKEND" --out "$W/book.$ext" - < "$W/book.md"
  t1=$(date +%s.%N)
  # The audio's length from the first file (every format holds the same samples): a FLAC's
  # STREAMINFO (rate: 20 bits at byte 18; total samples: 36 bits at byte 21), a WAV's header.
  [ -z "$secs" ] && secs=$(python3 - "$W/book.$ext" <<'PY'
import sys, wave
f = sys.argv[1]
if f.endswith(".wav"):
    w = wave.open(f); print(w.getnframes() / w.getframerate())
else:
    b = open(f, "rb").read(26)
    assert b[:4] == b"fLaC", "the first format must be flac or wav"
    rate = int.from_bytes(b[18:21], "big") >> 4
    total = int.from_bytes(b[21:26], "big") & ((1 << 36) - 1)
    print(total / rate)
PY
)
  python3 -c "import sys; a,t0,t1=map(float,sys.argv[2:]); print(f'{sys.argv[1]:5} {a:8.1f} s of audio in {t1-t0:7.1f} s: {a/(t1-t0):6.2f}x real time')" \
    "$ext" "$secs" "$t0" "$t1"
  echo "      $(du -k "$W/book.$ext" | cut -f1) KiB; load: $(cat /proc/loadavg)"
done
