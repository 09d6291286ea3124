#!/usr/bin/env bash
# One allocator setting, A against B, run by run: `hark bench --onset` on the simulated
# device (each utterance plays --play-ms, then the next interrupts it; the engine idles in
# between) in processes that alternate the variable VAR (MIMALLOC_PURGE_DELAY unless set;
# e.g. VAR=MIMALLOC_ALLOW_THP with A=1 B=0), so both see the same host. Prints
# each run's auto-step onset (median, P99), the medians over runs, the median of the per-pair
# ratios B/A, and the load before and after.
#   scripts/alloc-ab.sh [PAIRS] [A] [B]      (defaults: 4 pairs, purge delay -1 = never, 100 ms)
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${1:-4}; A=${2:--1}; B=${3:-100}; VAR=${VAR:-MIMALLOC_PURGE_DELAY}
HARK=${HARK:-target/release/hark}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
out=$(mktemp)
for i in $(seq "$PAIRS"); do
  for d in "$A" "$B"; do
    env "$VAR=$d" "$HARK" bench --onset --audio simulated --runs "${RUNS:-10}" \
      --play-ms "${PLAY_MS:-1000}" --json 2>/dev/null |
      python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]["onset"]; print(sys.argv[1], sys.argv[2], r["median_ms"], r["p99_ms"])' "$i" "$d" >> "$out"
    tail -1 "$out"
  done
done
python3 - "$out" "$A" "$B" "$VAR" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
a, b = sys.argv[2], sys.argv[3]
get = lambda d, k: [float(r[k]) for r in rows if r[1] == d]
for d in (a, b):
    print(f"{sys.argv[4]}={d}: onset median of medians {st.median(get(d, 2)):.1f} ms, median P99 {st.median(get(d, 3)):.1f} ms")
ratios = [y / x for x, y in zip(get(a, 2), get(b, 2))]
print(f"median of per-pair ratios ({b} / {a}): {st.median(ratios):.3f}")
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
