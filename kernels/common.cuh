// Shared helpers for Hark's kernels. Self-contained: NVRTC gets no CUDA headers, so f16
// conversion is inline PTX. The voice's dimensions arrive as -D defines (see gpu/compile.rs).
#pragma once

#define NT 256           // threads per block, every kernel
#define NWARP (NT / 32)
#define INFINITY __int_as_float(0x7f800000)

typedef unsigned short half_t;
#ifdef HARK_F16
typedef half_t wt_t;     // flow and decoder weights
#else
typedef float wt_t;
#endif

__device__ __forceinline__ float ldw(const float* p) { return __ldg(p); }
__device__ __forceinline__ float ldw(const half_t* p) {
    half_t h = __ldg(p);
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ float lrelu(float v, float s) { return v < 0.f ? v * s : v; }
__device__ __forceinline__ float sigmoidf_(float v) { return 1.f / (1.f + expf(-v)); }
__device__ __forceinline__ float gelu_(float v) { return 0.5f * v * (1.f + erff(v * 0.70710678118654752f)); }

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// Block-wide sum/max; `red` is NWARP floats of shared memory. All threads get the result.
__device__ __forceinline__ float block_sum(float v, float* red) {
    v = warp_sum(v);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = 0.f;
    for (int w = 0; w < NWARP; ++w) s += red[w];
    return s;
}
__device__ __forceinline__ float block_max(float v, float* red) {
    v = warp_max(v);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = red[0];
    for (int w = 1; w < NWARP; ++w) s = fmaxf(s, red[w]);
    return s;
}

// A grid as a stage body sees it: its block, the number of blocks, and the grid barrier.
// The graph path's kernels pass the hardware grid of their cooperative launch; the
// persistent kernel (persistent.cu) passes its own, so both run the same stage code.
struct Grid {
    int b, nb;
    unsigned* bar;
};
__device__ __forceinline__ Grid hw_grid(unsigned* bar) {
    return Grid{(int)blockIdx.x, (int)(gridDim.x * gridDim.y * gridDim.z), bar};
}

// Stage bodies are compiled once and called by both schedulers.
#define STAGE __device__ __noinline__

// Grid-wide barrier for co-resident blocks: bar[0] counts arrivals, bar[1] is the
// generation. bar[0] is back at 0 after every barrier, so the state needs no reset.
// `spin_max` bounds the back-off between polls (ns): short between stages, longer where
// the grid idles (the persistent kernel's dispatch).
__device__ __forceinline__ void grid_sync(const Grid& g, unsigned spin_max = 20) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned* gen = g.bar + 1;
        unsigned gv = *gen;
        __threadfence();
        if (atomicAdd(g.bar, 1u) == (unsigned)g.nb - 1) {
            atomicExch(g.bar, 0u);
            __threadfence();
            atomicAdd(g.bar + 1, 1u);
        } else {
            unsigned ns = 20;
            while (*gen == gv) {
                __nanosleep(ns);
                if (ns < spin_max) ns *= 2;
            }
        }
        __threadfence();
    }
    __syncthreads();
}

// Dynamic shared memory and the conv core's weight staging, declared at file scope so that
// stage bodies compiled once (STAGE) still address them as shared memory.
extern __shared__ float dsm[];

// LayerNorm over `C` channels of columns held in shared memory as ys[c * ld + col], one warp
// per column; same two-pass arithmetic as the CPU reference.
__device__ __forceinline__ void ln_columns(float* ys, int C, int ld, int ncols, const float* gamma,
                                           const float* beta, bool gelu_after) {
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int col = w; col < ncols; col += NWARP) {
        float s = 0.f;
        for (int c = lane; c < C; c += 32) s += ys[c * ld + col];
        float mean = warp_sum(s) / (float)C;
        float v = 0.f;
        for (int c = lane; c < C; c += 32) {
            float d = ys[c * ld + col] - mean;
            v += d * d;
        }
        float inv = 1.f / sqrtf(warp_sum(v) / (float)C + 1e-5f);
        for (int c = lane; c < C; c += 32) {
            float y = (ys[c * ld + col] - mean) * inv * gamma[c] + beta[c];
            ys[c * ld + col] = gelu_after ? gelu_(y) : y;
        }
    }
    __syncthreads();
}

// Block-wide implicit-GEMM convolution over inputs in shared memory:
// out[r][col] = bias[r] + sum_{ci,tap} w[(r*cin + ci)*K + tap] * act(xs[ci*ld + col + tap*dil])
// for r < rows, col < ncols, act = LeakyReLU(slope) unless slope == 1; xs is already shifted so
// tap 0 of output column 0 is xs column 0. Results go to f(r, col, value) after the sums.
// Weights are staged through shared memory in RB x KC tiles with coalesced loads (the loop is
// latency-bound otherwise); each thread keeps an RM x RN register tile. Every thread of the
// block must call it (it synchronises).
#define CONV_RB 64
#define CONV_KC 64
template <int CB, int RM, int RN, int RB, typename W, typename F>
__device__ __forceinline__ void conv_tile(const float* xs, int ld, int cin, const W* w,
                                          const float* bias, int K, int dil, int rows, int ncols,
                                          F& f, float slope, float* wsm, int wld = -1) {
    constexpr int TC = CB / RN, TR = NT / TC;
    static_assert(TR * RM == RB && RB <= CONV_RB, "tile shape");
    const int tx = threadIdx.x % TC, ty = threadIdx.x / TC;
    const int KK = cin * K;
    const int WLD = wld < 0 ? KK : wld;  // weight row stride (a k slice of a wider matrix)
    for (int r0 = 0; r0 < rows; r0 += RB) {
        for (int c0 = 0; c0 < ncols; c0 += CB) {
            float acc[RM][RN];
#pragma unroll
            for (int i = 0; i < RM; ++i) {
                int r = r0 + ty + TR * i;
                float b = (r < rows && bias) ? bias[r] : 0.f;
#pragma unroll
                for (int j = 0; j < RN; ++j) acc[i][j] = b;
            }
            // Weight chunks go global -> registers -> shared; the next chunk's loads are in
            // flight while the current one is used.
            constexpr int PER = RB * CONV_KC / NT;
            float pre[PER];
            auto fetch = [&](int k0) {
#pragma unroll
                for (int q = 0; q < PER; ++q) {
                    int e = threadIdx.x + q * NT;
                    int r = r0 + e / CONV_KC, k = k0 + e % CONV_KC;
                    pre[q] = (r < rows && k < KK) ? ldw(w + (size_t)r * WLD + k) : 0.f;
                }
            };
            fetch(0);
            bool cok[RN];
#pragma unroll
            for (int j = 0; j < RN; ++j) cok[j] = c0 + tx + TC * j < ncols;
            for (int k0 = 0; k0 < KK; k0 += CONV_KC) {
                __syncthreads();
#pragma unroll
                for (int q = 0; q < PER; ++q) {
                    int e = threadIdx.x + q * NT;
                    wsm[(e / CONV_KC) * (CONV_KC + 1) + e % CONV_KC] = pre[q];
                }
                __syncthreads();
                if (k0 + CONV_KC < KK) fetch(k0 + CONV_KC);
                int ci = k0 / K, tap = k0 - (k0 / K) * K;
                const int kn = min(CONV_KC, KK - k0);
                for (int kk = 0; kk < kn; ++kk) {
                    const float* xr = xs + ci * ld + tap * dil + c0 + tx;
                    float xv[RN];
#pragma unroll
                    for (int j = 0; j < RN; ++j) {
                        float v = cok[j] ? xr[TC * j] : 0.f;
                        xv[j] = slope != 1.f ? lrelu(v, slope) : v;
                    }
#pragma unroll
                    for (int i = 0; i < RM; ++i) {
                        float wv = wsm[(ty + TR * i) * (CONV_KC + 1) + kk];
#pragma unroll
                        for (int j = 0; j < RN; ++j) acc[i][j] += wv * xv[j];
                    }
                    if (++tap == K) {
                        tap = 0;
                        ++ci;
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < RM; ++i) {
                int r = r0 + ty + TR * i;
#pragma unroll
                for (int j = 0; j < RN; ++j) {
                    int c = c0 + tx + TC * j;
                    if (r < rows && c < ncols) f(r, c, acc[i][j]);
                }
            }
        }
    }
}

#ifdef HARK_MMA
// Tensor-core path (f16 weights): the same convolution as conv_tile, as an implicit GEMM on
// mma.sync m16n8k16 (f16 inputs, f32 accumulation). A = weights [rows, cin*K] straight from
// global memory (L2-resident; each fragment register is two adjacent k of one row, so a plain
// 32-bit load); B = act(xs) gathered from the f32 input columns in shared memory and rounded
// to f16 there (im2col is never stored). Fragment layouts: PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type". A warp grid of WM x WN warps covers a
// (WM*MT*16) x (WN*NT8*8) output tile; with fewer than 8 such warps the rest split k and
// their partial sums meet in `wsm`. Rows and columns past the edge are clamped (valid
// memory, results dropped), so the loop has no bounds checks.
__device__ __forceinline__ unsigned pack_f16x2(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
__device__ __forceinline__ void mma_f16_16816(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Walks the GEMM's k = ci*K + tap in steps of 16 for one thread's fragment rows k and k+1:
// `off` is the shared-memory offset ci*ld + tap*dil of k, `next` that of k+1.
struct KWalk {
    int ci, tap;
    __device__ __forceinline__ void start(int k, int K) { ci = k / K; tap = k - ci * K; }
    __device__ __forceinline__ void step(int q16, int r16, int K) {
        tap += r16;
        ci += q16;
        if (tap >= K) { tap -= K; ++ci; }
    }
    __device__ __forceinline__ int off(int ld, int dil) const { return ci * ld + tap * dil; }
    __device__ __forceinline__ int next(int ld, int dil, int K) const {
        return tap + 1 < K ? off(ld, dil) + dil : (ci + 1) * ld;
    }
};

// B fragment registers of one n tile: act(x) at the thread's four k rows, rounded to f16.
// With SPLIT (the flow) each value is also kept as the f16 of its rounding error (hi + lo
// carries ~22 bits), so a second mma adds what the first one lost. A template parameter, not
// a module option, so one module can hold both (the persistent kernel's).
template <bool SPLIT>
__device__ __forceinline__ void b_frag(const float* xc, int oa, int oa1, int ob, int ob1,
                                       float slope, unsigned* b) {
    float v[4] = {xc[oa], xc[oa1], xc[ob], xc[ob1]};
    if (slope != 1.f) {
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = lrelu(v[i], slope);
    }
    b[0] = pack_f16x2(v[0], v[1]);
    b[1] = pack_f16x2(v[2], v[3]);
    if constexpr (SPLIT) {
    float r[4];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        unsigned short lo16, hi16;
        asm("mov.b32 {%0, %1}, %2;" : "=h"(lo16), "=h"(hi16) : "r"(b[i]));
        float fl, fh;
        asm("cvt.f32.f16 %0, %1;" : "=f"(fl) : "h"(lo16));
        asm("cvt.f32.f16 %0, %1;" : "=f"(fh) : "h"(hi16));
        r[2 * i] = v[2 * i] - fl;
        r[2 * i + 1] = v[2 * i + 1] - fh;
    }
    b[2] = pack_f16x2(r[0], r[1]);
    b[3] = pack_f16x2(r[2], r[3]);
    }
}

// acc += the GEMM over k steps [s0, s1) for this thread's fragments (see conv_mma).
template <bool SPLIT, int MT, int NT8>
__device__ __forceinline__ void mma_ksteps(float (*acc)[NT8][4], int s0, int s1, const float* xs,
                                           int ld, int K, int dil, float slope,
                                           const unsigned* w32, const int (*wr)[2],
                                           const int* col, int t) {
    constexpr int U = MT == 1 ? 4 : 2;  // k steps whose weight loads are issued together
    const int q16 = 16 / K, r16 = 16 - q16 * K;
    KWalk ka, kb;  // fragment rows 2t, 2t+1 and 2t+8, 2t+9 of the current step
    ka.start(s0 * 16 + 2 * t, K);
    kb.start(s0 * 16 + 2 * t + 8, K);
    for (int s = s0; s < s1; s += U) {
        unsigned a[U][MT][4];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (s + u < s1) {
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    int e = (s + u) * 8;
                    a[u][mt][0] = __ldg(w32 + wr[mt][0] + e);
                    a[u][mt][1] = __ldg(w32 + wr[mt][1] + e);
                    a[u][mt][2] = __ldg(w32 + wr[mt][0] + e + 4);
                    a[u][mt][3] = __ldg(w32 + wr[mt][1] + e + 4);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (s + u < s1) {
                const int oa = ka.off(ld, dil), oa1 = ka.next(ld, dil, K);
                const int ob = kb.off(ld, dil), ob1 = kb.next(ld, dil, K);
#pragma unroll
                for (int nt = 0; nt < NT8; ++nt) {
                    unsigned b[4];
                    b_frag<SPLIT>(xs + col[nt], oa, oa1, ob, ob1, slope, b);
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma_f16_16816(acc[mt][nt], a[u][mt], b[0], b[1]);
                        if constexpr (SPLIT) mma_f16_16816(acc[mt][nt], a[u][mt], b[2], b[3]);
                    }
                }
                ka.step(q16, r16, K);
                kb.step(q16, r16, K);
            }
        }
    }
}

// The k range is always summed as two halves added at the end, whichever tile a call takes
// (tiles of fewer than 8 warps give each half to its own warp): an output's value then does
// not depend on the tile, so a chunk of a window equals the same frames of the whole.
template <bool SPLIT, int WM, int WN, int MT, int NT8, typename F>
__device__ __forceinline__ void conv_mma(const float* xs, int ld, int cin, const half_t* w,
                                         const float* bias, int K, int dil, int rows, int ncols,
                                         F& f, float slope, float* wsm) {
    constexpr int KS = NWARP / (WM * WN), BM = WM * MT * 16, BN = WN * NT8 * 8;
    static_assert(KS == 1 || KS == 2, "warp grid");
    static_assert(KS * WM * WN == NWARP, "warp grid");
    static_assert(KS == 1 || (WM * WN * MT * NT8 * 4 * 32 <= CONV_RB * (CONV_KC + 1)), "k-split scratch");
    const int wid = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int ks = wid / (WM * WN), wm = wid % WM, wn = (wid / WM) % WN;
    const int KK = cin * K, nsteps = KK / 16, half = (nsteps + 1) / 2;
    const unsigned* w32 = (const unsigned*)w;
    for (int r0 = 0; r0 < rows; r0 += BM) {
        for (int c0 = 0; c0 < ncols; c0 += BN) {
            float acc[MT][NT8][4], acc2[MT][NT8][4];
            // 32-bit word offsets of this thread's two fragment rows per m tile.
            int wr[MT][2];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    int r = min(r0 + (wm * MT + mt) * 16 + g + 8 * h, rows - 1);
                    wr[mt][h] = r * (KK / 2) + t;
                }
#pragma unroll
                for (int nt = 0; nt < NT8; ++nt)
#pragma unroll
                    for (int i = 0; i < 4; ++i) acc[mt][nt][i] = acc2[mt][nt][i] = 0.f;
            }
            int col[NT8];
#pragma unroll
            for (int nt = 0; nt < NT8; ++nt) col[nt] = min(c0 + (wn * NT8 + nt) * 8 + g, ncols - 1);
            if (KS == 1) {
                mma_ksteps<SPLIT, MT, NT8>(acc, 0, half, xs, ld, K, dil, slope, w32, wr, col, t);
                mma_ksteps<SPLIT, MT, NT8>(acc2, half, nsteps, xs, ld, K, dil, slope, w32, wr, col, t);
            } else {
                // Warps of the second half leave their sums in wsm for the first half's.
                mma_ksteps<SPLIT, MT, NT8>(acc, ks * half, ks ? nsteps : half, xs, ld, K, dil, slope, w32,
                                    wr, col, t);
                __syncthreads();
                if (ks == 1) {
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                        for (int nt = 0; nt < NT8; ++nt)
#pragma unroll
                            for (int i = 0; i < 4; ++i)
                                wsm[((((wid % (WM * WN)) * MT + mt) * NT8 + nt) * 4 + i) * 32 + lane] = acc[mt][nt][i];
                }
                __syncthreads();
                if (ks == 0) {
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                        for (int nt = 0; nt < NT8; ++nt)
#pragma unroll
                            for (int i = 0; i < 4; ++i)
                                acc2[mt][nt][i] = wsm[((((wid % (WM * WN)) * MT + mt) * NT8 + nt) * 4 + i) * 32 + lane];
                }
            }
            if (ks == 0) {
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
                    for (int nt = 0; nt < NT8; ++nt) {
#pragma unroll
                        for (int i = 0; i < 4; ++i) {
                            int r = r0 + (wm * MT + mt) * 16 + g + (i >= 2 ? 8 : 0);
                            int c = c0 + (wn * NT8 + nt) * 8 + 2 * t + (i & 1);
                            float v = acc[mt][nt][i] + acc2[mt][nt][i];
                            if (r < rows && c < ncols) f(r, c, v + (bias ? bias[r] : 0.f));
                        }
                    }
                }
            }
            if (KS > 1) __syncthreads();
        }
    }
}

// Body of the convolution core's test kernels (decoder.cu, flow.cu: each module compiles
// the core with its own precision options): y [rows, L] = b + w * act(x), stride 1,
// dilation `dil`, "same" zero padding, act = LeakyReLU(slope) unless slope == 1; one block
// per `tc` output columns, all rows. Declared after conv_smem below.
template <bool SPLIT, typename W>
__device__ void conv_probe_body(const float* x, int L, int cin, const W* w, const float* b,
                                int K, int dil, float slope, float* y, int rows, int tc,
                                float* sm, float* wsm);

// Channel counts the tensor-core path does not take (none in the supported voices): one FMA
// tile shape, out of line so that it does not raise the callers' register count.
template <typename F>
__device__ __noinline__ void conv_fma_fallback(const float* xs, int ld, int cin, const half_t* w,
                                               const float* bias, int K, int dil, int rows,
                                               int ncols, F& f, float slope, float* wsm) {
    conv_tile<16, 4, 1, 64>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm);
}

template <typename W> struct is_half_w { static constexpr bool value = false; };
template <> struct is_half_w<half_t> { static constexpr bool value = true; };
#endif

// Each kernel that convolves declares this once and passes it to conv_smem.
#define CONV_SCRATCH __shared__ float wsm[CONV_RB * (CONV_KC + 1)]
// SPLIT: the tensor-core path keeps activations as two f16 (see b_frag); the flow's choice.
// `wld` (f32 weights only): the weights' row stride when they are a k slice of a wider
// matrix (split-k items); -1 for cin * K.
template <bool SPLIT = false, typename W, typename F>
__device__ __forceinline__ void conv_smem(const float* xs, int ld, int cin, const W* w,
                                          const float* bias, int K, int dil, int rows, int ncols,
                                          F f, float slope, float* wsm, int wld = -1) {
#ifdef HARK_MMA
    // f16 weights with cin a multiple of 16 (k = cin*K then is too): tensor cores. The
    // tile is picked by shape: few columns (flow items, short windows) or wide decoder rows.
    if constexpr (is_half_w<W>::value) {
        if (cin % 16 == 0) {
            if (ncols <= 8) conv_mma<SPLIT, 4, 1, 1, 1>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm);
            else if (ncols <= 16) conv_mma<SPLIT, 4, 2, 1, 1>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm);
            else if (ncols <= 32) conv_mma<SPLIT, 4, 2, 1, 2>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm);
            else if (rows <= 32) conv_mma<SPLIT, 2, 4, 1, 4>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm);
            else conv_mma<SPLIT, 2, 4, 2, 2>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm);
        } else {
            conv_fma_fallback(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm);
        }
        return;
    } else
#endif
    {
        // f32 weights (front half, HARK_CUDA_F32=1) or no tensor cores: FMA tiles. Few rows
        // and many columns (the last decoder stage): a 32 x 64 tile keeps every thread busy.
        if (rows <= 32 && ncols >= 64) conv_tile<64, 2, 4, 32>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm, wld);
        else if (ncols >= 32) conv_tile<32, 4, 2, 64>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm, wld);
        else if (ncols >= 16) conv_tile<16, 4, 1, 64>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm, wld);
        else if (ncols >= 8) conv_tile<8, 2, 1, 64>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm, wld);
        else conv_tile<4, 1, 1, 64>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm, wld);
    }
}

// The conv core's staging at file scope: stage bodies compiled once (STAGE) use it directly.
CONV_SCRATCH;

template <bool SPLIT, typename W>
__device__ void conv_probe_body(const float* x, int L, int cin, const W* w, const float* b,
                                int K, int dil, float slope, float* y, int rows, int tc,
                                float* sm, float* wsm) {
    const int pad = dil * (K - 1) / 2, ld = tc + 2 * pad;
    const int t0 = blockIdx.x * tc, nc = min(tc, L - t0);
    for (int i = threadIdx.x; i < cin * ld; i += NT) {
        int c = i / ld, t = t0 - pad + i % ld;
        sm[i] = (t >= 0 && t < L) ? x[(size_t)c * L + t] : 0.f;
    }
    __syncthreads();
    conv_smem<SPLIT>(sm, ld, cin, w, b, K, dil, rows, nc,
                     [&](int r, int col, float v) { y[(size_t)r * L + t0 + col] = v; }, slope,
                     wsm);
}

// A module's test kernel for the core: the same body, compiled with that module's options.
#define CONV_PROBE_KERNEL(name, split)                                                         \
    extern "C" __global__ void __launch_bounds__(NT)                                           \
    name(const float* x, int L, int cin, const wt_t* w, const float* b, int K, int dil,        \
         float slope, float* y, int rows, int tc) {                                            \
        extern __shared__ float sm[];                                                          \
        CONV_SCRATCH;                                                                          \
        conv_probe_body<split>(x, L, cin, w, b, K, dil, slope, y, rows, tc, sm, wsm);          \
    }
