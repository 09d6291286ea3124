#!/usr/bin/env python3
"""Write reference phonemes and ids of other languages for tests/text/languages.rs, made by
Piper's own phonemiser.

Usage: scripts/reference_languages.py OUT_DIR [--sentences FILE]

For every line `VOICE<TAB>TEXT[<TAB>KNOWN_DIFFERENCE]` of tests/data/language_sentences.tsv this calls
`piper_phonemize.phonemize_espeak(TEXT, VOICE)` and maps each sentence to ids with
`piper_phonemize.phoneme_ids_espeak` (Piper's default map, which Piper's voices of every
language use). It writes OUT_DIR/languages.json.

Needs: pip install piper-phonemize (1.1.0 bundles espeak-ng from rhasspy's fork, with its data).
"""

import argparse
import json
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--sentences", default=str(REPO / "tests/data/language_sentences.tsv"))
    args = ap.parse_args()

    import piper_phonemize

    items = []
    for line in Path(args.sentences).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        voice, text = line.split("\t")
        # As in reference_phonemes.py: nothing kept back by espeak from an earlier text.
        piper_phonemize.phonemize_espeak(" a", voice)
        sentences = piper_phonemize.phonemize_espeak(text, voice)
        ids = [piper_phonemize.phoneme_ids_espeak(s) for s in sentences]
        items.append(
            {
                "voice": voice,
                "text": text,
                "phonemes": sentences,
                "ids": ids,
            }
        )

    id_map = {k: list(v) for k, v in piper_phonemize.get_espeak_map().items()}
    try:
        from importlib.metadata import version as dist_version

        pp_version = dist_version("piper-phonemize")
    except Exception:  # noqa: BLE001 - informational only
        pp_version = None
    out = {
        "generator": "piper_phonemize.phonemize_espeak + phoneme_ids_espeak",
        "piper_phonemize_version": pp_version,
        "phoneme_id_map": id_map,
        "items": items,
    }
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "languages.json"
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    voices = sorted({i["voice"] for i in items})
    print(f"wrote {path}: {len(items)} texts in {', '.join(voices)} (piper-phonemize {pp_version})")


if __name__ == "__main__":
    main()
