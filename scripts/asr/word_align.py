#!/usr/bin/env python3
"""Hark's word timing against a forced aligner: PocketSphinx (CMU Sphinx, its en-us HMM model
and CMUdict as shipped in the PyPI wheel), given the text that was spoken.

usage: word_align.py X.wav X.json [--max-median-ms MS] [-v]

X.wav and X.json come from `hark speak --out X.wav --timings X.json`. Unlike Whisper, which
first has to recognise the words and then guesses their times from cross-attention, a forced
aligner is told the words and finds where each one starts with a Viterbi pass over phone HMMs,
in 10 ms frames. Hark's words (each entry's spoken words, in order) must all be in CMUdict; an
entry that is not (a number, a name) is reported and the script exits 2: give it plain prose.

The audio is resampled to the model's 16 kHz (band-limited, through numpy's FFT). For each word the
start error is the aligner's start minus Hark's start_sample. Prints the median signed error
(the offset), the median |error - offset| (the spread), the 90th percentile, and a last line
`median start error: N ms` (the median |error|). Exit 1 when the median exceeds
--max-median-ms or the aligner placed fewer than 95 % of the words.

Where it stops being a fair judge: its phone HMMs have three 10 ms states, so speech much
faster than 1.5× (phones under 30 ms) finds no path at all (exit 1, said so); use it at 1×
to 1.5×, and the durations (docs/BENCHMARKS.md) above.
"""

import argparse
import json
import re
import statistics
import sys
import unicodedata
import wave
from pathlib import Path


import numpy as np

MODEL_RATE = 16000
FRAME_S = 0.01


def spoken_words(text: str) -> list:
    """Lower-case words as CMUdict spells them ("Keeper's," → "keeper's")."""
    t = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    return [w.strip("'") for w in re.findall(r"[a-z0-9']+", t) if w.strip("'")]


def read_wav(path: Path):
    with wave.open(str(path)) as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise ValueError(f"{path}: expected 16-bit mono PCM")
        rate = w.getframerate()
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return rate, pcm


def to_model_rate(rate: int, pcm: np.ndarray) -> bytes:
    """Band-limited resampling to 16 kHz through the FFT (the whole file at once: a few
    seconds of speech is a small transform), so no resampler package is needed."""
    if rate == MODEL_RATE:
        return pcm.tobytes()
    n_out = int(round(len(pcm) * MODEL_RATE / rate))
    spectrum = np.fft.rfft(pcm.astype(np.float64))[: n_out // 2 + 1]
    x = np.fft.irfft(spectrum, n_out) * (n_out / len(pcm))
    return np.clip(np.round(x), -32768, 32767).astype("<i2").tobytes()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("wav", type=Path)
    ap.add_argument("timings", type=Path)
    ap.add_argument("--max-median-ms", type=float, default=None)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    try:
        rate, pcm = read_wav(args.wav)
        ours = json.loads(args.timings.read_text(encoding="utf-8"))
    except (OSError, ValueError, wave.Error) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    from pocketsphinx import Decoder

    decoder = Decoder(lm=None, samprate=MODEL_RATE, loglevel="ERROR")
    # Hark's entries and the words each is spoken as; only the first word's start is compared.
    spoken, firsts = [], []
    unknown = []
    for t in ours:
        w = spoken_words(t["text"])
        if not w:
            continue
        for x in w:
            if decoder.lookup_word(x) is None:
                unknown.append(x)
        firsts.append((len(spoken), w[0], t["start_sample"] / rate))
        spoken.extend(w)
    if unknown:
        print(f"error: not in the aligner's dictionary: {' '.join(sorted(set(unknown)))}",
              file=sys.stderr)
        return 2
    decoder.set_align_text(" ".join(spoken))
    decoder.start_utt()
    decoder.process_raw(to_model_rate(rate, pcm), no_search=False, full_utt=True)
    decoder.end_utt()
    segments = decoder.seg()
    if segments is None:
        # Its phone models need 3 frames (30 ms) a phone: speech much faster than 1.5× has no
        # path through them.
        print("error: the aligner found no path through the text (speech too fast for its "
              "30 ms phones, or not these words)", file=sys.stderr)
        return 1
    # Its segments: the words in order, with silences and sentence marks between them.
    starts = [seg.start_frame * FRAME_S for seg in segments
              if not (seg.word.startswith("<") or seg.word.startswith("["))]
    if len(starts) < 0.95 * len(spoken):
        print(f"error: the aligner placed {len(starts)} of {len(spoken)} words", file=sys.stderr)
        return 1
    errors = []
    for index, word, ours_s in firsts:
        if index >= len(starts):
            break
        errors.append((starts[index] - ours_s) * 1e3)
        if args.verbose:
            print(f"{word:>16} hark {ours_s:7.3f} s  sphinx {starts[index]:7.3f} s  "
                  f"{errors[-1]:+6.0f} ms")
    absolute = sorted(abs(e) for e in errors)
    median = statistics.median(absolute)
    p90 = absolute[min(len(absolute) - 1, int(0.9 * len(absolute)))]
    offset = statistics.median(errors)
    spread = statistics.median(abs(e - offset) for e in errors)
    print("# aligner: PocketSphinx forced alignment (en-us HMM, CMUdict), 10 ms frames")
    print(f"{len(errors)} of {len(firsts)} words timed; p90 |error| {p90:.0f} ms")
    print(f"median signed error {offset:+.0f} ms; median |error - that| {spread:.0f} ms")
    print(f"median start error: {median:.0f} ms")
    if args.max_median_ms is not None and median > args.max_median_ms:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
