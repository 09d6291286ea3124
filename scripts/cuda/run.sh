#!/usr/bin/env bash
# Runs on the device machine from the unpacked bundle (/tmp/h; the carried folder, with the
# bundle and any *.onnx.xz, is $B): what $STEPS names, in order. A voice carried as ONNX is
# imported first and is also onnxruntime's model in the benchmark.
set -uo pipefail
# RUN_DIR and RUN_LOG let two instances run side by side (e.g. parity next to sanitize), each
# with its own unpacked bundle, kernel cache and log in $OUT.
H=${RUN_DIR:-/tmp/h}
B=${B:-$PWD}
mkdir -p "$H" && tar -C "$H" -xJf "$B/bundle.tar.xz"
cd "$H"
exec > >(tee -a "$OUT/${RUN_LOG:-log.txt}") 2>&1
echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
for f in lib/*; do n=$(basename "$f"); ldconfig -p | grep -q "$n (" && rm "$f"; done
echo "carried libs: $(ls lib | tr '\n' ' ')"
NVRTC=$(ls -d /usr/local/cuda/lib64 2>/dev/null || dirname "$(find / -name 'libnvrtc.so*' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$H/lib:$NVRTC:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export HARK_ESPEAK_DATA=$H/espeak-ng-data HARK_VOICES_DIR=$H/voices RUST_BACKTRACE=1 XDG_CACHE_HOME=$H/cache
ldd bin/hark | grep "not found"
ONNX=
for x in "$B"/*.onnx.xz; do
  [ -f "$x" ] || continue
  ONNX=$H/$(basename "${x%.xz}")
  xz -dc -T0 "$x" > "$ONNX" && cp "${x%.xz}.json" "$ONNX.json"
  bin/hark voice import --name en_US-joe-medium "$ONNX" || echo "voice import FAILED"
done
S="The quick brown fox jumps over the lazy dog, while the old farmer watches from his porch and wonders whether the rain will ever come back to the valley before the end of this long, dry summer."
for step in ${STEPS:-parity speak}; do
  case $step in
  parity)
    # The tests' text front end looks for espeak-ng's data in the build machine's build folder
    # (its path is compiled into the binary): give it the bundle's there.
    E=$(grep -aoE '/[[:alnum:]_./+-]*/target/release/build' bin/gpu_parity | head -1)
    if [ -n "$E" ] && ! ls -d "$E"/espeak-rs-sys-*/out/share/espeak-ng-data > /dev/null 2>&1; then
      mkdir -p "$E/espeak-rs-sys-bundle/out/share" && ln -s "$H/espeak-ng-data" "$E/espeak-rs-sys-bundle/out/share/espeak-ng-data"
    fi
    # bin/gpu_parity is the `parity` test binary: the backend table (backend_ops::<family>),
    # the focused kernel and persistent-engine tests, the CPU oracle tests (skipped here).
    # The table's whole-chunk cases on the voice run both precisions themselves.
    echo "== parity f16"; timeout 180 bin/gpu_parity --test-threads=1 --nocapture
    echo "== parity f32"; HARK_CUDA_F32=1 timeout 120 bin/gpu_parity --test-threads=1 --nocapture --skip chunk_on_the_voice ;;
  speak)
    echo "== speak"
    date +%T.%N; time timeout 40 bin/hark -v speak --backend cuda --format f32 --out gpu16.wav "$S"; date +%T.%N
    HARK_CUDA_MMA=1 timeout 40 bin/hark speak --backend cuda --format f32 --out gpu16h.wav "$S"
    HARK_CUDA_F32=1 timeout 40 bin/hark speak --backend cuda --format f32 --out gpu32.wav "$S"
    timeout 40 bin/hark speak --backend cpu --format f32 --out cpu.wav "$S"
    echo -n "f16 gpu vs cpu, f32 voice (dev machine): "; python3 wavf.py gpu16.wav ref/cpu_f32voice.wav
    echo -n "f16 gpu, f16 flow activations too (HARK_CUDA_MMA=1), vs cpu, f32 voice: "; python3 wavf.py gpu16h.wav ref/cpu_f32voice.wav
    echo -n "f32 gpu vs cpu, same weights (dev machine): "; python3 wavf.py gpu32.wav ref/cpu_r16voice.wav
    echo -n "f16 gpu vs cpu, same weights (here): "; python3 wavf.py gpu16.wav cpu.wav
    cp gpu16.wav "$OUT/" ;;
  rates)
    # Speed on the GPU: each sentence 1/rate as long as at 1× (the graph path brings the
    # model's logw back; the persistent kernel does not, so it uses the curve's average), and
    # the same word timing as the CPU's.
    echo "== rates"
    for eng in graph persistent; do
      for r in 1 2 3 6; do
        timeout 40 bin/hark speak --backend cuda --engine $eng --rate $r --noise-scale 0 --noise-w 0 \
          --out r-$eng-$r.wav --timings r-$eng-$r.json "$S" || echo "rate $r on $eng FAILED"
      done
    done
    timeout 40 bin/hark speak --backend cpu --rate 3 --noise-scale 0 --noise-w 0 --out r-cpu-3.wav --timings r-cpu-3.json "$S"
    python3 - <<'PY'
import json, wave
n = lambda f: wave.open(f).getnframes()
for eng in ("graph", "persistent"):
    one = n(f"r-{eng}-1.wav")
    print(eng, " ".join(f"{r}x: {one / n(f'r-{eng}-{r}.wav'):.3f}" for r in (2, 3, 6)), "(want 2, 3, 6 within 5 %)")
cpu = json.load(open("r-cpu-3.json")); gpu = json.load(open("r-graph-3.json"))
d = [abs(a["start_sample"] - b["start_sample"]) / 22.05 for a, b in zip(cpu, gpu)]
print(f"3x word starts, graph vs cpu: {len(cpu)} / {len(gpu)} words, max {max(d):.1f} ms, mean {sum(d) / len(d):.1f} ms")
PY
    cp r-*.json "$OUT/" ;;
  bench)
    echo "== bench"
    if [ -n "$ONNX" ]; then ORT="--onnx $ONNX --python python3"; else ORT=--no-ort; fi
    timeout 150 bin/hark bench --backend cuda $ORT --plot "$OUT/bench.svg" ;;
  ab)
    # The same benchmark with the convs on the FMA path (0) and with f16 flow activations (1).
    for m in 0 1; do
      echo "== bench HARK_CUDA_MMA=$m"
      HARK_CUDA_MMA=$m timeout 100 bin/hark bench --backend cuda --no-ort --cpu-runs 0
    done ;;
  onset)
    # Streaming onset at the audio callback; the device has no sound card, so a timer thread
    # runs the callback every 10 ms (48 kHz), or every ONSET_PERIOD_MS. ONSET_PLAY_MS: how long
    # each utterance plays.
    P=${ONSET_PERIOD_MS:-10}
    echo "== onset, ${P} ms period"; HARK_AUDIO_BUFFER_MS=$P timeout 300 bin/hark bench --onset \
      --backend cuda --audio simulated --runs 50 --play-ms "${ONSET_PLAY_MS:-300}" > "$OUT/onset-$P.txt"
    cat "$OUT/onset-$P.txt" ;;
  sanitize)
    # The whole pipeline is `hark speak` on a short sentence without the warm-up utterance:
    # front half, prior, windows through captured graphs, copies.
    T="Hello there, this is a short test."
    echo "== compute-sanitizer memcheck, whole pipeline (hark speak)"
    HARK_CUDA_WARMUP=0 timeout 60 compute-sanitizer --tool memcheck bin/hark speak --backend cuda --out m.wav "$T" 2>&1 | grep -E "=====|rror" | tail -30
    echo "== compute-sanitizer racecheck, whole pipeline (hark speak)"
    HARK_CUDA_WARMUP=0 timeout ${RACE_S:-120} compute-sanitizer --tool racecheck bin/hark speak --backend cuda --out r.wav "$T" 2>&1 | grep -E "=====|rror" | tail -30
    echo "== compute-sanitizer synccheck, whole pipeline (hark speak)"
    HARK_CUDA_WARMUP=0 timeout ${SYNC_S:-120} compute-sanitizer --tool synccheck bin/hark speak --backend cuda --out s.wav "$T" 2>&1 | grep -E "=====|rror" | tail -30
    echo "== compute-sanitizer racecheck, the kernel tests on their smaller sizes"
    HARK_PARITY_QUICK=1 timeout ${RACE_T_S:-50} compute-sanitizer --tool racecheck bin/gpu_parity --test-threads=1 conv_core backend_ops::encoder backend_ops::flow backend_ops::decoder 2>&1 | grep -E "=====|test result|panicked|FAIL" | tail -30 ;;
  speechd)
    # sd_hark (issue 13) over its pipes as speech-dispatcher drives it, on a simulated
    # device, with HarkBackend cuda: INIT, a SPEAK with a mark, CHARs, STOP, QUIT. Then the
    # same with the GPU hidden: the module must start on the CPU. Check: 299 OK LOADED,
    # 701/700-m1/702 for the SPEAK, "engine on cuda…" then "engine on cpu…" in the logs.
    printf 'HarkAudio simulated\nHarkBackend cuda\nHarkCacheDir %s\n' "$H/sdcache" > sd.conf
    for gpu in shown hidden; do
      echo "== speechd, GPU $gpu"
      if [ $gpu = hidden ]; then HIDE="env CUDA_VISIBLE_DEVICES="; else HIDE=env; fi
      { printf 'INIT\n'; sleep 30
        printf 'SET\nrate=0\npitch=0\n.\n'
        printf 'SPEAK\n<speak>Hello from the GPU.<mark name="m1"/> And a second sentence.</speak>\n.\n'; sleep 8
        for c in a b c; do printf 'CHAR\n%s\n.\n' $c; sleep 0.5; done
        printf 'SPEAK\nA long sentence that is stopped before it ends, and it goes on, and on.\n.\n'; sleep 0.5
        printf 'STOP\n'; sleep 1; printf 'QUIT\n'
      } | HARK_SPEECHD_LOG=4 $HIDE timeout 120 bin/sd_hark sd.conf > "sd-$gpu.out" 2> "sd-$gpu.log"
      echo "exit $?"; cat "sd-$gpu.out"
      grep -E "timing|engine on|WARN|ERROR|panicked" "sd-$gpu.log" | head -40
    done ;;
  persist)
    # The persistent engine (issue 7): every f16 parity test (the graph kernels were
    # refactored into stage bodies too), the persistent engine against the graph path.
    echo "== parity f16 incl. persistent"
    timeout 240 bin/gpu_parity --test-threads=1 --nocapture --skip chunk_on_the_voice
    HARK_PARITY_QUICK=1 timeout 60 bin/gpu_parity --test-threads=1 --nocapture chunk_on_the_voice ;;
  perf)
    # The backend table's perf mode: each case's time on each backend (CPU included), the
    # median of PERF_RUNS runs after the checked one; a table per family at its end.
    echo "== backend ops, perf mode"
    HARK_BACKEND_PERF=${PERF_RUNS:-10} timeout ${PERF_S:-300} bin/gpu_parity --test-threads=1 --nocapture backend_ops ;;
  abbench)
    # Issue 17: the graph path of an earlier build ($B/hark-base.xz, its commit in
    # hark-base.commit) and this one, interleaved AB_ROUNDS times in one call.
    [ -f "$B/hark-base.xz" ] && xz -dc "$B/hark-base.xz" > bin/hark-base && chmod +x bin/hark-base
    for i in $(seq ${AB_ROUNDS:-2}); do
      for b in hark-base hark; do
        [ -x bin/$b ] || continue
        echo "== bench $b (round $i), $(date -u +%T)"
        timeout ${AB_S:-120} bin/$b bench --backend cuda --engine graph --no-ort --cpu-runs 0
      done
    done ;;
  archs)
    # Issue 17, portability: every kernel module compiled by this NVRTC for sm_80, 86, 89, 90,
    # 100 and 120 (and as PTX), from hark-model's lib tests ($B/model_lib.xz); then the whole
    # voice through PTX that the driver finishes (HARK_CUDA_PTX=1, as on a GPU newer than the
    # NVRTC) against the cubin build.
    echo "== archs: supported by this NVRTC and compiled"
    if [ -f "$B/model_lib.xz" ]; then
      xz -dc "$B/model_lib.xz" > bin/model_lib && chmod +x bin/model_lib
      XDG_CACHE_HOME=$H/cache-archs timeout ${ARCHS_S:-300} bin/model_lib --exact --nocapture \
        gpu::compile::tests::kernels_compile_with_nvrtc \
        gpu::compile::tests::the_target_is_the_gpus_own_code_else_its_family_else_ptx
    fi
    echo "== speak: PTX finished by the driver vs cubin"
    timeout 60 bin/hark speak --backend cuda --format f32 --out cubin.wav "$S"
    HARK_CUDA_PTX=1 XDG_CACHE_HOME=$H/cache-ptx RUST_LOG=hark=info timeout 120 bin/hark -v speak --backend cuda --format f32 --out ptx.wav "$S" 2>&1 | grep -iE "ptx|kernel|error" | head
    echo -n "ptx vs cubin: "; python3 wavf.py ptx.wav cubin.wav ;;
  coldstart)
    # Issue 17, cold start: an Auto engine on an empty kernel cache speaks its first line on
    # the CPU at once and moves to the GPU between lines once NVRTC is done.
    # COLD_WAIT_MS: how long the start waits for the kernels (HARK_CUDA_COMPILE_WAIT_MS).
    echo "== cold start (empty kernel cache, --backend auto, wait ${COLD_WAIT_MS:-500} ms), $(date -u +%T.%N)"
    C=$(mktemp -d)
    { echo "The first line, spoken while the kernels compile."; sleep ${COLD_GAP_S:-25}
      echo "The second line, after they are ready."; sleep 4; } |
      HARK_CUDA_COMPILE_WAIT_MS=${COLD_WAIT_MS:-500} XDG_CACHE_HOME=$C RUST_LOG=hark=info timeout 90 bin/hark -v follow --backend auto --audio simulated --events 2>&1 |
      grep -iE "backend|kernel|cuda|warn|rror" | cut -c1-300 | head -30
    echo "cache: $(ls $C/hark/kernels 2>/dev/null | tr '\n' ' ')" ;;
  anchor)
    # The PyTorch anchor (../shared/anchors, carried as $B/anchors), fp16 torch.compile.
    echo "== anchor, $(date -u +%T)"
    (cd "$B/anchors" && timeout ${ANCHOR_S:-240} python3 torch_vits.py --bench synthetic --fixtures fixtures --compile) ;;
  pspeak)
    echo "== speak, both engines"
    timeout 60 bin/hark -v speak --backend cuda --engine graph --format f32 --out graph.wav "$S"
    timeout 60 bin/hark -v speak --backend cuda --engine persistent --format f32 --out persistent.wav "$S"
    echo -n "persistent vs graph: "; python3 wavf.py persistent.wav graph.wav
    cp persistent.wav "$OUT/" ;;
  pbench)
    echo "== bench, both engines"
    timeout ${PBENCH_S:-200} bin/hark bench --backend cuda --no-ort --cpu-runs ${CPU_RUNS:-0} --plot "$OUT/bench.svg" ;;
  psanitize)
    # One small utterance on each path, no warm-ups, a watchdog that waits for the tools, and
    # the persistent kernel on PBLOCKS blocks (racecheck never finished on all 132).
    for tool in ${SAN_TOOLS:-racecheck synccheck memcheck}; do
      echo "== compute-sanitizer $tool, persistent vs graph (random weights, T=9, ${PBLOCKS:-all} blocks)"
      HARK_PARITY_QUICK=1 HARK_CUDA_WARMUP=0 HARK_PERSIST_WATCHDOG_MS=600000 \
        HARK_PERSIST_BLOCKS=${PBLOCKS:-} timeout ${SAN_S:-100} \
        compute-sanitizer --tool $tool bin/gpu_parity --test-threads=1 --nocapture ${SAN_TEST:-persistent_matches_graph_on_random_weights} 2>&1 | tail -12
    done ;;
  export)
    # Issue 14 item 4: export throughput on the GPU (whole sentences per decode, as the
    # blocking synthesiser does), the same book as the CPU figures in docs/BENCHMARKS.md.
    echo "== export"
    bash export-throughput.sh bin/hark cuda 2>&1 | tee "$OUT/export.txt" ;;
  soak)
    # Issue 19: SOAK_N utterances through the streaming engine on a simulated device
    # SOAK_SPEED times faster than real time; exits non-zero if RSS grows > 5 %, threads or
    # fds grow, or an utterance is lost. One device command may run 10 minutes at most.
    echo "== soak, load $(cat /proc/loadavg)"
    timeout ${SOAK_S:-570} bin/hark bench --soak ${SOAK_N:-10000} --backend cuda \
      --soak-speed ${SOAK_SPEED:-50} > "$OUT/soak.txt"
    echo "soak exit status $?"
    cat "$OUT/soak.txt" ;;
  esac
done
