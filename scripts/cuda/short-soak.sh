#!/usr/bin/env bash
# A short CUDA soak (SOAK_N utterances, 3000; a sample every N/10) within one device command
# (SOAK_S seconds, 330), from a bundle with bin/hark-heap (see long-run.sh):
#   B=$PWD/.device/NAME bash .device/NAME/short-soak.sh
set -uo pipefail
B=${B:?}; H=/tmp/h; mkdir -p $H && tar -C $H -xJf $B/bundle.tar.xz
for f in "$H"/lib/*; do n=$(basename "$f"); ldconfig -p | grep -q "$n (" && rm "$f"; done
cd $H
NVRTC=$(ls -d /usr/local/cuda/lib64 2>/dev/null || dirname "$(find / -name 'libnvrtc.so*' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$H/lib:$NVRTC:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export ESPEAK_DATA_PATH=$H HARK_VOICES_DIR=$H/voices XDG_CACHE_HOME=$H/cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
timeout ${SOAK_S:-330} bin/hark-heap bench --soak ${SOAK_N:-3000} --backend cuda --soak-speed 150 2>&1 | grep -v '^{' | tail -25
echo "exit ${PIPESTATUS[0]}"; date -u
