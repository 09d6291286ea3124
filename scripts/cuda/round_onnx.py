#!/usr/bin/env python3
"""Writes a copy of the voice's ONNX whose flow and decoder weights are rounded to f16 values
(still stored as f32; the front half is untouched). Rounded weights compress to about half
under xz, so this model fits the device machine's transfer limit together with the binaries.
There it serves both onnxruntime (the benchmark anchor: same graph, same f32 arithmetic, so
the same speed) and `hark voice import` (the same weights the CUDA backend's default mode
stores).  usage: round_onnx.py SRC.onnx DST.onnx"""
import collections
import sys

import numpy as np
import onnx
from onnx import numpy_helper

src, dst = sys.argv[1], sys.argv[2]
model = onnx.load(src)
graph = model.graph
scopes = collections.defaultdict(set)
for node in graph.node:
    for name in node.input:
        # "/flow/flows.0/enc/in_layers.1/Conv" -> "flow"
        scopes[name].add(node.name.split("/")[1] if node.name.startswith("/") else "")
rounded = 0
for i, t in enumerate(graph.initializer):
    if t.data_type != onnx.TensorProto.FLOAT:
        continue
    top = t.name.split(".")[0]
    owners = {top} if top in ("enc_p", "dp", "flow", "dec", "emb_g") else scopes[t.name]
    if owners and owners <= {"flow", "dec"}:
        a = numpy_helper.to_array(t).astype(np.float16).astype(np.float32)
        graph.initializer[i].CopyFrom(numpy_helper.from_array(a, t.name))
        rounded += a.size
onnx.save(model, dst)
print(f"{rounded} flow/decoder weights rounded to f16 values")
