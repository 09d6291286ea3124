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

// Grid-wide barrier for cooperative (co-resident) launches: bar[0] counts arrivals, bar[1]
// is the generation. bar[0] is back at 0 after every barrier, so the state needs no reset.
__device__ __forceinline__ void grid_sync(unsigned* bar) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned* gen = bar + 1;
        unsigned g = *gen;
        __threadfence();
        unsigned nb = gridDim.x * gridDim.y * gridDim.z;
        if (atomicAdd(bar, 1u) == nb - 1) {
            atomicExch(bar, 0u);
            __threadfence();
            atomicAdd(bar + 1, 1u);
        } else {
            while (*gen == g) __nanosleep(20);
        }
        __threadfence();
    }
    __syncthreads();
}

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
#define CONV_KC 32
template <int CB, int RM, int RN, int RB, typename W, typename F>
__device__ __forceinline__ void conv_tile(const float* xs, int ld, int cin, const W* w,
                                          const float* bias, int K, int dil, int rows, int ncols,
                                          F& f, float slope, float* wsm) {
    constexpr int TC = CB / RN, TR = NT / TC;
    static_assert(TR * RM == RB && RB <= CONV_RB, "tile shape");
    const int tx = threadIdx.x % TC, ty = threadIdx.x / TC;
    const int KK = cin * K;
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
                    pre[q] = (r < rows && k < KK) ? ldw(w + (size_t)r * KK + k) : 0.f;
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

// Each kernel that convolves declares this once and passes it to conv_smem.
#define CONV_SCRATCH __shared__ float wsm[CONV_RB * (CONV_KC + 1)]
template <typename W, typename F>
__device__ __forceinline__ void conv_smem(const float* xs, int ld, int cin, const W* w,
                                          const float* bias, int K, int dil, int rows, int ncols,
                                          F f, float slope, float* wsm) {
    // Few rows and many columns (the last decoder stage): a 32 x 64 tile keeps every thread busy.
    if (rows <= 32 && ncols >= 64) conv_tile<64, 2, 4, 32>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm);
    else if (ncols >= 32) conv_tile<32, 4, 2, 64>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm);
    else if (ncols >= 16) conv_tile<16, 4, 1, 64>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm);
    else if (ncols >= 8) conv_tile<8, 2, 1, 64>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm);
    else conv_tile<4, 1, 1, 64>(xs, ld, cin, w, bias, K, dil, rows, ncols, f, slope, wsm);
}
