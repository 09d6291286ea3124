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

// out[r][col] = bias[r] + sum_{ci,tap} w[(r*cin + ci)*K + tap] * xs[ci*ld + col + tap*dil]
// (xs values through LeakyReLU(slope) unless slope == 1) for r < rows and col < ncols, with input columns in shared memory (already shifted so tap 0
// of output column 0 is xs column 0). Results go to f(r, col, value). Threads take columns
// fastest so weight loads are warp broadcasts and input loads are conflict-free.
template <typename W, typename F>
__device__ __forceinline__ void conv_smem(const float* xs, int ld, int cin, const W* w,
                                          const float* bias, int K, int dil, int rows, int ncols,
                                          F f, float slope) {
    // Column group width: a power of two near ncols, at most 32.
    int tc = ncols >= 32 ? 32 : (ncols >= 16 ? 16 : (ncols >= 8 ? 8 : (ncols >= 4 ? 4 : (ncols >= 2 ? 2 : 1))));
    int nrg = NT / tc;
    int c0 = threadIdx.x % tc, rg = threadIdx.x / tc;
    const int RPT = 4;  // rows per thread per pass
    for (int cb = 0; cb < ncols; cb += tc) {
        int col = cb + c0;
        bool colok = col < ncols;
        for (int rb = rg * RPT; rb < rows; rb += nrg * RPT) {
            float acc[RPT];
#pragma unroll
            for (int k = 0; k < RPT; ++k) acc[k] = (rb + k < rows && bias) ? bias[rb + k] : 0.f;
            if (colok) {
                for (int ci = 0; ci < cin; ++ci) {
                    const float* xr = xs + ci * ld + col;
                    for (int tap = 0; tap < K; ++tap) {
                        float xv = xr[tap * dil];
                        if (slope != 1.f) xv = lrelu(xv, slope);  // fused pre-activation
#pragma unroll
                        for (int k = 0; k < RPT; ++k)
                            if (rb + k < rows)
                                acc[k] += ldw(w + ((size_t)(rb + k) * cin + ci) * K + tap) * xv;
                    }
                }
#pragma unroll
                for (int k = 0; k < RPT; ++k)
                    if (rb + k < rows) f(rb + k, col, acc[k]);
            }
        }
    }
}
