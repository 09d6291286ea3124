#!/usr/bin/env bash
# Real speed per sentence: speaks each line of a file at 1× and at each rate with
# `hark speak --rate`, and prints min / max / mean of (1× length / length) / rate.
# usage: scripts/rate_lengths.sh [SENTENCES] [RATES…]   (HARK_BIN: default target/release/hark)
set -euo pipefail
cd "$(dirname "$0")/.."
sentences=${1:-tests/data/phoneme_sentences.txt}
shift $(( $# < 1 ? $# : 1 ))
rates=${*:-0.5 1.3 2 3 6}
hark=${HARK_BIN:-target/release/hark}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
i=0
grep -v '^#' "$sentences" | while IFS= read -r line; do
  [ -z "$line" ] && continue
  for r in 1 $rates; do "$hark" speak --rate "$r" --out "$work/$i-$r.wav" "$line"; done
  i=$((i + 1))
done
python3 - "$work" $rates <<'PY'
import glob, sys, wave
work, rates = sys.argv[1], sys.argv[2:]
n = lambda f: wave.open(f).getnframes()
print("| asked | min | max | mean |\n|---|---|---|---|")
for r in rates:
    v = [n(f) / n(f.replace("-1.wav", f"-{r}.wav")) / float(r) for f in glob.glob(f"{work}/*-1.wav")]
    print(f"| {r}× | {min(v):.4f} | {max(v):.4f} | {sum(v) / len(v):.4f} |")
PY
