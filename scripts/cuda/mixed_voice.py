#!/usr/bin/env python3
"""Writes a copy of an f32 voice folder whose flow and decoder weights are rounded to f16 (the
front half stays f32). The CUDA backend's default mode stores exactly these values on the
device, so this folder gives it the same results as the f32 voice while being ~45 MB instead
of ~63 MB: it fits the device machine's transfer limit.  usage: mixed_voice.py SRC DST"""
import json, shutil, struct, sys
import numpy as np

src, dst = sys.argv[1], sys.argv[2]
raw = open(f"{src}/voice.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
data = raw[8 + n:]
out_header, blobs, off = {}, [], 0
for name, meta in sorted(header.items(), key=lambda kv: kv[1].get("data_offsets", [0])[0] if kv[0] != "__metadata__" else -1):
    if name == "__metadata__":
        out_header[name] = meta
        continue
    a, b = meta["data_offsets"]
    arr = np.frombuffer(data[a:b], dtype="<f4")
    if name.startswith(("flow.", "dec.")):
        blob, dtype = arr.astype("<f2").tobytes(), "F16"
    else:
        blob, dtype = arr.tobytes(), "F32"
    out_header[name] = {"dtype": dtype, "shape": meta["shape"], "data_offsets": [off, off + len(blob)]}
    blobs.append(blob)
    off += len(blob)
hb = json.dumps(out_header, separators=(",", ":")).encode()
hb += b" " * ((8 - len(hb) % 8) % 8)
import os
os.makedirs(dst, exist_ok=True)
with open(f"{dst}/voice.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(hb)) + hb)
    for blob in blobs:
        f.write(blob)
shutil.copy(f"{src}/voice.json", f"{dst}/voice.json")
