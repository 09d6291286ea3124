// The persistent engine (issue 7): one cooperative launch per engine session runs every
// utterance with no further host launch. It runs the same stage bodies as the graph path
// (encoder.cu, duration.cu, flow.cu, decoder.cu), scheduled over the co-resident blocks with
// grid barriers instead of kernel boundaries. This file is compiled in one module with them
// (gpu/compile.rs::persistent_file, HARK_PERSISTENT_MODULE leaves their kernels out); the
// protocol's word indices and sizes come from gpu/persist/layout.rs as -D defines (PA_*, C_*,
// J_*, R_*, D_*, PK_*).
//
// Host <-> device traffic goes through pinned, device-mapped host memory:
//   ctl   control words; the host writes C_JOB .. C_SHUTDOWN, the device C_FRONT .. C_ERR;
//   jobs  two job slots (job seq & 1): ids, SDP noise, scales; the device writes durations
//         and the frame count back; the host writes the prior noise once it knows the frames;
//   ring  PK_NSLOT output slots: a header (job, walk generation, frames [start, end)) and PCM;
//   prof  the stage profile of the last job taken with C_PROFILE set (benchmarks only).
// Ordering (proof sketch in docs/KERNELS.md): the host publishes with a release store and the
// device reads with relaxed loads and an acquire fence (read_ctl); the device's PCM writers
// fence at system scope before a grid barrier, after which one thread publishes the slot with
// st.release.sys.
#include "common.cuh"

typedef unsigned long long u64;

#define OP_EXIT 1
#define OP_FRONT 2
#define OP_CHUNK 3
#define IDLE_NS_MAX 4096  // longest sleep between polls of the control words when idle
#define BARRIER_IDLE_NS 2048

__device__ __forceinline__ void st_release_sys(unsigned* p, unsigned v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_relaxed_sys(const unsigned* p) {
    unsigned v;
    asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ void st_relaxed_sys(unsigned* p, unsigned v) {
    asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// All host-written control words in one go: the loads are in flight together (one PCIe
// round trip, not one per word), and the fence makes them an acquire pattern: whatever the
// host wrote before the release stores whose values were read is visible to later loads.
__device__ __forceinline__ void read_ctl(const unsigned* ctl, unsigned* c) {
#pragma unroll
    for (int i = 0; i < C_HOST_WORDS; ++i) c[i] = ld_relaxed_sys(ctl + i);
    asm volatile("fence.acq_rel.sys;" ::: "memory");
}

__device__ __forceinline__ u64 global_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// The leader's stage profile of one job: on only in block 0's thread 0, and only for a job
// taken with C_PROFILE set. Each stamp follows a grid barrier, so a stage's time includes
// waiting for the slowest block.
struct Prof {
    unsigned* at;
    u64 t0;
    unsigned n;
    bool on;
};

__device__ __forceinline__ void stamp(Prof& p, unsigned stage) {
    if (!p.on || p.n >= PF_MAX) return;
    unsigned* e = p.at + PF_E + 2 * p.n;
    st_relaxed_sys(e, stage);
    st_relaxed_sys(e + 1, (unsigned)(global_ns() - p.t0));
    st_relaxed_sys(p.at + PF_N, ++p.n);
}

template <typename T>
__device__ __forceinline__ T* ptr(const u64* A, int i) {
    return (T*)A[i];
}
__device__ __forceinline__ int ival(const u64* A, int i) { return (int)A[i]; }

// What block 0's thread 0 knows about the current job (registers of that thread only).
struct Walk {
    unsigned job, last, gen, produced, beat;
    int slot, T, F, pos;
    float ns;
    bool fronted, walkable, profile;
    u64 taken_ns;  // when the job was taken (the profile's zero)
};

__device__ __forceinline__ unsigned* job_slot(const u64* A, int slot) {
    return ptr<unsigned>(A, PA_JOBS) + (size_t)slot * J_WORDS;
}

// Block 0, thread 0: waits until there is something to do and writes the decision to D.
// Every other thread of the grid waits in the dispatch barrier meanwhile.
__device__ void decide(const u64* A, Walk& w, unsigned* D) {
    unsigned* ctl = ptr<unsigned>(A, PA_CTL);
    unsigned ns = 32, polls = 0;
    unsigned c[C_HOST_WORDS];
    for (;;) {
        if ((polls++ & 255) == 0) st_relaxed_sys(ctl + C_BEAT, ++w.beat);
        read_ctl(ctl, c);
        if (c[C_SHUTDOWN]) {
            D[D_OP] = OP_EXIT;
            return;
        }
        if (w.job && w.job <= c[C_STOP]) {  // stop/flush: abandon the current job
            st_release_sys(ctl + C_DONE, w.job);
            w.job = 0;
        }
        const unsigned js = c[C_JOB];
        if (js > w.last && js <= c[C_STOP]) {  // posted and stopped before it was taken
            w.last = js;
            st_release_sys(ctl + C_DONE, js);
        } else if (js > w.last) {
            // A new job; every earlier one is finished with (its slot may be reused).
            st_release_sys(ctl + C_DONE, js - 1);
            const unsigned* job = job_slot(A, js & 1);
            w.job = w.last = js;
            w.slot = js & 1;
            w.T = (int)job[J_T];
            w.ns = __uint_as_float(job[J_NS]);
            w.gen = job[J_GEN];
            w.pos = 0;
            w.fronted = w.walkable = false;
            w.profile = c[C_PROFILE] != 0;
            w.taken_ns = global_ns();
            D[D_OP] = OP_FRONT;
            D[D_SLOT] = w.slot;
            D[D_T] = w.T;
            D[D_JOB] = js;
            return;
        }
        if (w.job && w.walkable && !c[C_PAUSE] && (w.ns == 0.f || c[C_NOISE] >= w.job)) {
            if (c[C_SEEK_GEN] != w.gen) {
                // Restart the walk where the host asks. The frame is read after the fence,
                // so it is the one written before this generation; WANT and the rest are
                // read again by the next pass.
                w.gen = c[C_SEEK_GEN];
                w.pos = min((int)ld_relaxed_sys(ctl + C_SEEK_FRAME), w.F);
                continue;
            }
            const int want = (int)c[C_WANT] + (int)c[C_AHEAD];
            if (w.pos < w.F && w.pos < want && w.produced - c[C_CONSUMED] < PK_NSLOT) {
                const int step = max(1, min((int)c[C_STEP], PK_STEP_MAX));
                const int end = min(w.pos + step, w.F);
                D[D_OP] = OP_CHUNK;
                D[D_SLOT] = w.slot;
                D[D_T] = w.T;
                D[D_F] = w.F;
                D[D_NS] = __float_as_uint(w.ns);
                D[D_START] = w.pos;
                D[D_END] = end;
                D[D_RING] = w.produced % PK_NSLOT;
                D[D_JOB] = w.job;
                D[D_GEN] = w.gen;
                w.pos = end;
                return;
            }
        }
        __nanosleep(ns);
        if (ns < IDLE_NS_MAX) ns *= 2;
    }
}

// Encoder and duration predictor for the job in `slot`; block 0 then publishes the
// durations and the frame count into the slot and raises C_FRONT.
__device__ void run_front(const Grid& g, const u64* A, int slot, int T, unsigned job_seq,
                          Prof& pf) {
    unsigned* job = job_slot(A, slot);
    float* x = ptr<float>(A, PA_X);
    float* z2 = ptr<float>(A, PA_Z2);
    // Inputs from the mapped slot into device memory once (the embedding reads each id H
    // times; the SDP updates its noise in place).
    const float* zsrc = (const float*)(job + J_ZSDP);
    const int* isrc = (const int*)(job + J_IDS);
    int* ids = ptr<int>(A, PA_IDS);
    for (int i = g.b * NT + threadIdx.x; i < 2 * T; i += g.nb * NT) {
        z2[i] = zsrc[i];
        if (i < T) ids[i] = isrc[i];
    }
    grid_sync(g);
    stamp(pf, PS_INPUTS);
    enc_embed_body(g, ids, ptr<float>(A, PA_EMB), x, T);
    grid_sync(g);
    stamp(pf, PS_EMBED);
    const int layers = ival(A, PA_NLAYERS);
    for (int l = 0; l < layers; ++l) {
        const u64* e = A + PA_ENC + l * PA_ENC_STRIDE;
        enc_attn_body(g, x, T, (const float*)e[0], (const float*)e[1], (const float*)e[2],
                      (const float*)e[3], (const float*)e[4], (const float*)e[5],
                      (const float*)e[6], (const float*)e[7], ptr<float>(A, PA_QKV));
        grid_sync(g);
        stamp(pf, PS_ATTN);
        const bool last = l == layers - 1;
        enc_ffn_body(g, x, T, (const float*)e[8], (const float*)e[9], (const float*)e[10],
                     (const float*)e[11], (const float*)e[12], (const float*)e[13],
                     ptr<float>(A, PA_HBUF), ptr<float>(A, PA_QKV),
                     last ? ptr<const float>(A, PA_PROJ_W) : nullptr,
                     last ? ptr<const float>(A, PA_PROJ_B) : nullptr, ptr<float>(A, PA_MP),
                     ptr<float>(A, PA_LOGSP));
        grid_sync(g);
        stamp(pf, PS_FFN);
    }
    const float ls = __uint_as_float(job[J_LS]);
    int* dur = ptr<int>(A, PA_DUR);
    int* off = ptr<int>(A, PA_OFF);
    sdp_body(g, x, T, ptr<const float* const>(A, PA_SDP_TABLE), z2, ptr<float>(A, PA_A),
             ptr<float>(A, PA_B), ptr<float>(A, PA_G), ptr<float>(A, PA_LOGW), dur, off, ls);
    // sdp_body's last phase (the prefix sum) ran in block 0 alone, after a grid barrier.
    if (g.b == 0) {
        __syncthreads();
        stamp(pf, PS_SDP);
        int* out = (int*)(job + J_DUR);
        for (int t = threadIdx.x; t < T; t += NT) out[t] = dur[t];
        if (threadIdx.x == 0) job[J_FRAMES] = (unsigned)off[T];
        __threadfence_system();
        __syncthreads();
        if (threadIdx.x == 0) {
            stamp(pf, PS_FRONT_OUT);
            st_release_sys(ptr<unsigned>(A, PA_CTL) + C_FRONT, job_seq);
        }
    }
}

// Flow + decoder over frames [lo, lo + n) of the job; the chunk's samples [a, a + count) of
// the window go to `out` (a ring slot in mapped host memory).
__device__ void run_window(const Grid& g, const u64* A, const Prior& pr, int n, int a, int count,
                           float* out, Prof& pf) {
    float* z = ptr<float>(A, PA_Z);
    flow_body(g, z, ptr<float>(A, PA_H0), ptr<float>(A, PA_H1), ptr<float>(A, PA_ACTS),
              ptr<float>(A, PA_SKIP), n, 1, ptr<const void* const>(A, PA_FLOW_TABLE), pr);
    grid_sync(g);
    stamp(pf, PS_FLOW);
    const int up0 = ival(A, PA_UP0), prek = ival(A, PA_PRE_K);
    float* pre = ptr<float>(A, PA_PRE);
    {
        const int nx = (n + PRE_TC - 1) / PRE_TC, ny = (up0 + PRE_RG - 1) / PRE_RG;
        // The graph path's blocks of dec_conv become items; each item refills shared memory.
        for (int it = g.b; it < nx * ny; it += g.nb) {
            __syncthreads();
            dec_conv_item(it % nx, it / nx, z, n, CI, ptr<const wt_t>(A, PA_PRE_W),
                          ptr<const float>(A, PA_PRE_B), prek, pre, up0);
        }
    }
    grid_sync(g);
    stamp(pf, PS_PRE);
    const float* src = pre;
    int mean = 0, len = n;
    const int stages = ival(A, PA_NSTAGES), sms = ival(A, PA_SMS);
    int cout = up0;
    for (int s = 0; s < stages; ++s) {
        const u64* st = A + PA_STAGE + s * PA_STAGE_STRIDE;
        const int cin = (int)st[6], rate = (int)st[8], k = (int)st[9], pad = (int)st[10];
        const int tn0 = (int)st[11], hmax = (int)st[12];
        cout = (int)st[7];
        const int lout = len * rate;
        float* up = (float*)st[4];
        float* rbs = (float*)st[5];
        {
            const int nx = (lout + UP_TO - 1) / UP_TO, ny = (cout + UP_RG - 1) / UP_RG;
            for (int it = g.b; it < nx * ny; it += g.nb) {
                __syncthreads();
                dec_up_item(it % nx, it / nx, src, mean, len, cin, (const wt_t*)st[0],
                            (const float*)st[1], rate, k, pad, up, cout);
            }
        }
        grid_sync(g);
        stamp(pf, PS_UP);
        // The graph path's tile choice (model.rs launch_decoder): narrower tiles until the
        // stage fills half the GPU.
        int tn = tn0;
        while (tn > 16 && ((lout + tn - 1) / tn) * RB_N < sms / 2) tn /= 2;
        {
            const int nx = (lout + tn - 1) / tn;
            for (int it = g.b; it < nx * RB_N; it += g.nb) {
                __syncthreads();
                dec_rb_item(it % nx, it / nx, up, lout, cout, (const wt_t* const*)st[2],
                            (const float* const*)st[3], tn, hmax, rbs);
            }
        }
        grid_sync(g);
        stamp(pf, PS_RB);
        src = rbs;
        mean = 1;
        len = lout;
    }
    {
        const int nx = (count + POST_TC - 1) / POST_TC;
        for (int it = g.b; it < nx; it += g.nb) {
            __syncthreads();
            dec_post_item(it, src, cout, len, ptr<const wt_t>(A, PA_POST_W),
                          ptr<const float>(A, PA_POST_B), ival(A, PA_POST_K), a, count, out);
        }
    }
}

// One chunk [start, end) of the current job into ring slot `ring`, then its publication.
__device__ void run_chunk(const Grid& g, const u64* A, const unsigned* d, Walk& w, Prof& pf) {
    const int slot = (int)d[D_SLOT], T = (int)d[D_T], F = (int)d[D_F];
    const int start = (int)d[D_START], end = (int)d[D_END], ring = (int)d[D_RING];
    const unsigned job_seq = d[D_JOB], gen = d[D_GEN];
    const float ns = __uint_as_float(d[D_NS]);
    const int ctx = ival(A, PA_CONTEXT);
    const int lo = max(start - ctx, 0), n = min(end + ctx, F) - lo;
    const unsigned* job = job_slot(A, slot);
    const Prior pr = {ptr<const float>(A, PA_MP), ptr<const float>(A, PA_LOGSP),
                      ptr<const int>(A, PA_OFF), (const float*)(job + J_EPS), T, F, lo, ns};
    unsigned* rs = ptr<unsigned>(A, PA_RING) + (size_t)ring * R_WORDS;
    run_window(g, A, pr, n, (start - lo) * HOP, (end - start) * HOP, (float*)(rs + R_PCM), pf);
    // Every PCM writer makes its stores visible system-wide before the barrier; after it,
    // one thread writes the header and publishes the slot (release, system scope).
    __threadfence_system();
    grid_sync(g);
    if (g.b == 0 && threadIdx.x == 0) {
        stamp(pf, PS_POST);
        st_relaxed_sys(rs + R_JOB, job_seq);
        st_relaxed_sys(rs + R_GEN, gen);
        st_relaxed_sys(rs + R_START, (unsigned)start);
        st_relaxed_sys(rs + R_END, (unsigned)end);
        st_release_sys(ptr<unsigned>(A, PA_CTL) + C_PRODUCED, ++w.produced);
    }
}

extern "C" __global__ void __launch_bounds__(NT, 1) persistent(const u64* A) {
    const Grid g = hw_grid(ptr<unsigned>(A, PA_BAR));
    unsigned* D = ptr<unsigned>(A, PA_DISPATCH);
    unsigned* ctl = ptr<unsigned>(A, PA_CTL);
    const bool leader = g.b == 0 && threadIdx.x == 0;
    Walk w = {};
    Prof pf = {ptr<unsigned>(A, PA_PROF), 0, 0, false};
    if (leader) st_release_sys(ctl + C_STATE, 1);
    for (;;) {
        if (leader) decide(A, w, D);
        grid_sync(g, BARRIER_IDLE_NS);
        // The decision, read by every thread before the next barrier (no one rewrites D
        // until every block has passed at least one more barrier).
        unsigned d[D_WORDS];
        for (int i = 0; i < D_WORDS; ++i) d[i] = ((volatile unsigned*)D)[i];
        if (d[D_OP] == OP_EXIT) break;
        if (d[D_OP] == OP_FRONT) {
            if (leader) {
                pf.on = w.profile;
                pf.t0 = w.taken_ns;
                pf.n = 0;
                stamp(pf, PS_DISPATCH);
            }
            run_front(g, A, (int)d[D_SLOT], (int)d[D_T], d[D_JOB], pf);
            if (leader) {
                w.F = ((volatile int*)ptr<int>(A, PA_OFF))[w.T];
                w.fronted = true;
                w.walkable = w.F > 0 && w.F <= PK_FMAX;
                if (!w.walkable && w.F > 0) st_release_sys(ctl + C_ERR, w.job);
            }
        } else if (d[D_OP] == OP_CHUNK) {
            stamp(pf, PS_CHUNK_WAIT);
            run_chunk(g, A, d, w, pf);
        }
    }
    if (leader) st_release_sys(ctl + C_STATE, 2);
}

// Benchmark only: `n` grid barriers in a row on the persistent kernel's grid (the barrier
// cost that the persistent engine pays between its stages).
extern "C" __global__ void __launch_bounds__(NT, 1) barrier_probe(unsigned* bar, int n) {
    const Grid g = hw_grid(bar);
    for (int i = 0; i < n; ++i) grid_sync(g);
}
