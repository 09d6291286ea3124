#!/usr/bin/env python3
"""Where the graph path's text encoder spends its time, per phase, on the device machine.

Compiles kernels/encoder.cu with NVRTC exactly as the app does (same defines for
en_US-joe-medium's encoder, same options) plus HARK_ENC_PROF, which adds %globaltimer stamps
at every phase end and grid barrier (encoder.cu, "Phase stamps"). Random weights; the launch
sequence and grid sizes are stages/encoder.rs's (6 x enc_attn + enc_ffn, cooperative, at most
`occupancy x SMs` blocks). For each T it prints the encoder's time (CUDA events, L2 warm and
after a 256 MB write that evicts L2) and the median time of each phase, each barrier and each
gap between launches, summed over the 6 layers. A kernel of bare grid barriers gives the
floor of launches plus barriers.

Needs torch (allocation, events) and libnvrtc/libcuda.   usage: enc_phases.py [T ...]
ENC_SRC=dir: take encoder.cu and common.cuh from there (default: ../../kernels).
"""
import ctypes, ctypes.util, glob, os, statistics, sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("ENC_SRC", os.path.join(HERE, "..", "..", "kernels"))
H, NHEADS, WIN, FFN_F, FFN_K, CI, LAYERS = 192, 2, 4, 768, 3, 192, 6
NT = 256
ATTN_SMEM = 96 * 1024
FFN_SMEM = max(H // 3 * (16 + FFN_K - 1), FFN_F // 3 * (16 + FFN_K - 1), H * 8) * 4
SLOTS, ROWS = 16, 64


def lib(names):
    for n in names:
        for p in [n] + glob.glob(f"/usr/local/cuda*/lib64/{n}*") + glob.glob(f"/usr/lib/x86_64-linux-gnu/{n}*"):
            try:
                return ctypes.CDLL(p)
            except OSError:
                pass
    raise SystemExit(f"cannot load {names}")


cu = lib(["libcuda.so.1", "libcuda.so"])
nvrtc = lib(["libnvrtc.so"])


def ck(r, what):
    if r != 0:
        raise SystemExit(f"{what} failed: {r}")


def compile_module(extra_defs, extra_src="", src_dir=SRC):
    common = open(os.path.join(src_dir, "common.cuh")).read()
    enc = open(os.path.join(src_dir, "encoder.cu")).read()
    defs = dict(H=H, NHEADS=NHEADS, KCH=H // NHEADS, WIN=WIN, FFN_F=FFN_F, FFN_K=FFN_K, CI=CI)
    defs.update(extra_defs)
    src = "".join(f"#define {k} {v}\n" for k, v in defs.items())
    src += enc.replace('#include "common.cuh"', common) + extra_src
    prog = ctypes.c_void_p()
    ck(nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"encoder.cu", 0, None, None), "nvrtcCreateProgram")
    cc = torch.cuda.get_device_capability()
    opts = [f"--gpu-architecture=sm_{cc[0]}{cc[1]}".encode(), b"-std=c++17", b"-lineinfo"]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    r = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    nvrtc.nvrtcGetProgramLog(prog, log)
    if r != 0:
        raise SystemExit("compile failed:\n" + log.value.decode())
    nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    cubin = ctypes.create_string_buffer(n.value)
    ck(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
    mod = ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), cubin), "cuModuleLoadData")
    return mod


class Kernel:
    def __init__(self, mod, name, smem):
        self.f = ctypes.c_void_p()
        ck(cu.cuModuleGetFunction(ctypes.byref(self.f), mod, name.encode()), f"get {name}")
        self.smem = smem
        ck(cu.cuFuncSetAttribute(self.f, 8, smem), "max dynamic smem")  # MAX_DYNAMIC_SHARED_SIZE_BYTES
        per_sm = ctypes.c_int()
        ck(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(per_sm), self.f, NT, ctypes.c_size_t(smem)), "occupancy")
        self.maxco = per_sm.value * torch.cuda.get_device_properties(0).multi_processor_count
        self.per_sm = per_sm.value

    def coop(self, want, args, cap=None):
        grid = max(1, min(want, self.maxco, cap or 1 << 30))
        holders = []
        for a in args:
            holders.append(ctypes.c_uint64(a) if isinstance(a, P) else ctypes.c_int32(a))
        params = (ctypes.c_void_p * len(holders))(*[ctypes.cast(ctypes.byref(h), ctypes.c_void_p) for h in holders])
        s = torch.cuda.current_stream().cuda_stream
        ck(cu.cuLaunchCooperativeKernel(self.f, grid, 1, 1, NT, 1, 1, self.smem, ctypes.c_void_p(s), params), "launch")
        return grid


class P(int):
    pass


def ptr(t):
    return P(t.data_ptr())


def glob_ptr(mod, name):
    d, n = ctypes.c_uint64(), ctypes.c_size_t()
    ck(cu.cuModuleGetGlobal_v2(ctypes.byref(d), ctypes.byref(n), mod, name.encode()), f"global {name}")
    return d.value, n.value


def main():
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    dev = torch.cuda.get_device_properties(0)
    print(f"device: {dev.name}, {dev.multi_processor_count} SMs, L2 {dev.L2_cache_size >> 20} MB")
    bar_src = """
extern "C" __global__ void __launch_bounds__(NT) bar_only(unsigned* bar, int n) {
    Grid g = hw_grid(bar);
    PROF_BEGIN
    for (int i = 0; i < n; ++i) { PROF_SYNC(g, i) }
    PROF_END
}
"""
    mod = attn = ffn = baro = prof_p = prof_n = seq_p = None

    def load(src_dir, attn_smem):
        nonlocal mod, attn, ffn, baro, prof_p, prof_n, seq_p
        mod = compile_module({"HARK_ENC_PROF": 1}, bar_src, src_dir)
        attn = Kernel(mod, "enc_attn", attn_smem)
        ffn = Kernel(mod, "enc_ffn", FFN_SMEM)
        baro = Kernel(mod, "bar_only", 0)
        print(f"\n=== source {src_dir}, enc_attn dynamic smem {attn_smem} B: occupancy enc_attn {attn.per_sm}/SM "
              f"(max {attn.maxco}), enc_ffn {ffn.per_sm}/SM (max {ffn.maxco})")
        prof_p, prof_n = glob_ptr(mod, "enc_prof")
        seq_p, _ = glob_ptr(mod, "enc_prof_seq")

    load(SRC, ATTN_SMEM)
    g = torch.Generator(device="cuda").manual_seed(1)
    rnd = lambda *s, sc=0.05: (torch.randn(*s, device="cuda", generator=g) * sc).contiguous()
    layers = []
    for _ in range(LAYERS):
        layers.append(dict(
            wqkv=rnd(3 * H, H), bqkv=rnd(3 * H), ek=rnd(2 * WIN + 1, H // NHEADS), ev=rnd(2 * WIN + 1, H // NHEADS),
            wo=rnd(H, H), bo=rnd(H), g1=1 + rnd(H), b1n=rnd(H),
            w1=rnd(FFN_F, H, FFN_K), b1=rnd(FFN_F), w2=rnd(H, FFN_F, FFN_K), b2=rnd(H), g2=1 + rnd(H), b2n=rnd(H)))
    proj_w, proj_b = rnd(2 * CI, H), rnd(2 * CI)
    wbytes = sum(v.numel() for l in layers for v in l.values()) * 4
    print(f"encoder weights: {wbytes / 1e6:.1f} MB (f32)")
    bar = torch.zeros(2, dtype=torch.int32, device="cuda")
    flush = torch.empty(64 << 20, dtype=torch.float32, device="cuda")
    prof = torch.zeros(prof_n // 8, dtype=torch.int64, device="cuda")

    def reset_prof():
        init = torch.zeros(ROWS, SLOTS, dtype=torch.int64)
        init[:, 0] = -1  # ~0 as unsigned: slot 0 is a min
        ck(cu.cuMemcpyHtoD_v2(ctypes.c_uint64(prof_p), ctypes.c_void_p(init.data_ptr()), ctypes.c_size_t(prof_n)), "prof init")
        z = ctypes.c_uint32(0)
        ck(cu.cuMemcpyHtoD_v2(ctypes.c_uint64(seq_p), ctypes.byref(z), ctypes.c_size_t(4)), "seq init")

    def read_prof():
        out = torch.zeros(ROWS * SLOTS, dtype=torch.int64)
        ck(cu.cuMemcpyDtoH_v2(ctypes.c_void_p(out.data_ptr()), ctypes.c_uint64(prof_p), ctypes.c_size_t(prof_n)), "prof read")
        return out.view(ROWS, SLOTS).tolist()

    def encoder(T, x, qkv, hbuf, m_p, logs_p, cap_a=None, cap_f=None):
        cdiv = lambda a, b: (a + b - 1) // b
        attn_items = max(cdiv(T, 16) * (3 * H // 64), NHEADS * cdiv(T, 8), cdiv(T, 16) * (H // 64))
        ffn_items = max(cdiv(T, 16) * (FFN_F // 64) * 3, cdiv(T, 16) * (H // 64) * 3, cdiv(T, 8))
        grids = []
        for i, l in enumerate(layers):
            grids.append(attn.coop(attn_items, [ptr(x), T, ptr(l["wqkv"]), ptr(l["bqkv"]), ptr(l["ek"]), ptr(l["ev"]),
                                                ptr(l["wo"]), ptr(l["bo"]), ptr(l["g1"]), ptr(l["b1n"]), ptr(qkv), ptr(bar)], cap_a))
            last = i + 1 == LAYERS
            grids.append(ffn.coop(ffn_items, [ptr(x), T, ptr(l["w1"]), ptr(l["b1"]), ptr(l["w2"]), ptr(l["b2"]),
                                              ptr(l["g2"]), ptr(l["b2n"]), ptr(hbuf), ptr(qkv), ptr(bar),
                                              P(proj_w.data_ptr() if last else 0), P(proj_b.data_ptr() if last else 0),
                                              ptr(m_p), ptr(logs_p)], cap_f))
        return grids

    def med(v):
        return statistics.median(v)

    def run_case(T, runs=25, cold=False, caps=(None, None), label=""):
        x0 = rnd(H, T, sc=1.0)
        x = x0.clone()
        qkv = torch.zeros(24 * H * T, device="cuda")  # room for up to 24 k slices of a variant
        hbuf = torch.zeros(6 * FFN_F * T, device="cuda")
        m_p = torch.zeros(CI * T, device="cuda")
        logs_p = torch.zeros(CI * T, device="cuda")
        totals, phases = [], []
        for r in range(runs + 2):
            x.copy_(x0)
            if cold:
                flush.fill_(float(r))
            reset_prof()
            torch.cuda.synchronize()
            torch.cuda._sleep(2_000_000)  # the host queues every launch before the GPU starts them
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            grids = encoder(T, x, qkv, hbuf, m_p, logs_p, *caps)
            e1.record()
            torch.cuda.synchronize()
            if r < 2:
                continue
            totals.append(e0.elapsed_time(e1))
            phases.append(read_prof())
        assert torch.isfinite(m_p).all() and torch.isfinite(x).all(), "non-finite encoder output"
        # Per launch k (attn: 3 barriers, ffn: 2): phase p's work = arrival p - (release p-1 or
        # start), barrier p = release p - arrival p, tail = end - last release; gap = start
        # of launch k - end of launch k-1.
        names_a = ["attn.qkv", "attn.attention", "attn.out_proj", "attn.layernorm"]
        names_f = ["ffn.conv1", "ffn.conv2", "ffn.layernorm(+proj)"]
        acc = {}
        for rows in phases:
            per = {}
            prev_end = None
            for k in range(2 * LAYERS):
                row = rows[k]
                nb = 3 if k % 2 == 0 else 2
                names = names_a if k % 2 == 0 else names_f
                t = row[0]
                if prev_end is not None:
                    per["launch gap"] = per.get("launch gap", 0) + (row[0] - prev_end)
                for p in range(nb):
                    arr, rel = row[2 * p + 1], row[2 * p + 2]
                    per[names[p]] = per.get(names[p], 0) + (arr - t)
                    per["grid barriers"] = per.get("grid barriers", 0) + (rel - arr)
                    t = rel
                per[names[nb]] = per.get(names[nb], 0) + (row[SLOTS - 1] - t)
                prev_end = row[SLOTS - 1]
            per["first start -> last end"] = rows[2 * LAYERS - 1][SLOTS - 1] - rows[0][0]
            for k, v in per.items():
                acc.setdefault(k, []).append(v / 1e3)
        tag = f"T={T}{' L2 cold' if cold else ''}{label}"
        print(f"\n{tag}: grids attn {grids[0]}, ffn {grids[1]} blocks; encoder (events) median {med(totals) * 1e3:.1f} us, "
              f"min {min(totals) * 1e3:.1f}, max {max(totals) * 1e3:.1f} ({runs} runs)")
        for k, v in acc.items():
            print(f"  {k:26s} {med(v):8.1f} us  (6 layers; {med(v) / LAYERS:6.1f} per layer)")
        return med(totals)

    def barrier_floor(nblocks_a, nblocks_f, runs=20):
        ts = []
        for r in range(runs + 2):
            reset_prof()
            torch.cuda.synchronize()
            torch.cuda._sleep(2_000_000)
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(LAYERS):
                baro.coop(nblocks_a, [ptr(bar), 3])
                baro.coop(nblocks_f, [ptr(bar), 2])
            e1.record()
            torch.cuda.synchronize()
            if r >= 2:
                rows = read_prof()
                span = rows[2 * LAYERS - 1][SLOTS - 1] - rows[0][0]
                bars = sum(rows[k][2 * p + 2] - rows[k][2 * p + 1] for k in range(2 * LAYERS) for p in range(3 if k % 2 == 0 else 2))
                gaps = sum(rows[k][0] - rows[k - 1][SLOTS - 1] for k in range(1, 2 * LAYERS))
                ts.append((e0.elapsed_time(e1) * 1e3, span / 1e3, bars / 1e3, gaps / 1e3))
        m = [med([t[i] for t in ts]) for i in range(4)]
        print(f"\nbare barriers, 12 coop launches ({nblocks_a}/{nblocks_f} blocks, 30 barriers): events {m[0]:.1f} us, "
              f"first start -> last end {m[1]:.1f}, barriers {m[2]:.1f} ({m[2] / 30:.2f} each), launch gaps {m[3]:.1f} ({m[3] / 11:.2f} each)")

    Ts = [int(a) for a in sys.argv[1:]] or [9, 111, 259]
    if os.environ.get("ENC_CHECK"):  # one encoder per T, e.g. under compute-sanitizer
        for T in Ts:
            run_case(T, runs=1)
        return
    for T in Ts:
        run_case(T)
        run_case(T, cold=True)
    barrier_floor(attn.maxco, ffn.maxco)
    barrier_floor(132, 132)
    barrier_floor(16, 16)
    # Grid caps: fewer blocks than the items ask for.
    for cap in (66, 132):
        run_case(Ts[-1], caps=(cap, cap), label=f", grids capped at {cap}")
    # Variants: ENC_VARIANTS="dir[:attn_smem] ..." (same kernel signatures), warm L2.
    for v in os.environ.get("ENC_VARIANTS", "").split():
        d, _, sm = v.partition(":")
        load(d, int(sm) if sm else ATTN_SMEM)
        for T in Ts:
            run_case(T, label=f" [{v}]")

if __name__ == "__main__":
    main()
