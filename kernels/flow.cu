// Reverse flow for one window of frames: per coupling, WN_L launches of the fused WaveNet
// layer (e). Layer 0 also runs the coupling's `pre` 1x1 on the fly (with halo); the last layer
// also runs `post` and subtracts the mean from z's second half. In the window's first
// coupling, layer 0 builds z_p itself from m_p, logs_p, the frame offsets and the prior noise
// (d): expansion + noise + z_p are never materialised separately.
// Flips are not done: `parity` says whether logical channel i is physical channel CI-1-i.
// Defines: H (WaveNet hidden), CI, WN_K, WN_L, WN_RATE, WN_TN; HARK_MMA_FLOW_SPLIT: the
// tensor-core convs here keep each activation as two f16 (value and rounding error).
#ifdef HARK_MMA_FLOW_SPLIT
#define FLOW_SPLIT true
#else
#define FLOW_SPLIT false
#endif
#include "common.cuh"

#define HALF (CI / 2)

struct Prior {
    const float* m_p;      // [CI, T]
    const float* logs_p;   // [CI, T]
    const int* off;        // [T + 1] frame offsets
    const float* eps;      // [CI, F] prior noise (unused when noise_scale == 0)
    int T, F, lo;          // tokens, frames, first frame of the window
    float noise_scale;
};

__device__ __forceinline__ int token_of(const int* off, int T, int f) {
    int a = 0, b = T - 1;  // last token with off[k] <= f
    while (a < b) {
        int m = (a + b + 1) >> 1;
        if (off[m] <= f) a = m;
        else b = m - 1;
    }
    return a;
}

__device__ __forceinline__ float prior_at(const Prior& pr, int c, int f, int tok) {
    float m = pr.m_p[(size_t)c * pr.T + tok];
    if (pr.noise_scale == 0.f) return m;
    float e = pr.eps[(size_t)c * pr.F + f];
    return m + e * expf(pr.logs_p[(size_t)c * pr.T + tok]) * pr.noise_scale;
}

#define FA_TC 8     // columns per gate item
#define FB_TC 16    // columns per res/skip and post item
#define FB_LD (FB_TC + 4)  // their row stride in shared memory: rows 2 apart land 8 banks apart
#define GROUP 32    // gate channels per item (the in_layer rows are stored grouped, see weights.rs)
// Flow pointer table, per coupling c (PyTorch index order): pre_w pre_b post_w post_b, then per
// layer in_w in_b rs_w rs_b.
#define FP(c, k) P[(c) * (4 + 4 * WN_L) + (k)]
#define FL(c, l, k) P[(c) * (4 + 4 * WN_L) + 4 + 4 * (l) + (k)]

// The whole reverse flow of one window in one cooperative kernel. Per coupling: `pre` (and,
// in the first coupling, z_p itself from the prior: fusion (d)); per WaveNet layer (e) the
// dilated conv + tanh*sigmoid gate over (column tile, channel group) items, a grid barrier,
// then the res/skip 1x1 over (column tile, row group) items; then `post` and z1 -= mean.
// Grid barriers replace kernel boundaries, so every phase spreads over the whole GPU.
STAGE void flow_body(Grid g, float* z, float* hA, float* hB, float* acts, float* skip, int n,
                     int from_prior, const void* const* P, const Prior prior) {
    float* sm = dsm;
    const int NC = FLOW_NC;
    const int tilesA = (n + FA_TC - 1) / FA_TC, tilesB = (n + FB_TC - 1) / FB_TC;
    for (int k = 0; k < NC; ++k) {
        const int c = NC - 1 - k, parity = (k + 1) & 1;
        auto phys = [&](int ch) { return parity ? CI - 1 - ch : ch; };
        // pre: hA = pre_w x0 + pre_b over own columns (1x1: no halo).
        for (int it = g.b; it < tilesB; it += g.nb) {
            int t0 = it * FB_TC, nc = min(FB_TC, n - t0);
            __syncthreads();
            if (k == 0 && from_prior) {
                for (int i = threadIdx.x; i < CI * nc; i += NT) {
                    int ch = i / nc, t = t0 + i % nc, f = prior.lo + t;
                    z[(size_t)ch * n + t] = prior_at(prior, ch, f, token_of(prior.off, prior.T, f));
                }
                __syncthreads();
            }
            for (int i = threadIdx.x; i < HALF * FB_TC; i += NT) {
                int ch = i / FB_TC, j = i % FB_TC;
                sm[ch * FB_LD + j] = j < nc ? z[(size_t)phys(ch) * n + t0 + j] : 0.f;
            }
            __syncthreads();
            conv_smem<FLOW_SPLIT>(sm, FB_LD, HALF, (const wt_t*)FP(c, 0), (const float*)FP(c, 1), 1, 1, H, nc,
                      [&](int r, int col, float v) { hA[(size_t)r * n + t0 + col] = v; }, 1.f, wsm);
        }
        grid_sync(g);
        int dil = 1;
        for (int l = 0; l < WN_L; ++l) {
            const float* hin = (l & 1) ? hB : hA;
            float* hout = (l & 1) ? hA : hB;
            const bool last = l == WN_L - 1;
            const int halo = dil * (WN_K - 1) / 2, W = FA_TC + 2 * halo;
            // (e) part 1: dilated conv + gate, item = (column tile, channel group).
            for (int it = g.b; it < tilesA * (H / GROUP); it += g.nb) {
                int t0 = (it / (H / GROUP)) * FA_TC, g = it % (H / GROUP);
                int nc = min(FA_TC, n - t0);
                float* hs = sm;              // H * W
                float* ab = hs + H * W;      // 2 * GROUP * FA_TC
                __syncthreads();
                for (int i = threadIdx.x; i < H * W; i += NT) {
                    int ch = i / W, t = t0 - halo + i % W;
                    hs[i] = (t >= 0 && t < n) ? hin[(size_t)ch * n + t] : 0.f;
                }
                __syncthreads();
                const wt_t* iw = (const wt_t*)FL(c, l, 0) + (size_t)g * 2 * GROUP * H * WN_K;
                const float* ib = (const float*)FL(c, l, 1) + g * 2 * GROUP;
                conv_smem<FLOW_SPLIT>(hs, W, H, iw, ib, WN_K, dil, 2 * GROUP, nc,
                          [&](int r, int col, float v) { ab[r * FA_TC + col] = v; }, 1.f, wsm);
                __syncthreads();
                for (int i = threadIdx.x; i < GROUP * FA_TC; i += NT) {
                    int ch = i / FA_TC, j = i % FA_TC;
                    if (j < nc)
                        acts[(size_t)(g * GROUP + ch) * n + t0 + j] =
                            tanhf(ab[i]) * sigmoidf_(ab[i + GROUP * FA_TC]);
                }
            }
            grid_sync(g);
            // (e) part 2: res/skip 1x1, item = (column tile, 64-row group).
            const int rs_rows = last ? H : 2 * H, groups = rs_rows / 64;
            for (int it = g.b; it < tilesB * groups; it += g.nb) {
                int t0 = (it / groups) * FB_TC, r0 = (it % groups) * 64;
                int nc = min(FB_TC, n - t0);
                __syncthreads();
                for (int i = threadIdx.x; i < H * FB_TC; i += NT) {
                    int ch = i / FB_TC, j = i % FB_TC;
                    sm[ch * FB_LD + j] = j < nc ? acts[(size_t)ch * n + t0 + j] : 0.f;
                }
                __syncthreads();
                conv_smem<FLOW_SPLIT>(sm, FB_LD, H, (const wt_t*)FL(c, l, 2) + (size_t)r0 * H,
                          (const float*)FL(c, l, 3) + r0, 1, 1, 64, nc,
                          [&](int rr, int col, float v) {
                              int r = r0 + rr, t = t0 + col;
                              if (!last && r < H) {
                                  hout[(size_t)r * n + t] = hin[(size_t)r * n + t] + v;
                              } else {
                                  size_t q = (size_t)(last ? r : r - H) * n + t;
                                  skip[q] = (l == 0 ? 0.f : skip[q]) + v;
                              }
                          },
                          1.f, wsm);
            }
            grid_sync(g);
            dil *= WN_RATE;
        }
        // post: z1 -= post_w skip + post_b over own columns.
        for (int it = g.b; it < tilesB; it += g.nb) {
            int t0 = it * FB_TC, nc = min(FB_TC, n - t0);
            __syncthreads();
            for (int i = threadIdx.x; i < H * FB_TC; i += NT) {
                int ch = i / FB_TC, j = i % FB_TC;
                sm[ch * FB_LD + j] = j < nc ? skip[(size_t)ch * n + t0 + j] : 0.f;
            }
            __syncthreads();
            conv_smem<FLOW_SPLIT>(sm, FB_LD, H, (const wt_t*)FP(c, 2), (const float*)FP(c, 3), 1, 1, HALF, nc,
                      [&](int r, int col, float v) { z[(size_t)phys(HALF + r) * n + t0 + col] -= v; },
                      1.f, wsm);
        }
        grid_sync(g);
    }
}

#ifndef HARK_PERSISTENT_MODULE  // the graph path's kernel
extern "C" __global__ void __launch_bounds__(NT)
flow_coop(float* z, float* hA, float* hB, float* acts, float* skip, int n, int from_prior,
          const void* const* P, const float* m_p, const float* logs_p, const int* off,
          const float* eps, const int* prm, unsigned* bar) {
    // Per-chunk scalars come from device memory so one captured graph serves every chunk
    // of a size: tokens, frames, first frame of the window, noise scale (bits).
    const Prior prior = {m_p, logs_p, off, eps, prm[0], prm[1], prm[2], __int_as_float(prm[3])};
    flow_body(hw_grid(bar), z, hA, hB, acts, skip, n, from_prior, P, prior);
}
#endif

// The convolution core alone as this module compiles it (activations split or not), for
// its parity test.
#ifndef HARK_PERSISTENT_MODULE
CONV_PROBE_KERNEL(flow_conv_probe, FLOW_SPLIT)
#endif
