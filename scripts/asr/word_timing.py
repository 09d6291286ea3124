#!/usr/bin/env python3
"""Hark's word timing against an independent aligner: Whisper's word timestamps.

usage: word_timing.py X.wav X.json [--model base|tiny.en] [--max-median-ms MS]
                      [--max-spread-ms MS] [--min-matched F] [-v]

X.wav and X.json come from `hark speak --out X.wav --timings X.json`. Whisper transcribes
the WAV with word timestamps (cross-attention + DTW, faster-whisper); its words are matched to
Hark's by text (difflib, equal words only, so a misheard word is left out rather than paired
wrongly), and for each matched word the start error is Whisper's start minus Hark's. The first
word of each Whisper segment is left out: faster-whisper snaps it to the segment's start
timestamp (a 20 ms token that often lies in the pause before, or at the end of the last
segment), not to where the alignment puts it.

Prints the matched share, the mean signed error, the 90th percentile of |error|, the median
signed error (the offset between the two timings) and the median |error - offset| (the
spread: how consistently each word lands), and a last line `median start error: N ms` (the
median |error|). Whisper's word timestamps carry a bias of their own that depends on the model
(on Hark's speech, base puts words ~55 ms earlier than Hark, tiny.en ~90 ms later), so the
offset says as much about the aligner as about Hark; the spread does not depend on it.

Exit 1 when the median exceeds --max-median-ms, the spread --max-spread-ms, or fewer than
--min-matched of Hark's words were matched; 2 on bad input.
"""

import argparse
import difflib
import json
import statistics
import sys
import wave
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import asr  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("wav", type=Path)
    ap.add_argument("timings", type=Path)
    ap.add_argument("--model", default="base")
    ap.add_argument("--max-median-ms", type=float, default=None)
    ap.add_argument("--max-spread-ms", type=float, default=None)
    ap.add_argument("--min-matched", type=float, default=0.8)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    try:
        with wave.open(str(args.wav)) as w:
            rate = w.getframerate()
        ours = json.loads(args.timings.read_text(encoding="utf-8"))
    except (OSError, ValueError, wave.Error) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # Hark's words: one entry may be several spoken words ("well-known" is one, "$3.50" is
    # "three dollars fifty"); compare each entry's first word only.
    mine = []
    for t in ours:
        w = asr.words(t["text"])
        if w:
            mine.append((w[0], t["start_sample"] / rate))
    model, desc = asr.load(args.model)
    segments, _ = model.transcribe(
        str(args.wav), language="en", beam_size=5, temperature=0.0,
        condition_on_previous_text=False, vad_filter=False, word_timestamps=True)
    heard = []
    for seg in segments:
        for k, w in enumerate(seg.words or []):
            for x in asr.words(w.word):
                # The segment's first word: in the transcript, but without a start.
                heard.append((x, None if k == 0 else w.start))
    m = difflib.SequenceMatcher(a=[w for w, _ in mine], b=[w for w, _ in heard], autojunk=False)
    errors = []
    for block in m.get_matching_blocks():
        for k in range(block.size):
            (word, ours_s), (_, theirs_s) = mine[block.a + k], heard[block.b + k]
            if theirs_s is None:
                continue
            errors.append((theirs_s - ours_s) * 1e3)
            if args.verbose:
                print(f"{word:>16} hark {ours_s:7.3f} s  whisper {theirs_s:7.3f} s  "
                      f"{errors[-1]:+6.0f} ms")
    if not errors:
        print("error: no word of Hark's matched Whisper's transcript", file=sys.stderr)
        return 1
    absolute = sorted(abs(e) for e in errors)
    median = statistics.median(absolute)
    p90 = absolute[min(len(absolute) - 1, int(0.9 * len(absolute)))]
    matched = sum(b.size for b in m.get_matching_blocks()) / len(mine)
    print(f"# aligner: {desc}, word timestamps")
    print(f"matched {matched:.0%} of {len(mine)} words, {len(errors)} timed; "
          f"mean signed error {statistics.mean(errors):+.0f} ms; p90 |error| {p90:.0f} ms")
    offset = statistics.median(errors)
    jitter = statistics.median(abs(e - offset) for e in errors)
    print(f"median signed error {offset:+.0f} ms; median |error - that| {jitter:.0f} ms")
    print(f"median start error: {median:.0f} ms")
    if matched < args.min_matched:
        return 1
    if args.max_median_ms is not None and median > args.max_median_ms:
        return 1
    if args.max_spread_ms is not None and jitter > args.max_spread_ms:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
