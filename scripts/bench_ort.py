#!/usr/bin/env python3
"""The anchor for `hark bench`: Piper's ONNX through onnxruntime on the CPU, timed the way Hark
is timed (phonemise + ids + synthesis), with the same thread count. Prints one JSON object, or
with --serve times one run per request on stdin (`hark bench --backend cpu` interleaves them
with its own).
Without piper-phonemize (the GPU device machine's Python) the phoneme ids Hark computed for
the same texts are read from --ids; the timings then leave phonemisation out."""
import argparse
import json
import statistics
import time

import numpy as np
import onnxruntime as ort

try:
    from piper_phonemize import phonemize_espeak
except ImportError:
    phonemize_espeak = None


def ids_for(text, cfg, given=None):
    if phonemize_espeak is None:
        return given[text]
    id_map = cfg["phoneme_id_map"]
    out = []
    for sentence in phonemize_espeak(text, cfg["espeak"]["voice"]):
        ids = list(id_map["^"]) + list(id_map["_"])
        for p in sentence:
            if p in id_map:
                ids += list(id_map[p]) + list(id_map["_"])
        ids += list(id_map["$"])
        out.append(ids)
    return out


def synth(sess, cfg, text, scales, given=None):
    audio = []
    for ids in ids_for(text, cfg, given):
        x = np.array([ids], dtype=np.int64)
        lengths = np.array([len(ids)], dtype=np.int64)
        y = sess.run(None, {"input": x, "input_lengths": lengths, "scales": np.array(scales, dtype=np.float32)})[0]
        audio.append(y.reshape(-1))
    return np.concatenate(audio)


def timed(fn, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000.0)
    return times


def visible_isa():
    """The widest vector extension this process's CPUID shows (numpy reads it as
    onnxruntime's kernels do): "avx512", "avx2" or "sse"; what `hark bench --isa` capped it to."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as f
    except ImportError:
        return None
    if f.get("AVX512F"):
        return "avx512"
    if f.get("AVX2") and f.get("FMA3"):
        return "avx2"
    return "sse"


def serve(sessions, cfg, texts, scales, given):
    """Interleaved mode: one line `full|clause THREADS` in, one JSON `{"ms": …}` out, so that
    the caller can alternate Hark and onnxruntime run by run under the same load."""
    import sys
    for line in sys.stdin:
        which, threads = line.split()
        t0 = time.perf_counter()
        synth(sessions[int(threads)], cfg, texts[which], scales, given)
        ms = (time.perf_counter() - t0) * 1000.0
        print(json.dumps({"ms": ms}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument("--serve", action="store_true", help="time one run per request on stdin")
    ap.add_argument("--text", required=True)
    ap.add_argument("--clause", required=True)
    ap.add_argument("--full-runs", type=int, default=5)
    ap.add_argument("--clause-runs", type=int, default=20)
    ap.add_argument("--noise", type=float, nargs=3, default=None, help="scales; default: the voice's")
    ap.add_argument("--ids", help="JSON {text: [ids per sentence]}, used without piper-phonemize")
    args = ap.parse_args()
    given = json.load(open(args.ids)) if args.ids else None
    if phonemize_espeak is None and given is None:
        raise SystemExit("piper-phonemize is missing and no --ids were given")
    cfg = json.load(open(args.onnx + ".json"))
    inf = cfg["inference"]
    scales = args.noise or [inf["noise_scale"], inf["length_scale"], inf["noise_w"]]
    sessions = {}
    for threads in args.threads:
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        sess = ort.InferenceSession(args.onnx, sess_options=so, providers=["CPUExecutionProvider"])
        for _ in range(2):
            synth(sess, cfg, args.clause, scales, given)
        sessions[threads] = sess
    sess = sessions[args.threads[0]]
    full_audio = synth(sess, cfg, args.text, scales, given)
    ids_from = "piper-phonemize" if phonemize_espeak else "Hark's ids, phonemisation not timed"
    if args.serve:
        print(json.dumps({
            "engine": f"onnxruntime {ort.__version__} ({ids_from})",
            "full_audio_s": len(full_audio) / cfg["audio"]["sample_rate"],
            "isa": visible_isa(),
        }), flush=True)
        serve(sessions, cfg, {"full": args.text, "clause": args.clause}, scales, given)
        return
    full = timed(lambda: synth(sess, cfg, args.text, scales, given), args.full_runs)
    clause = timed(lambda: synth(sess, cfg, args.clause, scales, given), args.clause_runs)
    print(json.dumps({
        "engine": f"onnxruntime {ort.__version__} ({ids_from})",
        "threads": args.threads[0],
        "full_ms": full,
        "clause_ms": clause,
        "full_audio_s": len(full_audio) / cfg["audio"]["sample_rate"],
    }))


if __name__ == "__main__":
    main()
