// Text encoder: embedding, then per layer the fused attention block (a) and FFN block (b).
// Front half stays f32 (weights and math): f16 here changes durations (see issue 3).
// Defines: H (hidden), NHEADS, KCH (H / NHEADS), WIN (relative window), FFN_F, FFN_K, CI.
#include "common.cuh"

STAGE void enc_embed_body(Grid g, const int* ids, const float* emb, float* x, int T) {
    for (int i = g.b * NT + threadIdx.x; i < H * T; i += g.nb * NT) {
        int c = i / T, t = i % T;
        x[i] = emb[(size_t)ids[t] * H + c] * sqrtf((float)H);
    }
}

#ifndef HARK_PERSISTENT_MODULE  // the graph path's kernel
extern "C" __global__ void __launch_bounds__(NT)
enc_embed(const int* ids, const float* emb, float* x, int T) {
    enc_embed_body(hw_grid(nullptr), ids, emb, x, T);
}
#endif

#define QKV_TC 32   // columns per phase-1 work item
#define QKV_RG 64   // rows per phase-1 work item

// (a) q/k/v projection, relative-position attention, softmax, output projection, residual
// and LayerNorm: one cooperative kernel, a grid barrier between projection and attention.
// x [H, T] is updated in place; qkv [3H, T] is scratch.
STAGE void enc_attn_body(Grid g, float* x, int T, const float* wqkv, const float* bqkv,
                         const float* ek, const float* ev, const float* wo, const float* bo,
                         const float* gamma, const float* beta, float* qkv) {
    float* sm = dsm;
    // Phase 1: qkv = Wqkv x + b (1x1 convs), in (column tile, row group) items.
    int ntile = (T + QKV_TC - 1) / QKV_TC, ngroup = 3 * H / QKV_RG;
    for (int item = g.b; item < ntile * ngroup; item += g.nb) {
        int t0 = (item / ngroup) * QKV_TC, r0 = (item % ngroup) * QKV_RG;
        int nc = min(QKV_TC, T - t0);
        __syncthreads();
        for (int i = threadIdx.x; i < H * QKV_TC; i += NT) {
            int c = i / QKV_TC, j = i % QKV_TC;
            sm[i] = j < nc ? x[c * T + t0 + j] : 0.f;
        }
        __syncthreads();
        conv_smem(sm, QKV_TC, H, wqkv + (size_t)r0 * H, bqkv + r0, 1, 1, QKV_RG, nc,
                  [&](int r, int col, float v) { qkv[(size_t)(r0 + r) * T + t0 + col] = v; }, 1.f, wsm);
    }
    grid_sync(g);

    // Phase 2: one query column per item.
    float* q = sm;              // H, pre-scaled by 1/sqrt(KCH)
    float* att = q + H;         // H
    float* y = att + H;         // H
    float* red = y + H;         // NWARP
    float* sc = red + NWARP;    // NHEADS * T
    const float inv = 1.f / sqrtf((float)KCH);
    const float* kk = qkv + (size_t)H * T;
    const float* vv = qkv + (size_t)2 * H * T;
    for (int i = g.b; i < T; i += g.nb) {
        __syncthreads();
        for (int c = threadIdx.x; c < H; c += NT) q[c] = qkv[(size_t)c * T + i] * inv;
        __syncthreads();
        for (int h = 0; h < NHEADS; ++h) {
            const float* qh = q + h * KCH;
            for (int j = threadIdx.x; j < T; j += NT) {
                float s = 0.f;
                for (int c = 0; c < KCH; ++c) s += qh[c] * kk[(size_t)(h * KCH + c) * T + j];
                int off = j - i;
                if (off >= -WIN && off <= WIN) {
                    const float* e = ek + (off + WIN) * KCH;
                    float r = 0.f;
                    for (int c = 0; c < KCH; ++c) r += qh[c] * e[c];
                    s += r;
                }
                sc[h * T + j] = s;
            }
        }
        __syncthreads();
        for (int h = 0; h < NHEADS; ++h) {
            float* s = sc + h * T;
            float m = -INFINITY;
            for (int j = threadIdx.x; j < T; j += NT) m = fmaxf(m, s[j]);
            m = block_max(m, red);
            float sum = 0.f;
            for (int j = threadIdx.x; j < T; j += NT) {
                float e = expf(s[j] - m);
                s[j] = e;
                sum += e;
            }
            sum = block_sum(sum, red);
            float is = 1.f / sum;
            for (int j = threadIdx.x; j < T; j += NT) s[j] *= is;
        }
        __syncthreads();
        int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
        for (int c = w; c < H; c += NWARP) {
            int h = c / KCH;
            const float* p = sc + h * T;
            const float* vr = vv + (size_t)c * T;
            float s = 0.f;
            for (int j = lane; j < T; j += 32) s += p[j] * vr[j];
            s = warp_sum(s);
            if (lane == 0) {
                for (int r = 0; r <= 2 * WIN; ++r) {
                    int j = i + r - WIN;
                    if (j >= 0 && j < T) s += p[j] * ev[r * KCH + (c % KCH)];
                }
                att[c] = s;
            }
        }
        __syncthreads();
        for (int r = w; r < H; r += NWARP) {
            float s = 0.f;
            for (int c = lane; c < H; c += 32) s += wo[(size_t)r * H + c] * att[c];
            s = warp_sum(s);
            if (lane == 0) y[r] = x[(size_t)r * T + i] + (bo[r] + s);
        }
        __syncthreads();
        ln_columns(y, H, 1, 1, gamma, beta, false);
        for (int r = threadIdx.x; r < H; r += NT) x[(size_t)r * T + i] = y[r];
    }
}

#ifndef HARK_PERSISTENT_MODULE  // the graph path's kernel
extern "C" __global__ void __launch_bounds__(NT)
enc_attn(float* x, int T, const float* wqkv, const float* bqkv, const float* ek, const float* ev,
         const float* wo, const float* bo, const float* gamma, const float* beta, float* qkv,
         unsigned* bar) {
    enc_attn_body(hw_grid(bar), x, T, wqkv, bqkv, ek, ev, wo, bo, gamma, beta, qkv);
}
#endif

#define FFN_TC1 16   // phase-1 columns per item (small items: ~100 of them for 20 words)
#define FFN_RG1 64   // phase-1 rows per item
#define FFN_TC2 8    // phase-2 columns per item

// (b) conv k3 + ReLU, conv k3, residual, LayerNorm: one cooperative kernel, grid barriers
// between the convs and before the LayerNorm (so the second conv spreads over row groups too).
// With proj_w set (last layer) it also writes m_p and logs_p. ybuf [H, T] is scratch.
STAGE void enc_ffn_body(Grid g, float* x, int T, const float* w1, const float* b1,
                        const float* w2, const float* b2, const float* gamma, const float* beta,
                        float* hbuf, float* ybuf, const float* proj_w, const float* proj_b,
                        float* m_p, float* logs_p) {
    float* sm = dsm;
    const int pad = (FFN_K - 1) / 2;
    const int ld1 = FFN_TC1 + FFN_K - 1;
    int ntile = (T + FFN_TC1 - 1) / FFN_TC1, ngroup = FFN_F / FFN_RG1;
    for (int item = g.b; item < ntile * ngroup; item += g.nb) {
        int t0 = (item / ngroup) * FFN_TC1, r0 = (item % ngroup) * FFN_RG1;
        int nc = min(FFN_TC1, T - t0);
        __syncthreads();
        for (int i = threadIdx.x; i < H * ld1; i += NT) {
            int c = i / ld1, t = t0 - pad + i % ld1;
            sm[i] = (t >= 0 && t < T) ? x[c * T + t] : 0.f;
        }
        __syncthreads();
        conv_smem(sm, ld1, H, w1 + (size_t)r0 * H * FFN_K, b1 + r0, FFN_K, 1, FFN_RG1, nc,
                  [&](int r, int col, float v) {
                      hbuf[(size_t)(r0 + r) * T + t0 + col] = fmaxf(v, 0.f);
                  },
                  1.f, wsm);
    }
    grid_sync(g);

    // Phase 2a: y = x + conv2(h) + b2 into ybuf, in (column tile, 64-row group) items.
    const int ld2 = FFN_TC2 + FFN_K - 1;
    const int ngroup2 = H / 64;
    int ntile2 = (T + FFN_TC2 - 1) / FFN_TC2;
    for (int item = g.b; item < ntile2 * ngroup2; item += g.nb) {
        int t0 = (item / ngroup2) * FFN_TC2, r0 = (item % ngroup2) * 64;
        int nc = min(FFN_TC2, T - t0);
        __syncthreads();
        for (int i = threadIdx.x; i < FFN_F * ld2; i += NT) {
            int c = i / ld2, t = t0 - pad + i % ld2;
            sm[i] = (t >= 0 && t < T) ? hbuf[(size_t)c * T + t] : 0.f;
        }
        __syncthreads();
        conv_smem(sm, ld2, FFN_F, w2 + (size_t)r0 * FFN_F * FFN_K, b2 + r0, FFN_K, 1, 64, nc,
                  [&](int r, int col, float v) {
                      size_t q = (size_t)(r0 + r) * T + t0 + col;
                      ybuf[q] = x[q] + v;
                  },
                  1.f, wsm);
    }
    grid_sync(g);
    // Phase 2b: LayerNorm per column (and the projection to m_p, logs_p after the last layer).
    float* ys = sm;  // H * FFN_TC2
    for (int t0 = g.b * FFN_TC2; t0 < T; t0 += g.nb * FFN_TC2) {
        int nc = min(FFN_TC2, T - t0);
        __syncthreads();
        for (int i = threadIdx.x; i < H * FFN_TC2; i += NT) {
            int r = i / FFN_TC2, col = i % FFN_TC2;
            ys[i] = col < nc ? ybuf[(size_t)r * T + t0 + col] : 0.f;
        }
        __syncthreads();
        ln_columns(ys, H, FFN_TC2, nc, gamma, beta, false);
        for (int i = threadIdx.x; i < H * FFN_TC2; i += NT) {
            int r = i / FFN_TC2, col = i % FFN_TC2;
            if (col < nc) x[(size_t)r * T + t0 + col] = ys[i];
        }
        if (proj_w) {
            conv_smem(ys, FFN_TC2, H, proj_w, proj_b, 1, 1, 2 * CI, nc,
                      [&](int r, int col, float v) {
                          if (r < CI) m_p[(size_t)r * T + t0 + col] = v;
                          else logs_p[(size_t)(r - CI) * T + t0 + col] = v;
                      },
                      1.f, wsm);
        }
    }
}

#ifndef HARK_PERSISTENT_MODULE  // the graph path's kernel
extern "C" __global__ void __launch_bounds__(NT)
enc_ffn(float* x, int T, const float* w1, const float* b1, const float* w2, const float* b2,
        const float* gamma, const float* beta, float* hbuf, float* ybuf, unsigned* bar,
        const float* proj_w, const float* proj_b, float* m_p, float* logs_p) {
    enc_ffn_body(hw_grid(bar), x, T, w1, b1, w2, b2, gamma, beta, hbuf, ybuf, proj_w, proj_b,
                 m_p, logs_p);
}
#endif
