//! VITS text encoder (`enc_p`): embedding × √H, post-LN transformer layers with windowed
//! relative-position attention and a convolutional FFN, then `proj` → (m_p, logs_p).
//!
//! Batch 1 without padding, so every mask is all ones and is not applied.

use super::ops::{conv1d, layer_norm_channels, matmul, relu};
use super::winograd::{conv1d_auto, tile_outputs};
use super::{ModelError, Result};
use hark_voice::tensor::Tensor;
use hark_voice::{ModelDims, Weights};

const LN_EPS: f32 = 1e-5;

pub struct EncoderOut {
    /// Encoder output `[H, T]` (the SDP's input).
    pub x: Tensor,
    /// Prior means `[C, T]`.
    pub m_p: Tensor,
    /// Prior log standard deviations `[C, T]`.
    pub logs_p: Tensor,
}

/// Whether the FFN's convolutions (Joe: 192 → 768 → 192, K = 3) run on Winograd's F(4, 3)
/// ([`super::winograd::conv1d_auto`]: 6 products per 4 outputs instead of 12, weights
/// transformed at each call; kept per voice they took 42 MB).
pub struct EncoderPacks {
    tile: usize,
}

impl EncoderPacks {
    /// `None` when the FFN's kernel has no Winograd form here (K > 7).
    pub fn new(_w: &Weights, d: &ModelDims) -> Result<Option<Self>> {
        Ok(tile_outputs(d.ffn_kernel_size).map(|tile| Self { tile }))
    }
}

/// Runs the text encoder on phoneme ids. Errors on empty ids, ids outside the vocabulary, and
/// weights missing or of the wrong shape.
pub fn text_encoder(w: &Weights, d: &ModelDims, ids: &[i64]) -> Result<EncoderOut> {
    text_encoder_packed(w, d, None, ids)
}

/// [`text_encoder`] with the FFN's convolutions on `packs` when given.
pub fn text_encoder_packed(
    w: &Weights,
    d: &ModelDims,
    packs: Option<&EncoderPacks>,
    ids: &[i64],
) -> Result<EncoderOut> {
    if ids.is_empty() {
        return Err(ModelError::Input("no phoneme ids".into()));
    }
    let h = d.hidden_channels;
    let t = ids.len();
    let emb = w.get_shaped("enc_p.emb.weight", &[d.n_vocab, h])?;
    if let Some(&bad) = ids.iter().find(|&&i| i < 0 || i as usize >= d.n_vocab) {
        return Err(ModelError::Input(format!(
            "phoneme id {bad} is outside the vocabulary 0..{}",
            d.n_vocab
        )));
    }
    if d.n_heads == 0 || !h.is_multiple_of(d.n_heads) {
        return Err(ModelError::Input(format!(
            "{h} channels do not split into {} heads",
            d.n_heads
        )));
    }
    if d.ffn_kernel_size.is_multiple_of(2) {
        return Err(ModelError::Input(format!(
            "even FFN kernel size {} is not supported",
            d.ffn_kernel_size
        )));
    }

    // Embedding, scaled, channels-first.
    let scale = (h as f32).sqrt();
    let mut x = Tensor::zeros(vec![h, t]);
    for (ti, &id) in ids.iter().enumerate() {
        for (c, &v) in emb.row(id as usize).iter().enumerate() {
            x.data[c * t + ti] = v * scale;
        }
    }

    let k_ch = h / d.n_heads;
    let nrel = 2 * d.window_size + 1;
    let (f, k) = (d.filter_channels, d.ffn_kernel_size);
    for l in 0..d.n_layers {
        let p = |s: &str| format!("enc_p.encoder.attn_layers.{l}.{s}");
        let conv = |name: &str, cin: usize, cout: usize, kk: usize| -> Result<(&Tensor, &Tensor)> {
            Ok((
                w.get_shaped(&format!("{name}.weight"), &[cout, cin, kk])?,
                w.get_shaped(&format!("{name}.bias"), &[cout])?,
            ))
        };
        let (qw, qb) = conv(&p("conv_q"), h, h, 1)?;
        let (kw, kb) = conv(&p("conv_k"), h, h, 1)?;
        let (vw, vb) = conv(&p("conv_v"), h, h, 1)?;
        let (ow, ob) = conv(&p("conv_o"), h, h, 1)?;
        let emb_k = w.get_shaped(&p("emb_rel_k"), &[1, nrel, k_ch])?;
        let emb_v = w.get_shaped(&p("emb_rel_v"), &[1, nrel, k_ch])?;

        let q = conv1d(&x, qw, Some(qb), 0, 1);
        let kk = conv1d(&x, kw, Some(kb), 0, 1);
        let v = conv1d(&x, vw, Some(vb), 0, 1);
        let a = relative_attention(
            &q,
            &kk,
            &v,
            d.n_heads,
            d.window_size,
            &emb_k.data,
            &emb_v.data,
        );
        let y = conv1d(&a, ow, Some(ob), 0, 1);
        add_into(&mut x, &y);
        let n1 = format!("enc_p.encoder.norm_layers_1.{l}");
        layer_norm_channels(
            &mut x,
            w.get_shaped(&format!("{n1}.gamma"), &[h])?,
            w.get_shaped(&format!("{n1}.beta"), &[h])?,
            LN_EPS,
        );

        let fp = format!("enc_p.encoder.ffn_layers.{l}");
        let (w1, b1) = conv(&format!("{fp}.conv_1"), h, f, k)?;
        let (w2, b2) = conv(&format!("{fp}.conv_2"), f, h, k)?;
        let pad = (k - 1) / 2;
        let tile = packs.map(|p| p.tile);
        let mut y = conv1d_auto(&x, w1, tile, b1, pad);
        relu(&mut y.data);
        let y = conv1d_auto(&y, w2, tile, b2, pad);
        add_into(&mut x, &y);
        let n2 = format!("enc_p.encoder.norm_layers_2.{l}");
        layer_norm_channels(
            &mut x,
            w.get_shaped(&format!("{n2}.gamma"), &[h])?,
            w.get_shaped(&format!("{n2}.beta"), &[h])?,
            LN_EPS,
        );
    }

    let c = d.inter_channels;
    let pw = w.get_shaped("enc_p.proj.weight", &[2 * c, h, 1])?;
    let pb = w.get_shaped("enc_p.proj.bias", &[2 * c])?;
    let stats = conv1d(&x, pw, Some(pb), 0, 1);
    let (m, logs) = stats.data.split_at(c * t);
    Ok(EncoderOut {
        x,
        m_p: Tensor::new(vec![c, t], m.to_vec()),
        logs_p: Tensor::new(vec![c, t], logs.to_vec()),
    })
}

fn add_into(x: &mut Tensor, y: &Tensor) {
    super::ops::add_assign(&mut x.data, &y.data);
}

/// Multi-head attention core with VITS' windowed relative positions, on already projected
/// `q`, `k`, `v` (`[H, T]`, head `h` = channels `h·kc..(h+1)·kc`). `emb_k`/`emb_v` are
/// `[2w+1, kc]`, row `r + w` for offset `r = j − i`, shared by all heads.
///
/// For query `i` and key `j`: `score = (q_i/√kc)·k_j + [|j−i| ≤ w] (q_i/√kc)·emb_k[j−i+w]`;
/// `out_i = Σ_j p_ij v_j + Σ_{|r| ≤ w, 0 ≤ i+r < T} p_{i,i+r} emb_v[r+w]`. Offsets beyond the
/// window contribute no relative term (VITS pads the embeddings with zeros), and offsets that
/// would leave the sequence simply do not exist. Only the 2w+1 window offsets are computed.
pub fn relative_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    n_heads: usize,
    window: usize,
    emb_k: &[f32],
    emb_v: &[f32],
) -> Tensor {
    let (h, t) = (q.dim(0), q.dim(1));
    assert!(
        k.shape == q.shape && v.shape == q.shape,
        "q, k, v shapes differ"
    );
    let kc = h / n_heads;
    let nrel = 2 * window + 1;
    assert_eq!(emb_k.len(), nrel * kc);
    assert_eq!(emb_v.len(), nrel * kc);
    let inv = 1.0 / (kc as f32).sqrt();

    // emb_kᵀ [kc, nrel] for the relative logits.
    let mut emb_k_t = vec![0.0f32; kc * nrel];
    for r in 0..nrel {
        for c in 0..kc {
            emb_k_t[c * nrel + r] = emb_k[r * kc + c];
        }
    }

    // The heads are independent: one task each (their matmuls split further when large).
    use rayon::prelude::*;
    let heads: Vec<Vec<f32>> = (0..n_heads)
        .into_par_iter()
        .map(|head| {
            let rows = head * kc..(head + 1) * kc;
            // q_h/√kc as [T, kc]; k_h as [kc, T]; v_h as [T, kc].
            let mut qt = vec![0.0f32; t * kc];
            let mut vt = vec![0.0f32; t * kc];
            for (c, ch) in rows.clone().enumerate() {
                for i in 0..t {
                    qt[i * kc + c] = q.data[ch * t + i] * inv;
                    vt[i * kc + c] = v.data[ch * t + i];
                }
            }
            let kh = &k.data[rows.start * t..rows.end * t];
            let mut scores = matmul(&qt, kh, t, kc, t); // [T, T]
            let rel = matmul(&qt, &emb_k_t, t, kc, nrel); // [T, 2w+1]
            for i in 0..t {
                let row = &mut scores[i * t..(i + 1) * t];
                for r in 0..nrel {
                    let j = i as isize + r as isize - window as isize;
                    if j >= 0 && (j as usize) < t {
                        row[j as usize] += rel[i * nrel + r];
                    }
                }
                super::vmath::softmax_in_place(row);
            }
            let mut o = matmul(&scores, &vt, t, t, kc); // [T, kc]
            for i in 0..t {
                let oi = &mut o[i * kc..(i + 1) * kc];
                for r in 0..nrel {
                    let j = i as isize + r as isize - window as isize;
                    if j >= 0 && (j as usize) < t {
                        let p = scores[i * t + j as usize];
                        for (ov, &e) in oi.iter_mut().zip(&emb_v[r * kc..(r + 1) * kc]) {
                            *ov += p * e;
                        }
                    }
                }
            }
            o
        })
        .collect();
    let mut out = Tensor::zeros(vec![h, t]);
    for (head, o) in heads.iter().enumerate() {
        for c in 0..kc {
            let row = out.row_mut(head * kc + c);
            for (i, dst) in row.iter_mut().enumerate() {
                *dst = o[i * kc + c];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hark_voice::tensor::rel_l2;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::collections::HashMap;

    fn rand_vec(rng: &mut ChaCha8Rng, n: usize, scale: f32) -> Vec<f32> {
        (0..n)
            .map(|_| rng.random_range(-1.0f32..1.0) * scale)
            .collect()
    }

    /// Dense reference: build the full T×T relative bias matrices from the definition, in f64.
    fn dense_reference(
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        heads: usize,
        w: usize,
        ek: &[f32],
        ev: &[f32],
    ) -> Vec<f32> {
        let (h, t) = (q.dim(0), q.dim(1));
        let kc = h / heads;
        let mut out = vec![0.0f32; h * t];
        let at = |x: &Tensor, c: usize, i: usize| x.data[c * t + i] as f64;
        for hd in 0..heads {
            for i in 0..t {
                let mut s = vec![0.0f64; t];
                for (j, sj) in s.iter_mut().enumerate() {
                    let off = j as isize - i as isize;
                    for c in 0..kc {
                        let qv = at(q, hd * kc + c, i) / (kc as f64).sqrt();
                        *sj += qv * at(k, hd * kc + c, j);
                        if off.unsigned_abs() <= w {
                            *sj += qv * ek[(off + w as isize) as usize * kc + c] as f64;
                        }
                    }
                }
                let m = s.iter().cloned().fold(f64::MIN, f64::max);
                let z: f64 = s.iter().map(|x| (x - m).exp()).sum();
                let p: Vec<f64> = s.iter().map(|x| (x - m).exp() / z).collect();
                for c in 0..kc {
                    let mut acc = 0.0;
                    for (j, &pj) in p.iter().enumerate() {
                        acc += pj * at(v, hd * kc + c, j);
                        let off = j as isize - i as isize;
                        if off.unsigned_abs() <= w {
                            acc += pj * ev[(off + w as isize) as usize * kc + c] as f64;
                        }
                    }
                    out[(hd * kc + c) * t + i] = acc as f32;
                }
            }
        }
        out
    }

    #[test]
    fn relative_attention_matches_dense_definition() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // T below, at and above the window, to exercise the sequence edges.
        for &(h, heads, t, w) in &[
            (8, 2, 1, 4),
            (8, 2, 3, 4),
            (6, 3, 5, 4),
            (8, 2, 12, 4),
            (4, 1, 9, 2),
        ] {
            let q = Tensor::new(vec![h, t], rand_vec(&mut rng, h * t, 2.0));
            let k = Tensor::new(vec![h, t], rand_vec(&mut rng, h * t, 2.0));
            let v = Tensor::new(vec![h, t], rand_vec(&mut rng, h * t, 1.0));
            let kc = h / heads;
            let ek = rand_vec(&mut rng, (2 * w + 1) * kc, 1.0);
            let ev = rand_vec(&mut rng, (2 * w + 1) * kc, 1.0);
            let got = relative_attention(&q, &k, &v, heads, w, &ek, &ev);
            let want = dense_reference(&q, &k, &v, heads, w, &ek, &ev);
            let e = rel_l2(&got.data, &want);
            assert!(e < 1e-5, "h{h} heads{heads} t{t} w{w}: rel err {e}");
        }
    }

    fn dims(h: usize, f: usize, heads: usize, layers: usize, vocab: usize, c: usize) -> ModelDims {
        ModelDims {
            n_vocab: vocab,
            hidden_channels: h,
            filter_channels: f,
            n_heads: heads,
            n_layers: layers,
            window_size: 2,
            inter_channels: c,
            dp_filter_channels: h,
            upsample_initial_channel: 8,
            upsample_rates: vec![2],
            upsample_kernel_sizes: vec![4],
            resblock_kernel_sizes: vec![3],
            resblock_dilation_sizes: vec![vec![1]],
            ..ModelDims::piper_medium()
        }
    }

    fn random_encoder_weights(d: &ModelDims, seed: u64) -> Weights {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (h, f, k, c) = (
            d.hidden_channels,
            d.filter_channels,
            d.ffn_kernel_size,
            d.inter_channels,
        );
        let kc = h / d.n_heads;
        let mut m = HashMap::new();
        let mut put = |name: String, shape: Vec<usize>, scale: f32, rng: &mut ChaCha8Rng| {
            let n = shape.iter().product();
            m.insert(name, Tensor::new(shape, rand_vec(rng, n, scale)));
        };
        put("enc_p.emb.weight".into(), vec![d.n_vocab, h], 0.3, &mut rng);
        for l in 0..d.n_layers {
            let a = format!("enc_p.encoder.attn_layers.{l}");
            for n in ["conv_q", "conv_k", "conv_v", "conv_o"] {
                put(format!("{a}.{n}.weight"), vec![h, h, 1], 0.3, &mut rng);
                put(format!("{a}.{n}.bias"), vec![h], 0.1, &mut rng);
            }
            put(
                format!("{a}.emb_rel_k"),
                vec![1, 2 * d.window_size + 1, kc],
                0.5,
                &mut rng,
            );
            put(
                format!("{a}.emb_rel_v"),
                vec![1, 2 * d.window_size + 1, kc],
                0.5,
                &mut rng,
            );
            let fp = format!("enc_p.encoder.ffn_layers.{l}");
            put(format!("{fp}.conv_1.weight"), vec![f, h, k], 0.2, &mut rng);
            put(format!("{fp}.conv_1.bias"), vec![f], 0.1, &mut rng);
            put(format!("{fp}.conv_2.weight"), vec![h, f, k], 0.2, &mut rng);
            put(format!("{fp}.conv_2.bias"), vec![h], 0.1, &mut rng);
            for n in ["norm_layers_1", "norm_layers_2"] {
                put(
                    format!("enc_p.encoder.{n}.{l}.gamma"),
                    vec![h],
                    1.0,
                    &mut rng,
                );
                put(
                    format!("enc_p.encoder.{n}.{l}.beta"),
                    vec![h],
                    0.1,
                    &mut rng,
                );
            }
        }
        put("enc_p.proj.weight".into(), vec![2 * c, h, 1], 0.3, &mut rng);
        put("enc_p.proj.bias".into(), vec![2 * c], 0.1, &mut rng);
        Weights::from_map(m)
    }

    /// The whole encoder, written straightforwardly in f64 from the VITS definition.
    fn encoder_reference(w: &Weights, d: &ModelDims, ids: &[i64]) -> (Vec<f64>, Vec<f64>) {
        let (h, t, f, k) = (
            d.hidden_channels,
            ids.len(),
            d.filter_channels,
            d.ffn_kernel_size,
        );
        let g = |n: &str| {
            w.get(n)
                .unwrap()
                .data
                .iter()
                .map(|&v| v as f64)
                .collect::<Vec<f64>>()
        };
        let conv = |x: &[f64], cin: usize, name: &str, cout: usize, kk: usize| -> Vec<f64> {
            let (wt, b) = (g(&format!("{name}.weight")), g(&format!("{name}.bias")));
            let pad = (kk - 1) as isize / 2;
            let mut y = vec![0.0; cout * t];
            for co in 0..cout {
                for o in 0..t {
                    let mut acc = b[co];
                    for ci in 0..cin {
                        for tap in 0..kk {
                            let i = o as isize + tap as isize - pad;
                            if i >= 0 && (i as usize) < t {
                                acc += wt[(co * cin + ci) * kk + tap] * x[ci * t + i as usize];
                            }
                        }
                    }
                    y[co * t + o] = acc;
                }
            }
            y
        };
        let ln = |x: &mut [f64], name: &str| {
            let (gm, bt) = (g(&format!("{name}.gamma")), g(&format!("{name}.beta")));
            for o in 0..t {
                let mean: f64 = (0..h).map(|c| x[c * t + o]).sum::<f64>() / h as f64;
                let var: f64 =
                    (0..h).map(|c| (x[c * t + o] - mean).powi(2)).sum::<f64>() / h as f64;
                for c in 0..h {
                    x[c * t + o] = (x[c * t + o] - mean) / (var + 1e-5).sqrt() * gm[c] + bt[c];
                }
            }
        };
        let emb = g("enc_p.emb.weight");
        let mut x = vec![0.0; h * t];
        for (i, &id) in ids.iter().enumerate() {
            for c in 0..h {
                x[c * t + i] = emb[id as usize * h + c] * (h as f64).sqrt();
            }
        }
        let to_t = |v: &[f64]| Tensor::new(vec![h, t], v.iter().map(|&x| x as f32).collect());
        for l in 0..d.n_layers {
            let a = format!("enc_p.encoder.attn_layers.{l}");
            let q = conv(&x, h, &format!("{a}.conv_q"), h, 1);
            let kk = conv(&x, h, &format!("{a}.conv_k"), h, 1);
            let v = conv(&x, h, &format!("{a}.conv_v"), h, 1);
            let ek = &w.get(&format!("{a}.emb_rel_k")).unwrap().data;
            let ev = &w.get(&format!("{a}.emb_rel_v")).unwrap().data;
            let att = dense_reference(
                &to_t(&q),
                &to_t(&kk),
                &to_t(&v),
                d.n_heads,
                d.window_size,
                ek,
                ev,
            );
            let att: Vec<f64> = att.iter().map(|&v| v as f64).collect();
            let y = conv(&att, h, &format!("{a}.conv_o"), h, 1);
            x.iter_mut().zip(&y).for_each(|(a, b)| *a += b);
            ln(&mut x, &format!("enc_p.encoder.norm_layers_1.{l}"));
            let fp = format!("enc_p.encoder.ffn_layers.{l}");
            let mut y = conv(&x, h, &format!("{fp}.conv_1"), f, k);
            y.iter_mut().for_each(|v| *v = v.max(0.0));
            let y = conv(&y, f, &format!("{fp}.conv_2"), h, k);
            x.iter_mut().zip(&y).for_each(|(a, b)| *a += b);
            ln(&mut x, &format!("enc_p.encoder.norm_layers_2.{l}"));
        }
        let stats = conv(&x, h, "enc_p.proj", 2 * d.inter_channels, 1);
        (x, stats)
    }

    #[test]
    fn encoder_matches_f64_reference() {
        let d = dims(8, 16, 2, 2, 11, 4);
        let w = random_encoder_weights(&d, 3);
        for ids in [
            vec![5i64],
            vec![1, 0, 7, 0, 2],
            vec![3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7],
        ] {
            let out = text_encoder(&w, &d, &ids).unwrap();
            let (x, stats) = encoder_reference(&w, &d, &ids);
            let xs: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let ss: Vec<f32> = stats.iter().map(|&v| v as f32).collect();
            let t = ids.len();
            let c = d.inter_channels;
            assert_eq!(out.x.shape, vec![8, t]);
            assert!(rel_l2(&out.x.data, &xs) < 1e-5);
            assert!(rel_l2(&out.m_p.data, &ss[..c * t]) < 1e-5);
            assert!(rel_l2(&out.logs_p.data, &ss[c * t..]) < 1e-5);
        }
    }

    #[test]
    fn encoder_rejects_bad_ids() {
        let d = dims(8, 16, 2, 1, 11, 4);
        let w = random_encoder_weights(&d, 4);
        assert!(matches!(
            text_encoder(&w, &d, &[]),
            Err(ModelError::Input(_))
        ));
        assert!(matches!(
            text_encoder(&w, &d, &[1, 11]),
            Err(ModelError::Input(_))
        ));
        assert!(matches!(
            text_encoder(&w, &d, &[-1]),
            Err(ModelError::Input(_))
        ));
        assert!(matches!(
            text_encoder(&Weights::default(), &d, &[1]),
            Err(ModelError::Weights(_))
        ));
    }
}
