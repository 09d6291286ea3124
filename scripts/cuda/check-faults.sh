#!/usr/bin/env bash
# The GPU half of issue 19's faults (docs/RELIABILITY.md, "Faults injected"), on the device.
#
# Here (the build machine), after `scripts/cuda/bundle.sh DEST VOICE` (PARITY=0 is enough):
#   scripts/cuda/check-faults.sh pack DEST
# adds DEST/faults.tar.xz: the `faults` test binary and a `hark` built with the
# `fault-inject` feature (the test build relinks target/release/hark with it, so the bundle
# must be made first), and this script. On the device:
#   B=$PWD/.device/NAME bash .device/NAME/check-faults.sh
# It runs, on the CUDA backend:
#   lost      the GPU lost mid-utterance (HARK_FAULT=gpu-lost-after:N): the faults test, every
#             word once, in order, one notice, the CPU from the frame reached;
#   watchdog  a persistent-kernel job that never finishes: the watchdog fires, CUDA graphs
#             go on (the faults test);
#   cache     every kernel cache entry truncated or overwritten with garbage: `hark speak`
#             compiles again (one "damaged; compiling again" per entry) and says the same;
#   nvrtc     libnvrtc really absent (LD_LIBRARY_PATH without it): `--backend auto` says so
#             once at info level and speaks on the CPU; `--backend cuda` exits 1, no panic.
# Each prints "PASS name" or "FAIL name"; the log is $OUT/faults.txt. Exit status: failures.
set -uo pipefail
if [ "${1:-}" = pack ]; then
  DEST=$2
  cd "$(dirname "$0")/../.."
  T=$(cargo test --release --no-run -p hark --test faults 2>&1 | grep -o "target/release/deps/faults-[a-f0-9]*" | head -1)
  [ -n "$T" ] || { echo "no faults test binary built"; exit 1; }
  STAGE=$(mktemp -d)
  mkdir -p "$STAGE/bin"
  strip -o "$STAGE/bin/faults" "$T"
  strip -o "$STAGE/bin/hark-faults" target/release/hark
  XZ_OPT=-3 tar -C "$STAGE" -cJf "$DEST/faults.tar.xz" .
  cp scripts/cuda/check-faults.sh "$DEST/"
  rm -rf "$STAGE"
  ls -la "$DEST/faults.tar.xz"
  exit 0
fi

H=/tmp/h
B=${B:-$PWD}
OUT=${OUT:-$B}
mkdir -p "$H"
[ -x "$H/bin/hark" ] || tar -C "$H" -xJf "$B/bundle.tar.xz"
tar -C "$H" -xJf "$B/faults.tar.xz"
cd "$H"
exec > >(tee -a "$OUT/faults.txt") 2>&1
for f in lib/*; do n=$(basename "$f"); ldconfig -p | grep -q "$n (" && rm -f "$f"; done
NVRTC=$(ls -d /usr/local/cuda/lib64 2>/dev/null || dirname "$(find / -name 'libnvrtc.so*' 2>/dev/null | head -1)")
BASE_LD=$H/lib:/usr/local/nvidia/lib64
export LD_LIBRARY_PATH=$BASE_LD:$NVRTC:${LD_LIBRARY_PATH:-}
export HARK_ESPEAK_DATA=$H/espeak-ng-data HARK_VOICES_DIR=$H/voices RUST_BACKTRACE=1 XDG_CACHE_HOME=$H/cache
export HARK_FAULT_VOICES=$H/voices HARK_FAULT_BACKEND=cuda
S="The quick brown fox jumps over the lazy dog, while the old farmer watches from his porch."
fails=0
verdict() { if [ "$2" = 0 ]; then echo "PASS $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi; }

echo "== lost: the GPU lost mid-utterance"
timeout 300 bin/faults --test-threads=1 --nocapture gpu_lost_mid_utterance
verdict lost $?

echo "== watchdog: a persistent-kernel job that never finishes"
timeout 300 bin/faults --test-threads=1 --nocapture persistent_watchdog_falls_back_to_graphs
verdict watchdog $?

echo "== cache: damaged kernel cache entries"
rm -rf "$XDG_CACHE_HOME/hark/kernels"
timeout 120 bin/hark speak --backend cuda --engine graph --format f32 --out clean.wav "$S"
n=0
for f in "$XDG_CACHE_HOME"/hark/kernels/*.cubin; do
  [ -f "$f" ] || continue
  if [ $((n % 2)) = 0 ]; then truncate -s $(($(stat -c %s "$f") / 2)) "$f"; else head -c 4096 /dev/urandom > "$f"; fi
  n=$((n + 1))
done
echo "$n cache entries damaged"
timeout 120 bin/hark -v speak --backend cuda --engine graph --format f32 --out again.wav "$S" 2> again.log
rc=$?
cat again.log
got=$(grep -c "damaged; compiling again" again.log)
echo "recompiled: $got of $n; exit $rc"
echo -n "again.wav vs clean.wav: "; python3 wavf.py again.wav clean.wav
ok=1; [ "$rc" = 0 ] && [ "$n" -gt 0 ] && [ "$got" = "$n" ] && ! grep -q panicked again.log && ok=0
verdict cache $ok

echo "== nvrtc: libnvrtc absent"
export LD_LIBRARY_PATH=$BASE_LD
if ldconfig -p | grep -q libnvrtc; then
  echo "skipped: libnvrtc is on the loader's default path here (ldconfig), it cannot be hidden"
else
  timeout 120 bin/hark -v speak --backend auto --out cpu.wav "$S" 2> auto.log; a=$?
  cat auto.log
  timeout 60 bin/hark speak --backend cuda --out no.wav "$S" 2> cuda.log; c=$?
  cat cuda.log; echo "auto exit $a, cuda exit $c"
  if [ "$c" = 0 ]; then
    echo "skipped: libnvrtc was found without LD_LIBRARY_PATH (cudarc's own search)"
  else
    ok=1
    [ "$a" = 0 ] && [ "$(grep -c 'NVRTC (libnvrtc) not found' auto.log)" = 1 ] &&
      grep 'NVRTC (libnvrtc) not found' auto.log | grep -q INFO && ! grep -q WARN auto.log &&
      [ "$c" = 1 ] && grep -q 'hark: error: .*NVRTC (libnvrtc) not found' cuda.log &&
      ! grep -q panicked auto.log cuda.log && ok=0
    verdict nvrtc $ok
  fi
fi
echo "faults: $fails failed"
exit $fails
