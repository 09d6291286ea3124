#!/usr/bin/env python3
"""onnxruntime oracle for Hark's CPU reference model.

Runs a Piper voice ONNX with extra graph outputs so that every stage of the Rust model can be
checked against it, and dumps per case (as little-endian C-order .npy files):

  ids [T] i8 | x [H,T] | m_p [C,T] | logs_p [C,T] | logw [T] | durations [T] i8 (w_ceil)
  z_p [C,F] | z [C,F] | audio [S]

plus `manifest.json` (cases, scales, sentence, shapes, where each tensor was read in the graph).
Noise scales are 0 in every case, so ORT's unseeded RandomNormalLike draws have no effect and the
outputs are deterministic.

Weights for the Rust side come from Hark's importer run on the same ONNX (`manifest["onnx"]`).

A multi-speaker voice (a `sid` input) is run once per `--sid N`, each case named `NAME_sidN`
with its `sid` in the manifest; `--limit K` keeps the first K sentences.

Usage: scripts/oracle.py --onnx PATH [--out DIR] [--sentences FILE] [--sid N ...] [--limit K]
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper as nh
import onnxruntime as ort
import piper_phonemize

REPO = Path(__file__).resolve().parent.parent

# Tensor names in the Piper VITS graph (PyTorch 2.0 export), checked numerically in `verify`.
TAPS = {
    # Text encoder output (already × x_mask), the input of enc_p.proj.
    "x": "/enc_p/encoder/Mul_2_output_0",
    # proj(x) · mask, split into m_p and logs_p.
    "m_p": "/enc_p/Split_output_0",
    "logs_p": "/enc_p/Split_output_1",
    # SDP reverse output channel 0 (split of z after the ElementwiseAffine) = logw.
    "logw": "/dp/Split_output_0",
    # ceil(exp(logw) · mask · length_scale).
    "w_ceil": "/Ceil_output_0",
    # z_p = expanded m_p + ε·exp(logs_p)·noise_scale: the Add that feeds the flow.
    "z_p": "/Add_output_0",
    # Flow output (· y_mask), the input of dec.conv_pre.
    "z": "/Mul_7_output_0",
}

# Initializers whose PyTorch names were lost in export.
RENAMES = {"sid": "enc_p.emb.weight"}


def read_sentences(path):
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def phoneme_ids(text, config):
    voice = config["espeak"]["voice"]
    id_map = config["phoneme_id_map"]
    sentences = piper_phonemize.phonemize_espeak(text, voice)
    phonemes = [p for s in sentences for p in s]
    if len(sentences) != 1:
        print(f"warning: {text!r} phonemised into {len(sentences)} sentences; joined", file=sys.stderr)
    pad, bos, eos = id_map["_"], id_map["^"], id_map["$"]
    ids = list(bos) + list(pad)
    for p in phonemes:
        if p not in id_map:
            print(f"warning: phoneme {p!r} not in the map; skipped", file=sys.stderr)
            continue
        ids += list(id_map[p]) + list(pad)
    ids += list(eos)
    return "".join(phonemes), np.array(ids, dtype=np.int64)


def tapped_model(onnx_path):
    model = onnx.load(str(onnx_path))
    produced = {o for n in model.graph.node for o in n.output}
    for key, name in TAPS.items():
        if name not in produced:
            sys.exit(f"tensor {name} ({key}) is not produced by any node of {onnx_path}")
        model.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    return model


def pytorch_weights(model):
    """Float initializers under PyTorch names (used to verify the taps)."""
    out = {}
    # Anonymous Conv weights (the flow's WaveNet, weight norm folded): name them after the node,
    # e.g. /flow/flows.0/enc/in_layers.1/Conv → flow.flows.0.enc.in_layers.1.weight.
    conv_names = {}
    for n in model.graph.node:
        if n.op_type == "Conv" and n.input[1].startswith("onnx::"):
            conv_names[n.input[1]] = n.name.strip("/").removesuffix("/Conv").replace("/", ".") + ".weight"
    for init in model.graph.initializer:
        name = init.name
        arr = nh.to_array(init)
        if arr.dtype != np.float32:
            continue
        if name in RENAMES:
            out[RENAMES[name]] = arr
        elif name in conv_names:
            out[conv_names[name]] = arr
        elif name == "/dp/flows.0/Exp_output_0":
            # The graph multiplies by this folded constant in ElementwiseAffine's reverse,
            # (x − m)·exp(−logs), so it holds exp(−logs): logs = −ln(it).
            out["dp.flows.0.logs"] = -np.log(arr.astype(np.float64)).astype(np.float32)
        elif not name.startswith("/") and not name.startswith("onnx::"):
            out[name] = arr
    return out


def verify(case, weights, hop):
    """Check numerically that each tapped tensor is what its name says."""
    x, m_p, logs_p = case["x"], case["m_p"], case["logs_p"]
    w, b = weights["enc_p.proj.weight"][:, :, 0].astype(np.float64), weights["enc_p.proj.bias"]
    stats = w @ x.astype(np.float64) + b[:, None]
    c = m_p.shape[0]
    err = np.abs(stats - np.concatenate([m_p, logs_p])).max()
    assert err < 1e-3, f"proj(x) != [m_p; logs_p] (max err {err})"
    ls = case["scales"][1]
    w_f32 = np.exp(case["logw"]).astype(np.float32) * np.float32(ls)
    assert np.array_equal(np.ceil(w_f32), case["durations"].astype(np.float32)), "ceil(exp(logw)·ls) != w_ceil"
    dur = case["durations"]
    expanded = np.repeat(m_p, dur, axis=1)
    assert np.array_equal(expanded, case["z_p"]), "z_p != m_p expanded by the durations (noise 0)"
    assert case["z"].shape == case["z_p"].shape and case["z"].shape[0] == c
    assert case["audio"].size == hop * int(dur.sum()), "audio length != hop · Σ durations"


def save_npy(path, arr):
    np.save(path, np.ascontiguousarray(arr))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnx", required=True, type=Path)
    ap.add_argument("--out", type=Path, default=REPO / "tests/data/generated/oracle")
    ap.add_argument("--sentences", type=Path, default=REPO / "tests/data/oracle_sentences.txt")
    ap.add_argument("--sid", type=int, action="append", help="speaker id (multi-speaker voices; repeat for several)")
    ap.add_argument("--limit", type=int, help="only the first LIMIT sentences")
    args = ap.parse_args()

    config = json.loads(Path(str(args.onnx) + ".json").read_text(encoding="utf-8"))
    sentences = read_sentences(args.sentences)[: args.limit]
    if len(sentences) < 1:
        sys.exit("no sentences")
    names = ["short", "medium", "long"] + [f"s{i}" for i in range(3, len(sentences))]

    model = tapped_model(args.onnx)
    weights = pytorch_weights(model)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    out_names = ["output"] + list(TAPS.values())

    # (case name, sentence index, scales = [noise_scale, length_scale, noise_w])
    cases = [(names[i], i, [0.0, 1.0, 0.0]) for i in range(len(sentences))]
    mid = min(1, len(sentences) - 1)
    cases.append((f"{names[mid]}_ls0.5", mid, [0.0, 0.5, 0.0]))
    cases.append((f"{names[0]}_ls2", 0, [0.0, 2.0, 0.0]))
    takes_sid = any(i.name == "sid" for i in model.graph.input)
    if takes_sid != bool(args.sid):
        sys.exit(f"{args.onnx} {'takes' if takes_sid else 'does not take'} a speaker id: {'give' if takes_sid else 'drop'} --sid")
    sids = args.sid or [None]
    cases = [(name if sid is None else f"{name}_sid{sid}", si, scales, sid) for sid in sids for name, si, scales in cases]

    args.out.mkdir(parents=True, exist_ok=True)
    hop = 256
    manifest = {"onnx": str(args.onnx.resolve()), "taps": TAPS, "hop_length": hop, "cases": []}
    for name, si, scales, sid in cases:
        phonemes, ids = phoneme_ids(sentences[si], config)
        feeds = {
            "input": ids[None, :],
            "input_lengths": np.array([ids.size], dtype=np.int64),
            "scales": np.array(scales, dtype=np.float32),
        }
        if sid is not None:
            feeds["sid"] = np.array([sid], dtype=np.int64)
        res = dict(zip(out_names, sess.run(out_names, feeds)))
        t = {v: k for k, v in TAPS.items()}
        case = {t[k]: v[0] for k, v in res.items() if k in t}  # drop batch
        case["logw"] = case["logw"][0]  # [1,T] → [T]
        case["durations"] = case.pop("w_ceil")[0].astype(np.int64)
        case["audio"] = res["output"].reshape(-1)
        case["ids"] = ids
        case["scales"] = scales
        verify(case, weights, hop)
        d = args.out / name
        d.mkdir(exist_ok=True)
        files = {}
        for key in ["ids", "x", "m_p", "logs_p", "logw", "durations", "z_p", "z", "audio"]:
            save_npy(d / f"{key}.npy", case[key])
            files[key] = {"file": f"{name}/{key}.npy", "shape": list(case[key].shape), "dtype": str(case[key].dtype)}
        manifest["cases"].append(
            {
                "name": name,
                "sentence": sentences[si],
                "phonemes": phonemes,
                "scales": scales,
                "sid": sid,
                "num_ids": int(ids.size),
                "num_frames": int(case["durations"].sum()),
                "tensors": files,
            }
        )
        print(f"{name}: {ids.size} ids, {int(case['durations'].sum())} frames, {case['audio'].size} samples")

    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
