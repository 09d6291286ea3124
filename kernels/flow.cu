// Reverse flow for one window of frames: per coupling, WN_L launches of the fused WaveNet
// layer (e). Layer 0 also runs the coupling's `pre` 1x1 on the fly (with halo); the last layer
// also runs `post` and subtracts the mean from z's second half. In the window's first
// coupling, layer 0 builds z_p itself from m_p, logs_p, the frame offsets and the prior noise
// (d): expansion + noise + z_p are never materialised separately.
// Flips are not done: `parity` says whether logical channel i is physical channel CI-1-i.
// Defines: H (WaveNet hidden), CI, WN_K, WN_L, WN_RATE, WN_TN.
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

// mode bits: 1 first layer (run pre), 2 last layer (run post, update z), 4 z_p from the prior.
extern "C" __global__ void __launch_bounds__(NT)
wn_layer(float* z, const float* hin, float* hout, float* skip, int n, int layer, int mode,
         int parity, const wt_t* pre_w, const float* pre_b, const wt_t* in_w, const float* in_b,
         const wt_t* rs_w, const float* rs_b, const wt_t* post_w, const float* post_b,
         const float* m_p, const float* logs_p, const int* off, const float* eps, int T, int F,
         int lo, float noise_scale) {
    extern __shared__ float sm[];
    CONV_SCRATCH;
    const Prior prior = {m_p, logs_p, off, eps, T, F, lo, noise_scale};
    int dil = 1;
    for (int i = 0; i < layer; ++i) dil *= WN_RATE;
    const int halo = dil * (WN_K - 1) / 2;
    const int W = WN_TN + 2 * halo;
    const int t0 = blockIdx.x * WN_TN;
    const int nc = min(WN_TN, n - t0);
    const bool first = mode & 1, last = mode & 2, from_prior = mode & 4;
    float* hs = sm;              // H * W: layer input with halo
    float* ab = hs + H * W;      // 2H * WN_TN: in_layer output, then the gated acts in rows < H
    auto phys = [&](int c) { return parity ? CI - 1 - c : c; };

    if (first) {
        float* x0 = ab;  // HALF * W, free until the in_layer conv
        for (int i = threadIdx.x; i < HALF * W; i += NT) {
            int c = i / W, t = t0 - halo + i % W;
            float v = 0.f;
            if (t >= 0 && t < n) {
                if (from_prior) {
                    int f = prior.lo + t;
                    v = prior_at(prior, phys(c), f, token_of(prior.off, prior.T, f));
                } else {
                    v = z[(size_t)phys(c) * n + t];
                }
            }
            x0[i] = v;
        }
        if (from_prior) {  // this block's columns of z_p, all channels, for later couplings
            for (int i = threadIdx.x; i < CI * nc; i += NT) {
                int c = i / nc, t = t0 + i % nc, f = prior.lo + t;
                z[(size_t)c * n + t] = prior_at(prior, c, f, token_of(prior.off, prior.T, f));
            }
        }
        __syncthreads();
        conv_smem(x0, W, HALF, pre_w, pre_b, 1, 1, H, W,
                  [&](int r, int col, float v) {
                      int t = t0 - halo + col;
                      hs[r * W + col] = (t >= 0 && t < n) ? v : 0.f;
                  },
                  1.f, wsm);
    } else {
        for (int i = threadIdx.x; i < H * W; i += NT) {
            int c = i / W, t = t0 - halo + i % W;
            hs[i] = (t >= 0 && t < n) ? hin[(size_t)c * n + t] : 0.f;
        }
    }
    __syncthreads();
    conv_smem(hs, W, H, in_w, in_b, WN_K, dil, 2 * H, nc,
              [&](int r, int col, float v) { ab[r * WN_TN + col] = v; }, 1.f, wsm);
    __syncthreads();
    for (int i = threadIdx.x; i < H * WN_TN; i += NT) ab[i] = tanhf(ab[i]) * sigmoidf_(ab[i + H * WN_TN]);
    __syncthreads();
    if (!last) {
        conv_smem(ab, WN_TN, H, rs_w, rs_b, 1, 1, 2 * H, nc,
                  [&](int r, int col, float v) {
                      int t = t0 + col;
                      if (r < H) {
                          hout[(size_t)r * n + t] = hs[r * W + halo + col] + v;
                      } else {
                          size_t k = (size_t)(r - H) * n + t;
                          skip[k] = (layer == 0 ? 0.f : skip[k]) + v;
                      }
                  },
                  1.f, wsm);
        return;
    }
    float* st = hs;  // H * WN_TN: the total skip, input of post (hs is no longer read)
    conv_smem(ab, WN_TN, H, rs_w, rs_b, 1, 1, H, nc,
              [&](int r, int col, float v) {
                  st[r * WN_TN + col] = (layer == 0 ? 0.f : skip[(size_t)r * n + t0 + col]) + v;
              },
              1.f, wsm);
    __syncthreads();
    conv_smem(st, WN_TN, H, post_w, post_b, 1, 1, HALF, nc,
              [&](int r, int col, float v) { z[(size_t)phys(HALF + r) * n + t0 + col] -= v; },
              1.f, wsm);
}
