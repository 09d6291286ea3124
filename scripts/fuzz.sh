#!/usr/bin/env bash
# Run one cargo-fuzz target for a while, or replay its corpus.
#
#   scripts/fuzz.sh TARGET [SECONDS] [libFuzzer flags…]   fuzz (default 60 s)
#   scripts/fuzz.sh TARGET replay                          run every kept input once
#
# The kept seeds are fuzz/corpus/TARGET (small, in git); what a run finds goes to
# fuzz/work/TARGET (ignored), crashes to fuzz/artifacts/TARGET. One job, one worker: the CI
# machine has two cores. Needs the nightly toolchain and `cargo install cargo-fuzz`.
set -euo pipefail
target=${1:?usage: scripts/fuzz.sh TARGET [SECONDS|replay] [flags…]}
what=${2:-60}
shift $(($# < 2 ? $# : 2))
cd "$(dirname "$0")/../fuzz"
mkdir -p "work/$target" "corpus/$target"
# Longest input per target: enough for a paragraph, a small voice folder or model.
case $target in
    onnx_import | voice_folder) max_len=${MAX_LEN:-65536} ;;
    *) max_len=${MAX_LEN:-4096} ;;
esac
if [[ $what == replay ]]; then
    exec cargo +nightly fuzz run -O "$target" "corpus/$target" -- -runs=0 -rss_limit_mb=2048 "$@"
fi
exec cargo +nightly fuzz run -O "$target" "work/$target" "corpus/$target" -- \
    -jobs=1 -workers=1 -rss_limit_mb=2048 -max_len="$max_len" -max_total_time="$what" \
    -print_final_stats=1 "$@"
