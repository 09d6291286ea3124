#!/usr/bin/env python3
"""Makes a multi-speaker Piper VITS voice for the tests: `DIR/hark-multi.onnx` + `.onnx.json`.

Route: graph surgery on a real single-speaker Piper export (the default voice, en_US-joe-medium),
with the `onnx` package only (no torch). The single-speaker graph is what Piper's exporter wrote
for `SynthesizerTrn` with `n_speakers = 1`; a multi-speaker export differs from it in exactly the
places VITS conditions on the speaker, and those are added here with the op structure and the
initializer naming the PyTorch exporter uses:

- a fourth graph input `sid` (int64 [1]). With a real `sid` input the exporter no longer hands
  that name to the first parameter, so the text embedding is stored as `enc_p.emb.weight` (a
  single-speaker export stores it as `sid`, the importer's naming trap);
- `g = emb_g(sid).unsqueeze(-1)`: `emb_g.weight` [speakers, gin] read by `/emb_g/Gather`, then an
  Unsqueeze to [1, gin, 1];
- the stochastic duration predictor adds `cond(g)` (`/dp/cond/Conv`, `dp.cond.{weight,bias}`,
  gin → filter channels, k 1) to the output of `dp.pre`, before the DDSConv;
- each flow coupling's WaveNet computes `cond_layer(g)` (`/flow/flows.N/enc/cond_layer/Conv`,
  gin → 2·hidden·layers, k 1; weight norm folded by the exporter, so its weight is stored
  anonymously as `onnx::Conv_*` like the in_layers', its bias by name) and adds layer i's slice
  `[2·hidden·i, 2·hidden·(i+1))` inside the tanh/sigmoid gate: where the single-speaker graph adds
  `zeros_like(x_in)` (a Shape → ConstantOfShape), the slice is added instead;
- the HiFi-GAN generator adds `cond(g)` (`/dec/cond/Conv`, `dec.cond.{weight,bias}`, gin →
  upsample_initial_channel, k 1) to the output of `conv_pre`.

The text encoder takes no `g`, as in VITS. The weights of the base voice are kept (so the test
voice still speaks), and every speaker weight (emb_g and the three conds) is random from
`--seed`, scaled so that each speaker's conditioning moves the model audibly without breaking
it. Nothing is shrunk: the voice is as large as its base (~64 MB). The config is the base's with
`num_speakers` and a `speaker_id_map` of a few names.

onnxruntime runs the result with the inputs input, input_lengths, scales and sid.

Usage: scripts/make_multispeaker_voice.py --onnx BASE.onnx --out DIR [--speakers 3] [--gin 512]
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NAME = "hark-multi"
SPEAKERS = ["ada", "brian", "chloe", "dmitri", "eve", "farid", "gwen", "hugo"]


def fresh(used, base):
    """`base`, or `base_N` with the smallest N not yet used (the exporter's numbering)."""
    if base not in used:
        used.add(base)
        return base
    n = 1
    while f"{base}_{n}" in used:
        n += 1
    used.add(f"{base}_{n}")
    return f"{base}_{n}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnx", required=True, type=Path, help="a single-speaker Piper voice")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--speakers", type=int, default=3)
    ap.add_argument("--gin", type=int, default=512, help="gin_channels (Piper's is 512)")
    ap.add_argument("--seed", type=int, default=15)
    args = ap.parse_args()
    if not 2 <= args.speakers <= len(SPEAKERS):
        sys.exit(f"--speakers must be 2..{len(SPEAKERS)}")

    model = onnx.load(str(args.onnx))
    g = model.graph
    if any(i.name == "sid" for i in g.input):
        sys.exit(f"{args.onnx} already takes a sid input")
    inits = {t.name: t for t in g.initializer}
    nodes = {n.name: n for n in g.node}
    used_nodes = set(nodes)
    used_names = set(inits) | {o for n in g.node for o in n.output} | {i.name for i in g.input}
    rng = np.random.default_rng(args.seed)
    gin, n_spk = args.gin, args.speakers

    def shape(name):
        return list(numpy_helper.to_array(inits[name]).shape)

    def add_init(name, arr):
        assert name not in used_names, name
        used_names.add(name)
        g.initializer.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def anon_conv_name():
        """A fresh `onnx::Conv_N` name, as the exporter gives weight-normed conv weights."""
        return f"onnx::Conv_{max(int(k.split('_')[-1]) for k in used_names if k.startswith('onnx::Conv_')) + 1}"

    def conv_weights(cout, scale):
        """Weights [cout, gin, 1] and bias [cout] such that cond(g) has a std of ≈ `scale`."""
        w = rng.standard_normal((cout, gin, 1)).astype(np.float32) * np.float32(scale / np.sqrt(gin))
        b = rng.standard_normal(cout).astype(np.float32) * np.float32(scale * 0.2)
        return w, b

    def rewire(old, new, skip):
        """Every consumer of `old` except the node `skip` reads `new` instead."""
        for n in g.node:
            if n is skip:
                continue
            for k, i in enumerate(n.input):
                if i == old:
                    n.input[k] = new

    new_nodes = []
    # A 1×1 conv's attributes as the exporter writes them (dilations, group, kernel_shape, pads,
    # strides), read off `dp.pre`, itself a 1×1 conv.
    conv1x1 = {a.name: helper.get_attribute_value(a) for a in nodes["/dp/pre/Conv"].attribute}
    assert conv1x1.get("kernel_shape") == [1], conv1x1

    def node(op, scope, inputs, **attrs):
        name = fresh(used_nodes, f"{scope}/{op}")
        out = f"{name}_output_0"
        used_names.add(out)
        n = helper.make_node(op, inputs, [out], name=name, **attrs)
        new_nodes.append(n)
        return n

    # The text embedding: `sid` → `enc_p.emb.weight` (the input takes the name).
    emb = inits["sid"]
    emb.name = "enc_p.emb.weight"
    used_names.add(emb.name)
    for n in g.node:
        n.input[:] = ["enc_p.emb.weight" if i == "sid" else i for i in n.input]
    g.input.append(helper.make_tensor_value_info("sid", TensorProto.INT64, [1]))

    # g = emb_g(sid).unsqueeze(-1): [1, gin, 1].
    add_init("emb_g.weight", rng.standard_normal((n_spk, gin)).astype(np.float32))
    gather = node("Gather", "/emb_g", ["emb_g.weight", "sid"])
    axes = add_init("/Constant_sid_axes_output_0", np.array([-1], np.int64))
    g_vec = node("Unsqueeze", "", [gather.output[0], axes]).output[0]

    def cond_after(module, conv, cout, scale):
        """`module`'s `cond(g)` (a 1×1 conv gin → cout) added to the output of node `conv`."""
        w, b = conv_weights(cout, scale)
        weights = [add_init(f"{module}.cond.weight", w), add_init(f"{module}.cond.bias", b)]
        cond = node("Conv", f"/{module}/cond", [g_vec] + weights, **conv1x1)
        out = nodes[conv].output[0]
        add = node("Add", f"/{module}", [out, cond.output[0]])
        rewire(out, add.output[0], add)

    # Duration predictor: pre(x) + cond(g).
    cond_after("dp", "/dp/pre/Conv", shape("dp.pre.weight")[0], 0.15)

    # Flow: each coupling's WaveNet gate gets its layer's slice of cond_layer(g).
    couplings = sorted(
        int(k.split("/")[2].split(".")[1]) for k in nodes if k.startswith("/flow/flows.") and k.endswith("/pre/Conv")
    )
    hidden = shape("flow.flows.0.enc.in_layers.0.bias")[0] // 2
    for c in couplings:
        scope = f"/flow/flows.{c}/enc"
        layers = sum(1 for k in nodes if k.startswith(f"{scope}/in_layers.") and k.endswith("/Conv"))
        w, b = conv_weights(2 * hidden * layers, 0.3)
        wname = add_init(anon_conv_name(), w)
        bname = add_init(f"flow.flows.{c}.enc.cond_layer.bias", b)
        cl = node("Conv", f"{scope}/cond_layer", [g_vec, wname, bname], **conv1x1)
        one = add_init(f"{scope}/Constant_cond_axis_output_0", np.array([1], np.int64))
        for i in range(layers):
            conv = nodes[f"{scope}/in_layers.{i}/Conv"]
            gate = [n for n in g.node if n.op_type == "Add" and conv.output[0] in n.input]
            if len(gate) != 1:
                sys.exit(f"{conv.name}: expected one gate Add, found {len(gate)}")
            zeros = [x for x in gate[0].input if x != conv.output[0]][0]
            zeros_node = [n for n in g.node if zeros in n.output]
            if not zeros_node or zeros_node[0].op_type != "ConstantOfShape":
                sys.exit(f"{conv.name}: the gate does not add zeros_like(x_in)")
            lo = add_init(f"{scope}/Constant_cond_lo_{i}_output_0", np.array([2 * hidden * i], np.int64))
            hi = add_init(f"{scope}/Constant_cond_hi_{i}_output_0", np.array([2 * hidden * (i + 1)], np.int64))
            sl = node("Slice", scope, [cl.output[0], lo, hi, one])
            gate[0].input[:] = [sl.output[0] if x == zeros else x for x in gate[0].input]
            # zeros_like(x_in) is gone from a conditioned WaveNet: drop its Shape → ConstantOfShape.
            shape_in = zeros_node[0].input[0]
            g.node.remove(zeros_node[0])
            g.node.remove([n for n in g.node if shape_in in n.output][0])

    # Decoder: conv_pre(z) + cond(g).
    cond_after("dec", "/dec/conv_pre/Conv", shape("dec.conv_pre.weight")[0], 0.3)

    # ONNX wants the nodes in topological order: the new ones, and the consumers rewired to
    # them, move after their inputs (a stable sort: the rest keeps the exporter's order).
    g.node.extend(new_nodes)
    order, produced = [], {i.name for i in g.input} | {t.name for t in g.initializer} | {""}
    pending = list(g.node)
    while pending:
        rest = []
        for n in pending:
            (order if all(i in produced for i in n.input) else rest).append(n)
            if all(i in produced for i in n.input):
                produced.update(n.output)
        if len(rest) == len(pending):
            sys.exit("the graph has a cycle or a missing input")
        pending = rest
    del g.node[:]
    g.node.extend(order)
    onnx.checker.check_model(model)

    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"{NAME}.onnx"
    onnx.save(model, str(out))
    config = json.loads(Path(str(args.onnx) + ".json").read_text(encoding="utf-8"))
    config["num_speakers"] = n_spk
    # Not in id order on purpose: the importer must order the names by id.
    ids = list(range(n_spk))
    ids = ids[1:] + ids[:1]
    config["speaker_id_map"] = {SPEAKERS[i]: i for i in ids}
    config.setdefault("dataset", NAME)
    Path(str(out) + ".json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(out.resolve())


if __name__ == "__main__":
    main()
