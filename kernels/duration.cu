// (c) The whole stochastic duration predictor in one cooperative kernel, f32: pre, DDSConv,
// proj, the reverse ConvFlows with their rational-quadratic splines, the final affine,
// durations = ceil(exp(logw) * length_scale) and their prefix sum (frame offsets).
// Defines: H, DPF, DPK, DDS_L, NFLOWS, NBINS, TAIL_BOUND.
#include "common.cuh"

#define DTC 8                    // columns per DDSConv work item
#define NPAR (3 * NBINS - 1)     // spline parameters per token
// Pointer table layout (built by gpu/weights.rs in the same order).
#define P_DDS(base, i, k) ((base) + 8 * (i) + (k))   // k: sep_w sep_b n1_g n1_b c_w c_b n2_g n2_b
#define P_MAIN 2
#define P_PROJ (2 + 8 * DDS_L)
#define P_FLOW(f) (4 + 8 * DDS_L + (f) * (4 + 8 * DDS_L))
#define P_AFFINE (4 + 8 * DDS_L + NFLOWS * (4 + 8 * DDS_L))

// f32 exp/log1p rounded from double, to track Rust's correctly rounded f32 libm closely.
__device__ __forceinline__ float exp_r(float v) { return (float)exp((double)v); }
__device__ __forceinline__ float softplus_(float v) {
    return v > 20.f ? v : (float)log1p((double)exp_r(v));
}

__device__ void knots_1d(const float* u, float min_size, float lo, float hi, float* cum) {
    float m = -INFINITY;
    for (int i = 0; i < NBINS; ++i) m = fmaxf(m, u[i]);
    float e[NBINS], s = 0.f;
    for (int i = 0; i < NBINS; ++i) {
        e[i] = exp_r(u[i] - m);
        s += e[i];
    }
    float acc = 0.f;
    cum[0] = 0.f;
    for (int i = 0; i < NBINS; ++i) {
        acc += min_size + (1.f - min_size * (float)NBINS) * (e[i] / s);
        cum[i + 1] = acc;
    }
    for (int i = 0; i <= NBINS; ++i) cum[i] = (hi - lo) * cum[i] + lo;
    cum[0] = lo;
    cum[NBINS] = hi;
}

// Inverse unconstrained rational-quadratic spline; p[k * ld] is parameter k of this token.
__device__ float rq_inverse(float y, const float* p, int ld) {
    const float B = TAIL_BOUND, md = 1e-3f;
    if (!(y >= -B && y <= B)) return y;
    const float inv = 1.f / sqrtf((float)DPF);
    float uw[NBINS], uh[NBINS], cw[NBINS + 1], ch[NBINS + 1], dv[NBINS + 1];
    for (int k = 0; k < NBINS; ++k) {
        uw[k] = p[k * ld] * inv;
        uh[k] = p[(NBINS + k) * ld] * inv;
    }
    knots_1d(uw, md, -B, B, cw);
    knots_1d(uh, md, -B, B, ch);
    const float edge = (float)log(exp(1.0 - (double)md) - 1.0);
    dv[0] = md + softplus_(edge);
    dv[NBINS] = dv[0];
    for (int k = 1; k < NBINS; ++k) dv[k] = md + softplus_(p[(2 * NBINS + k - 1) * ld]);
    int count = 0;
    for (int i = 0; i <= NBINS; ++i) count += y >= (i == NBINS ? ch[i] + 1e-6f : ch[i]);
    int b = count > 0 ? count - 1 : 0;
    if (b > NBINS - 1) b = NBINS - 1;
    float w = cw[b + 1] - cw[b], h = ch[b + 1] - ch[b];
    float delta = h / w, d0 = dv[b], d1 = dv[b + 1];
    float dy = y - ch[b];
    float s = d0 + d1 - 2.f * delta;
    float a = dy * s + h * (delta - d0);
    float bb = h * d0 - dy * s;
    float c = -delta * dy;
    float disc = fmaxf(bb * bb - 4.f * a * c, 0.f);
    float root = (2.f * c) / (-bb - sqrtf(disc));
    return root * w + cw[b];
}

// One DDSConv layer, nxt = cur + GELU(LN(1x1(GELU(LN(depthwise(cur)))))), per column tile.
// mode 1: also g = proj(nxt); mode 2: also the spline update of z1 from proj(nxt).
__device__ void dds_layer(const Grid& gr, const float* cur, float* nxt, int T,
                          const float* const* P, int base, int layer, int dil, float* sm, int mode,
                          int proj, float* g, float* z1) {
    float* ys = sm;               // DPF * DTC
    float* y2 = ys + DPF * DTC;   // DPF * DTC
    float* pr = y2 + DPF * DTC;   // NPAR * DTC
    const float* sw = P[P_DDS(base, layer, 0)];
    const float* sb = P[P_DDS(base, layer, 1)];
    const int pad = dil * (DPK - 1) / 2;
    for (int t0 = gr.b * DTC; t0 < T; t0 += gr.nb * DTC) {
        int nc = min(DTC, T - t0);
        __syncthreads();
        for (int i = threadIdx.x; i < DPF * DTC; i += NT) {
            int c = i / DTC, j = i % DTC;
            float v = 0.f;
            if (j < nc) {
                v = sb[c];
                for (int k = 0; k < DPK; ++k) {
                    int t = t0 + j + k * dil - pad;
                    if (t >= 0 && t < T) v += sw[c * DPK + k] * cur[(size_t)c * T + t];
                }
            }
            ys[i] = v;
        }
        __syncthreads();
        ln_columns(ys, DPF, DTC, nc, P[P_DDS(base, layer, 2)], P[P_DDS(base, layer, 3)], true);
        conv_smem(ys, DTC, DPF, P[P_DDS(base, layer, 4)], P[P_DDS(base, layer, 5)], 1, 1, DPF,
                  nc, [&](int r, int col, float v) { y2[r * DTC + col] = v; }, 1.f, wsm);
        __syncthreads();
        ln_columns(y2, DPF, DTC, nc, P[P_DDS(base, layer, 6)], P[P_DDS(base, layer, 7)], true);
        for (int i = threadIdx.x; i < DPF * DTC; i += NT) {
            int c = i / DTC, j = i % DTC;
            if (j < nc) {
                float v = cur[(size_t)c * T + t0 + j] + y2[i];
                nxt[(size_t)c * T + t0 + j] = v;
                y2[i] = v;
            }
        }
        __syncthreads();
        if (mode == 1) {
            conv_smem(y2, DTC, DPF, P[proj], P[proj + 1], 1, 1, DPF, nc,
                      [&](int r, int col, float v) { g[(size_t)r * T + t0 + col] = v; }, 1.f, wsm);
        } else if (mode == 2) {
            conv_smem(y2, DTC, DPF, P[proj], P[proj + 1], 1, 1, NPAR, nc,
                      [&](int r, int col, float v) { pr[r * DTC + col] = v; }, 1.f, wsm);
            __syncthreads();
            if (threadIdx.x < nc) {
                int t = t0 + threadIdx.x;
                z1[t] = rq_inverse(z1[t], pr + threadIdx.x, DTC);
            }
        }
    }
}

// Frame offsets of dur [T] into off [T + 1], by block 0's threads (off[T] = frames; visible
// to the whole block on return).
__device__ void scan_durations(const int* dur, int* off, int T, float* sm) {
    int per = (T + NT - 1) / NT;
    int b = threadIdx.x * per, e = min(T, b + per);
    int s = 0;
    for (int t = b; t < e; ++t) s += dur[t];
    int* part = (int*)sm;
    part[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        int acc = 0;
        for (int i = 0; i < NT; ++i) {
            int v = part[i];
            part[i] = acc;
            acc += v;
        }
        off[T] = acc;
    }
    __syncthreads();
    int acc = part[threadIdx.x];
    for (int t = b; t < e; ++t) {
        off[t] = acc;
        acc += dur[t];
    }
    __syncthreads();
}

// z [2, T] holds the SDP noise (already times noise_w) on entry. Outputs: logw [T], dur [T],
// off [T + 1] (off[T] = frames). Bounded as the CPU's `durations`: at most MAX_TOKEN_FRAMES
// per token and MAX_SENTENCE_FRAMES in all (every duration scaled down alike).
STAGE void sdp_body(Grid g, const float* xenc, int T, const float* const* P, float* z, float* A,
                    float* B, float* G, float* logw, int* dur, int* off, float length_scale) {
    float* sm = dsm;
    // pre: A = pre_w xenc + pre_b, in (32-column, 64-row) items.
    {
        int ntile = (T + 31) / 32, ngroup = (DPF + 63) / 64;
        for (int item = g.b; item < ntile * ngroup; item += g.nb) {
            int t0 = (item / ngroup) * 32, r0 = (item % ngroup) * 64;
            int nc = min(32, T - t0), nr = min(64, DPF - r0);
            __syncthreads();
            for (int i = threadIdx.x; i < H * 32; i += NT) {
                int c = i / 32, j = i % 32;
                sm[i] = j < nc ? xenc[(size_t)c * T + t0 + j] : 0.f;
            }
            __syncthreads();
            conv_smem(sm, 32, H, P[0] + (size_t)r0 * H, P[1] + r0, 1, 1, nr, nc,
                      [&](int r, int col, float v) { A[(size_t)(r0 + r) * T + t0 + col] = v; },
                      1.f, wsm);
        }
    }
    grid_sync(g);
    int dil = 1;
    for (int i = 0; i < DDS_L; ++i) {
        const float* cur = (i & 1) ? B : A;
        float* nxt = (i & 1) ? A : B;
        dds_layer(g, cur, nxt, T, P, P_MAIN, i, dil, sm, i == DDS_L - 1 ? 1 : 0, P_PROJ, G,
                  nullptr);
        grid_sync(g);
        dil *= DPK;
    }
    int p = 0;  // physical row of logical z[0] (Flip swaps the two rows)
    for (int f = 0; f < NFLOWS; ++f) {
        p ^= 1;
        int base = P_FLOW(f);
        const float* z0 = z + (size_t)p * T;
        float* z1 = z + (size_t)(1 - p) * T;
        const float* pw = P[base];
        const float* pb = P[base + 1];
        for (int i = g.b * NT + threadIdx.x; i < DPF * T; i += g.nb * NT) {
            int c = i / T, t = i % T;
            A[i] = (pb[c] + pw[c] * z0[t]) + G[i];
        }
        grid_sync(g);
        int d = 1;
        for (int i = 0; i < DDS_L; ++i) {
            const float* cur = (i & 1) ? B : A;
            float* nxt = (i & 1) ? A : B;
            dds_layer(g, cur, nxt, T, P, base + 2, i, d, sm, i == DDS_L - 1 ? 2 : 0,
                      base + 2 + 8 * DDS_L, nullptr, z1);
            grid_sync(g);
            d *= DPK;
        }
    }
    p ^= 1;
    const float m0 = P[P_AFFINE][0];
    const float s0 = exp_r(-P[P_AFFINE + 1][0]);
    for (int t = g.b * NT + threadIdx.x; t < T; t += g.nb * NT) {
        float l = (z[(size_t)p * T + t] - m0) * s0;
        logw[t] = l;
        float w = ceilf(exp_r(l) * length_scale);
        dur[t] = (isfinite(w) && w > 0.f) ? (int)fminf(w, (float)MAX_TOKEN_FRAMES) : 0;
    }
    grid_sync(g);
    // Frame offsets: block 0 scans the durations.
    if (g.b == 0) {
        scan_durations(dur, off, T, sm);
        const long long total = off[T];
        if (total > MAX_SENTENCE_FRAMES) {
            for (int t = threadIdx.x; t < T; t += NT)
                dur[t] = (int)((long long)dur[t] * MAX_SENTENCE_FRAMES / total);
            __syncthreads();
            scan_durations(dur, off, T, sm);
        }
    }
}

#ifndef HARK_PERSISTENT_MODULE  // the graph path's kernel
extern "C" __global__ void __launch_bounds__(NT)
sdp(const float* xenc, int T, const float* const* P, float* z, float* A, float* B, float* G,
    float* logw, int* dur, int* off, float length_scale, unsigned* bar) {
    sdp_body(hw_grid(bar), xenc, T, P, z, A, B, G, logw, dur, off, length_scale);
}
#endif
