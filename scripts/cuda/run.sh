#!/usr/bin/env bash
# Runs on the device machine from the unpacked bundle (/tmp/h): GPU parity tests in both
# precisions, `hark speak --backend cuda` against reference audio, then what $STEPS names.
set -uo pipefail
H=/tmp/h
cd "$H"
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
for f in lib/*; do n=$(basename "$f"); ldconfig -p | grep -q "$n (" && rm "$f"; done
echo "carried libs: $(ls lib | tr '\n' ' ')"
NVRTC=$(ls -d /usr/local/cuda/lib64 2>/dev/null || dirname "$(find / -name 'libnvrtc.so*' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$H/lib:$NVRTC:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export ESPEAK_DATA_PATH=$H HARK_VOICES_DIR=$H/voices RUST_BACKTRACE=1
ldd bin/hark | grep "not found"
S="The quick brown fox jumps over the lazy dog, while the old farmer watches from his porch and wonders whether the rain will ever come back to the valley before the end of this long, dry summer."
for step in ${STEPS:-parity speak}; do
  case $step in
  parity)
    echo "== parity f16"; timeout 300 bin/gpu_parity --test-threads=1 --nocapture
    echo "== parity f32"; HARK_CUDA_F32=1 timeout 200 bin/gpu_parity --test-threads=1 --nocapture --skip real_voice ;;
  speak)
    echo "== speak"
    date +%T.%N; time timeout 120 bin/hark -v speak --backend cuda --format f32 --out gpu16.wav "$S"; date +%T.%N
    HARK_CUDA_F32=1 timeout 120 bin/hark speak --backend cuda --format f32 --out gpu32.wav "$S"
    echo -n "f16 gpu vs cpu f32 voice: "; python3 ref/wavf.py gpu16.wav ref/cpu_f32voice.wav
    echo -n "f32 gpu vs cpu same weights: "; python3 ref/wavf.py gpu32.wav ref/cpu_mixvoice.wav
    cp gpu16.wav "$OUT/" ;;
  bench)
    echo "== bench"; timeout 300 bin/hark bench --backend cuda --no-ort --plot "$OUT/bench.svg" ;;
  sanitize)
    echo "== compute-sanitizer"
    # memcheck on the whole pipeline (real voice); racecheck is far slower: the flow and
    # decoder windows and the encoder on random weights.
    HARK_PARITY_QUICK=1 timeout 200 compute-sanitizer --tool memcheck bin/gpu_parity --test-threads=1 real_voice 2>&1 | tail -6
    timeout 240 compute-sanitizer --tool racecheck bin/gpu_parity --test-threads=1 windows_from_prior encoder_matches 2>&1 | tail -12 ;;
  esac
done
