// HiFi-GAN decoder (f): conv_pre; per stage LeakyReLU fused into the transposed conv (which
// also takes the mean of the previous stage's resblocks as it loads), all ResBlock2s of a
// stage in one launch (one block row per resblock, both of its convs fused with halo
// recompute); conv_post with the resblock mean, LeakyReLU(0.01), tanh and the crop to the
// chunk's own samples fused. Weights wt_t (f16 by default), activations and sums f32.
// Defines: RB_N, RB_ND, RB_KS, RB_DS, LRELU, LRELU_POST.
#include "common.cuh"

__constant__ int rb_k[RB_N] = RB_KS;
__constant__ int rb_d[RB_N * RB_ND] = RB_DS;

__device__ __forceinline__ int floordiv(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Value of the stage input at (c, t): the tensor itself, or the mean of the RB_N resblock
// outputs stored back to back (`rbs` + j * C * L).
__device__ __forceinline__ float stage_in(const float* x, int mean, int C, int L, int c, int t) {
    size_t i = (size_t)c * L + t;
    if (!mean) return x[i];
    float s = x[i];
    for (int j = 1; j < RB_N; ++j) s += x[(size_t)j * C * L + i];
    return s / (float)RB_N;
}

#define PRE_TC 32
#define PRE_RG 64
// Plain conv1d, stride 1, "same" zero padding: y [cout, L] = b + w * x. One item per
// (column tile bx, 64-row group by): the graph path's block (blockIdx.x, blockIdx.y).
// Items (like every item function here) start and end with all threads together.
STAGE void dec_conv_item(int bx, int by, const float* x, int L, int cin, const wt_t* w,
                         const float* b, int K, float* y, int cout) {
    float* sm = dsm;
    const int pad = (K - 1) / 2, ld = PRE_TC + K - 1;
    int t0 = bx * PRE_TC, r0 = by * PRE_RG;
    int nc = min(PRE_TC, L - t0), nr = min(PRE_RG, cout - r0);
    for (int i = threadIdx.x; i < cin * ld; i += NT) {
        int c = i / ld, t = t0 - pad + i % ld;
        sm[i] = (t >= 0 && t < L) ? x[(size_t)c * L + t] : 0.f;
    }
    __syncthreads();
    conv_smem(sm, ld, cin, w + (size_t)r0 * cin * K, b + r0, K, 1, nr, nc,
              [&](int r, int col, float v) { y[(size_t)(r0 + r) * L + t0 + col] = v; }, 1.f, wsm);
}

#ifndef HARK_PERSISTENT_MODULE  // the graph path's kernel
extern "C" __global__ void __launch_bounds__(NT)
dec_conv(const float* x, int L, int cin, const wt_t* w, const float* b, int K, float* y,
         int cout) {
    dec_conv_item(blockIdx.x, blockIdx.y, x, L, cin, w, b, K, y, cout);
}
#endif

#define UP_TO 32   // output columns per block
#define UP_RG 32   // output rows per block
// LeakyReLU + ConvTranspose1d (w [cin, cout, K], stride `rate`, padding `pad`), gather form:
// output o takes taps with (o + pad - tap) % rate == 0 from input (o + pad - tap) / rate.
// One item per (32 output columns bx, 32 output rows by).
STAGE void dec_up_item(int bx, int by, const float* x, int mean, int Lin, int cin, const wt_t* w,
                       const float* b, int rate, int K, int pad, float* y, int cout) {
    float* sm = dsm;
    const int Lout = Lin * rate;
    int o0 = bx * UP_TO, r0 = by * UP_RG;
    int i_lo = floordiv(o0 + pad - (K - 1), rate), i_hi = floordiv(o0 + UP_TO - 1 + pad, rate);
    int wi = i_hi - i_lo + 1;
    for (int i = threadIdx.x; i < cin * wi; i += NT) {
        int c = i / wi, t = i_lo + i % wi;
        sm[i] = (t >= 0 && t < Lin) ? lrelu(stage_in(x, mean, cin, Lin, c, t), LRELU) : 0.f;
    }
    __syncthreads();
    int col = threadIdx.x % UP_TO, rg = threadIdx.x / UP_TO;
    int o = o0 + col;
    if (o >= Lout) return;
    const int RPT = UP_RG / (NT / UP_TO);
    float acc[RPT];
    for (int k = 0; k < RPT; ++k) {
        int co = r0 + rg * RPT + k;
        acc[k] = co < cout ? b[co] : 0.f;
    }
    int tap0 = (o + pad) % rate;
    for (int ci = 0; ci < cin; ++ci) {
        for (int tap = tap0; tap < K; tap += rate) {
            int i = (o + pad - tap) / rate;
            if (i < 0 || i >= Lin) continue;
            float xv = sm[ci * wi + i - i_lo];
            for (int k = 0; k < RPT; ++k) {
                int co = r0 + rg * RPT + k;
                if (co < cout) acc[k] += ldw(w + ((size_t)ci * cout + co) * K + tap) * xv;
            }
        }
    }
    for (int k = 0; k < RPT; ++k) {
        int co = r0 + rg * RPT + k;
        if (co < cout) y[(size_t)co * Lout + o] = acc[k];
    }
}

#ifndef HARK_PERSISTENT_MODULE  // the graph path's kernel
extern "C" __global__ void __launch_bounds__(NT)
dec_up(const float* x, int mean, int Lin, int cin, const wt_t* w, const float* b, int rate,
       int K, int pad, float* y, int cout) {
    dec_up_item(blockIdx.x, blockIdx.y, x, mean, Lin, cin, w, b, rate, K, pad, y, cout);
}
#endif

// All ResBlock2s of a stage: block (tile, j) computes resblock j on columns [t0, t0 + tn):
// x_{m+1} = x_m + conv_{d_m}(LeakyReLU(x_m)), each step over a window shrunk by its reach,
// positions outside [0, L) held at zero as the reference's zero padding demands.
// ws/bs: pointer tables, entry j * RB_ND + m. out: RB_N tensors [C, L] back to back.
// One item per (column tile bx, resblock j).
STAGE void dec_rb_item(int bx, int j, const float* x, int L, int C, const wt_t* const* ws,
                       const float* const* bs, int tn, int hmax, float* out) {
    float* sm = dsm;
    const int k = rb_k[j];
    const int ld = tn + 2 * hmax;
    float* A = sm;
    float* Bf = sm + C * ld;
    int t0 = bx * tn;
    int nc = min(tn, L - t0);
    int R = 0;
    for (int m = 0; m < RB_ND; ++m) R += rb_d[j * RB_ND + m] * (k - 1) / 2;
    // A holds global columns [t0 - R, t0 + tn + R).
    int wa = tn + 2 * R;
    for (int i = threadIdx.x; i < C * wa; i += NT) {
        int c = i / wa, col = i % wa, t = t0 - R + col;
        A[c * ld + col] = (t >= 0 && t < L) ? x[(size_t)c * L + t] : 0.f;
    }
    __syncthreads();
    for (int m = 0; m < RB_ND; ++m) {
        int d = rb_d[j * RB_ND + m], h = d * (k - 1) / 2;
        int Rn = R - h, wb = tn + 2 * Rn;
        const wt_t* w = ws[j * RB_ND + m];
        const float* b = bs[j * RB_ND + m];
        if (m == RB_ND - 1) {
            conv_smem(A, ld, C, w, b, k, d, C, nc,
                      [&](int r, int col, float v) {
                          out[((size_t)j * C + r) * L + t0 + col] = A[r * ld + col + h] + v;
                      },
                      LRELU, wsm);
        } else {
            // Only columns inside [0, L) are computed; the rest are the reference's zero padding.
            int c_lo = max(0, Rn - t0), c_hi = min(wb, L - t0 + Rn);
            for (int i = threadIdx.x; i < C * wb; i += NT) {
                int c = i % wb;
                if (c < c_lo || c >= c_hi) Bf[(i / wb) * ld + c] = 0.f;
            }
            if (c_hi > c_lo)
                conv_smem(A + c_lo, ld, C, w, b, k, d, C, c_hi - c_lo,
                          [&](int r, int col, float v) {
                              int c = col + c_lo;
                              Bf[r * ld + c] = A[r * ld + c + h] + v;
                          },
                          LRELU, wsm);
        }
        __syncthreads();
        float* tmp = A;
        A = Bf;
        Bf = tmp;
        R = Rn;
    }
}

#ifndef HARK_PERSISTENT_MODULE  // the graph path's kernel
// Two blocks per SM (128 registers at most): the last stages have more blocks than SMs.
extern "C" __global__ void __launch_bounds__(NT, 2)
dec_rb(const float* x, int L, int C, const wt_t* const* ws, const float* const* bs, int tn,
       int hmax, float* out) {
    dec_rb_item(blockIdx.x, blockIdx.y, x, L, C, ws, bs, tn, hmax, out);
}
#endif

#define POST_TC 256
// conv_post over the mean of the last stage's resblocks with LeakyReLU(0.01), then tanh;
// only output samples [a, a + count) are computed and written to out[0 .. count).
// One item per 256 output samples bx.
STAGE void dec_post_item(int bx, const float* rbs, int C, int L, const wt_t* w, const float* bias,
                         int K, int a, int count, float* out) {
    float* sm = dsm;
    const int pad = (K - 1) / 2, ld = POST_TC + K - 1;
    int o0 = a + bx * POST_TC;
    for (int i = threadIdx.x; i < C * ld; i += NT) {
        int c = i / ld, t = o0 - pad + i % ld;
        sm[i] = (t >= 0 && t < L) ? lrelu(stage_in(rbs, 1, C, L, c, t), LRELU_POST) : 0.f;
    }
    __syncthreads();
    int idx = bx * POST_TC + threadIdx.x;
    if (idx >= count) return;
    float acc = bias ? bias[0] : 0.f;
    for (int c = 0; c < C; ++c)
        for (int tap = 0; tap < K; ++tap) acc += ldw(w + c * K + tap) * sm[c * ld + threadIdx.x + tap];
    out[idx] = tanhf(acc);
}

#ifndef HARK_PERSISTENT_MODULE  // the graph path's kernel
extern "C" __global__ void __launch_bounds__(NT)
dec_post(const float* rbs, int C, int L, const wt_t* w, const float* bias, int K, int a,
         int count, float* out) {
    dec_post_item(blockIdx.x, rbs, C, L, w, bias, K, a, count, out);
}
#endif

// The convolution core alone as this module compiles it, for its parity test.
#ifndef HARK_PERSISTENT_MODULE
CONV_PROBE_KERNEL(conv_probe, false)
#endif
