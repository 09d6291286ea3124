#!/usr/bin/env bash
# Runs longer than one device command allows (10 minutes): the 10,000-utterance soaks of
# issue 19 on CUDA and on the CPU side by side, and the fuzz targets on the spare cores. Each
# is started in its own process session, so it outlives the command that started it while
# the machine stays held; a later command collects.
#   B=$PWD/.device/NAME bash .device/NAME/long-run.sh start [SECONDS]   start, then wait
#   B=$PWD/.device/NAME bash .device/NAME/long-run.sh wait [SECONDS]    wait, print progress
#   B=$PWD/.device/NAME bash .device/NAME/long-run.sh collect           copy results to $OUT
#   B=$PWD/.device/NAME bash .device/NAME/long-run.sh short [N [SECONDS]]
#       a CUDA soak of N utterances (3000; a sample every N/10) inside one command, in the
#       foreground, stopped after SECONDS (330)
# $B/bundle.tar.xz is scripts/cuda/bundle.sh's layout (lib/, espeak-ng-data/, voices/ or, beside
# the bundle, NAME.onnx.xz and NAME.onnx.json from round_onnx.py, imported here) with
# bin/hark-heap (hark built with `--features heap-count`, so the soak reports the live heap
# too) and, optionally, fuzz/bin (the binaries of `cargo +nightly fuzz build -O`, debug info
# stripped) and fuzz/corpus; their libraries are in lib/.
# SOAK_N (10000), FUZZ_S (seconds per target, 1000), CPU_THREADS (6), CPU_SOAK (1; 0: no CPU
# soak), GPU_ENV (variables for the CUDA soak, e.g. "HARK_MALLOC_TRIM=0"), ARMS (more CUDA
# soaks beside it, to compare settings: "NAME N VAR=V ...; NAME N ...").
set -uo pipefail
B=${B:?set B to the carried folder}
H=/tmp/h
R=/tmp/long-run
N=${SOAK_N:-10000}
setup_env() {
  cd "$H"
  NVRTC=$(ls -d /usr/local/cuda/lib64 2>/dev/null || dirname "$(find / -name 'libnvrtc.so*' 2>/dev/null | head -1)")
  export LD_LIBRARY_PATH=$H/lib:$NVRTC:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
  export HARK_ESPEAK_DATA=$H/espeak-ng-data HARK_VOICES_DIR=$H/voices RUST_BACKTRACE=1 XDG_CACHE_HOME=$H/cache
}
soaks() { echo gpu cpu; for f in "$R"/arm-*.err; do [ -f "$f" ] && basename "$f" .err; done; }
progress() {
  echo "== $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  for s in $(soaks); do echo "soak $s: $(grep -c 'done,' "$R/$s.err" 2>/dev/null) samples; $(tail -1 "$R/$s.err" 2>/dev/null)"; done
  for f in "$R"/fuzz-*.log; do
    [ -f "$f" ] && echo "$(basename "$f" .log): $(grep -aoE '#[0-9]+' "$f" | tail -1) $(grep -acE 'ERROR|crash-' "$f") errors"
  done
}
# The bundle into $H, without the libraries the device has already.
unpack() {
  mkdir -p "$H" "$R" && tar -C "$H" -xJf "$B/bundle.tar.xz"
  for f in "$H"/lib/*; do n=$(basename "$f"); ldconfig -p | grep -q "$n (" && rm "$f"; done
  setup_env
  for x in "$B"/*.onnx.xz; do
    [ -f "$x" ] || continue
    o=$H/$(basename "${x%.xz}")
    xz -dc -T0 "$x" > "$o" && cp "${x%.xz}.json" "$o.json" &&
      bin/hark-heap voice import --name en_US-joe-medium "$o" > /dev/null || echo "voice import FAILED"
  done
}
case ${1:-start} in
short)
  unpack
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  date -u; echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
  timeout "${3:-330}" bin/hark-heap bench --soak "${2:-3000}" --backend cuda --soak-speed 150 2>&1 |
    grep -v '^{' | tail -25
  echo "exit ${PIPESTATUS[0]}"; date -u ;;
start)
  unpack
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cores $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"
  T=/sys/kernel/mm/transparent_hugepage
  echo "THP enabled: $(cat $T/enabled), defrag: $(cat $T/defrag), khugepaged max_ptes_none $(cat $T/khugepaged/max_ptes_none), pages_to_scan $(cat $T/khugepaged/pages_to_scan) per $(cat $T/khugepaged/scan_sleep_millisecs) ms"
  setsid bash -c "env ${GPU_ENV:-} bin/hark-heap bench --soak $N --backend cuda --soak-speed 150 > $R/gpu.txt 2> $R/gpu.err; echo exit \$? >> $R/gpu.err" < /dev/null &
  if [ "${CPU_SOAK:-1}" != 0 ]; then
    RAYON_NUM_THREADS=${CPU_THREADS:-6} setsid bash -c "bin/hark-heap bench --soak $N --backend cpu --soak-speed 50 > $R/cpu.txt 2> $R/cpu.err; echo exit \$? >> $R/cpu.err" < /dev/null &
  fi
  IFS=';' read -ra arms <<< "${ARMS:-}"
  for arm in "${arms[@]}"; do
    read -r name n vars <<< "$arm"
    [ -n "$name" ] || continue
    echo "arm $name: $n utterances, $vars"
    setsid bash -c "env $vars bin/hark-heap bench --soak $n --backend cuda --soak-speed 150 > $R/arm-$name.txt 2> $R/arm-$name.err; echo exit \$? >> $R/arm-$name.err" < /dev/null &
  done
  if [ -d "$H/fuzz/bin" ]; then
    mkdir -p "$R/fuzz" && cp -r "$H/fuzz/bin" "$H/fuzz/corpus" "$R/fuzz/"
    for t in "$R"/fuzz/bin/*; do
      name=$(basename "$t")
      case $name in onnx_import | voice_folder) len=65536 ;; *) len=4096 ;; esac
      mkdir -p "$R/fuzz/work/$name" "$R/fuzz/artifacts/$name"
      (cd "$R/fuzz" && setsid bash -c "'$t' work/$name corpus/$name -rss_limit_mb=2048 -max_len=$len \
        -max_total_time=${FUZZ_S:-1000} -print_final_stats=1 -artifact_prefix=artifacts/$name/ \
        > $R/fuzz-$name.log 2>&1" < /dev/null &)
    done
  fi
  sleep "${2:-520}"; progress ;;
wait)
  sleep "${2:-540}"; progress ;;
collect)
  progress
  cp "$R"/*.txt "$R"/*.err "$R"/fuzz-*.log "$OUT/" 2>/dev/null
  tar -C "$R/fuzz" -czf "$OUT/fuzz-artifacts.tgz" artifacts 2>/dev/null
  for s in $(soaks); do [ -f "$R/$s.err" ] || continue; echo "== soak $s"; cat "$R/$s.txt"; tail -3 "$R/$s.err"; done
  for f in "$R"/fuzz-*.log; do echo "== $(basename "$f")"; grep -aE 'stat::number_of_executed_units|Done [0-9]+ runs|ERROR|SUMMARY' "$f" | tail -4; done ;;
esac
