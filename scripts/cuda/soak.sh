#!/usr/bin/env bash
# The soak of issue 19 on the H200: `hark bench --soak` (10,000 utterances by default) on the
# CUDA backend, from a bundle made with `PARITY=0 scripts/cuda/bundle.sh DEST VOICE`.
# On the device: B=$PWD/.device/NAME bash .device/NAME/soak.sh
# SOAK_N (utterances), SOAK_SPEED (simulated device, × real time; default 50), SOAK_S (timeout,
# default 570 s: a device command may run 10 minutes). The table and JSON land in $OUT/soak.txt,
# the log in $OUT/log.txt; "soak exit status 0" there is a pass.
set -uo pipefail
B=${B:-$(cd "$(dirname "$0")" && pwd)}
export B STEPS=soak
exec bash "$B/run.sh"
