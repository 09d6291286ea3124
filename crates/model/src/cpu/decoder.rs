//! HiFi-GAN decoder (Piper's `Generator`, resblock type "2"): z `[C, F]` → audio
//! `F · hop` samples, plus the windowed flow+decoder used for streaming.

use super::flow::{FlowPacks, check_input, flow_reverse_cols_packed};
use super::ops::conv1d_fused;
use super::polyphase::Polyphase;
use super::upsample::{PostConv, ResConv, Stage};
use super::vmath::tanh_in_place;
use super::winograd::{Winograd, conv1d_auto, tile_outputs};
use super::{CancelFn, ModelError, NEVER, Result, check_cancel};
use hark_voice::tensor::Tensor;
use hark_voice::{ModelDims, Weights};
use std::ops::Range;

/// Slope of the LeakyReLUs inside the decoder (HiFi-GAN's `LRELU_SLOPE`).
const LRELU_SLOPE: f32 = 0.1;
/// Slope of the final LeakyReLU before `conv_post` (`F.leaky_relu`'s default).
const FINAL_SLOPE: f32 = 0.01;

fn stage_channels(d: &ModelDims, stage: usize) -> usize {
    d.upsample_initial_channel >> (stage + 1)
}

fn check_decoder_dims(d: &ModelDims) -> Result<()> {
    let n = d.upsample_rates.len();
    let nk = d.resblock_kernel_sizes.len();
    let ok = n > 0
        && d.upsample_kernel_sizes.len() == n
        && nk > 0
        && d.resblock_dilation_sizes.len() == nk
        && d.upsample_initial_channel >> n > 0
        && d.upsample_rates.iter().all(|&r| r > 0)
        && d.upsample_rates
            .iter()
            .zip(&d.upsample_kernel_sizes)
            .all(|(&r, &k)| k >= r && (k - r) % 2 == 0)
        && d.resblock_kernel_sizes.iter().all(|&k| k % 2 == 1)
        && d.dec_pre_kernel_size % 2 == 1
        && d.dec_post_kernel_size % 2 == 1;
    if !ok {
        return Err(ModelError::Input(format!(
            "decoder dimensions are inconsistent: rates {:?}, kernels {:?}, resblocks {:?} {:?}",
            d.upsample_rates,
            d.upsample_kernel_sizes,
            d.resblock_kernel_sizes,
            d.resblock_dilation_sizes
        )));
    }
    Ok(())
}

/// ResBlock2 number `index` (`dec.resblocks.{index}`, kernel
/// `resblock_kernel_sizes[index % n]`): for each dilation, `x ← x + conv(LReLU₀.₁(x))` with
/// "same" zero padding. `x [C, T]` → `[C, T]`.
pub fn resblock2(w: &Weights, d: &ModelDims, index: usize, x: &Tensor) -> Result<Tensor> {
    check_decoder_dims(d)?;
    let nk = d.resblock_kernel_sizes.len();
    let stage = index / nk;
    if stage >= d.upsample_rates.len() {
        return Err(ModelError::Input(format!(
            "resblock {index} does not exist"
        )));
    }
    let ch = stage_channels(d, stage);
    check_input(x, ch, "resblock2")?;
    let k = d.resblock_kernel_sizes[index % nk];
    let mut cur: Option<Tensor> = None;
    for (j, &dil) in d.resblock_dilation_sizes[index % nk].iter().enumerate() {
        let cw = w.get_shaped(
            &format!("dec.resblocks.{index}.convs.{j}.weight"),
            &[ch, ch, k],
        )?;
        let cb = w.get_shaped(&format!("dec.resblocks.{index}.convs.{j}.bias"), &[ch])?;
        let xin = cur.as_ref().unwrap_or(x);
        // x + conv(lrelu(x)), fused.
        let pad = dil * (k - 1) / 2;
        cur = Some(conv1d_fused(
            xin,
            cw,
            Some(cb),
            pad,
            dil,
            Some(LRELU_SLOPE),
            Some(xin),
        ));
    }
    Ok(cur.unwrap_or_else(|| x.clone()))
}

/// Upsampling stage `stage`: LReLU₀.₁ → ConvTranspose (`dec.ups.{stage}`, stride = rate,
/// padding (k − rate)/2) → mean of the stage's ResBlock2s. `[C, T]` → `[C/2, T · rate]`.
/// Computed fused over time tiles (see [`super::upsample`]); [`resblock2`] is the unfused
/// definition of one block.
pub fn upsample_stage(w: &Weights, d: &ModelDims, stage: usize, x: &Tensor) -> Result<Tensor> {
    let ups = stage_pack(w, d, stage)?;
    Ok(stage_weights(w, d, stage, &ups, None, x)?.run(x, None))
}

/// The decoder's transposed-convolution weights repacked per output phase ([`Polyphase`]),
/// made once per voice rather than at every call: ≈ 0.7 M floats gathered with strides, which
/// took 1–2 ms of one thread at each decode (each streaming chunk) on the 2-core VM.
/// [`DecoderPacks::with_winograd`] adds the ResBlocks' weights for Winograd's algorithm.
pub struct DecoderPacks {
    ups: Vec<Polyphase>,
    /// `[stage][block][conv]`: empty, or `None` where a convolution stays direct.
    res: Vec<Vec<Vec<Option<Winograd>>>>,
}

/// Winograd's algorithm runs the ResBlock convolutions of stages with at least this many
/// channels, and of dilations up to [`WINOGRAD_MAX_DILATION`]. Its transforms cost per
/// channel and its savings per channel pair; a dilated convolution is gathered into its
/// phases first, with `K − 1` columns wasted at each seam. Measured by `fused_speed` on the
/// Zen 4 VM (time against the direct kernel, 320 columns): 128 channels 0.69 (K 3, dil 1),
/// 0.89 (3, 2), 0.70 (5, 2 and 5, 6), 0.85 (7, 3), 1.01 (7, 12); 64 channels 0.85–1.24.
const WINOGRAD_MIN_CHANNELS: usize = 128;
const WINOGRAD_MAX_DILATION: usize = 6;

impl DecoderPacks {
    pub fn new(w: &Weights, d: &ModelDims) -> Result<Self> {
        check_decoder_dims(d)?;
        let ups = (0..d.upsample_rates.len())
            .map(|stage| stage_pack(w, d, stage))
            .collect::<Result<_>>()?;
        Ok(Self {
            ups,
            res: Vec::new(),
        })
    }

    /// [`DecoderPacks::new`] plus the ResBlock convolutions that gain from Winograd's
    /// F(m, K) (F(4, 3), F(4, 5), F(2, 7): 0.5, 0.4 and 0.57 of the direct kernel's
    /// multiply-adds) transformed for it: see [`WINOGRAD_MIN_CHANNELS`].
    pub fn with_winograd(w: &Weights, d: &ModelDims) -> Result<Self> {
        let mut packs = Self::new(w, d)?;
        let nk = d.resblock_kernel_sizes.len();
        packs.res = (0..d.upsample_rates.len())
            .map(|stage| {
                let ch = stage_channels(d, stage);
                (stage * nk..(stage + 1) * nk)
                    .map(|index| {
                        let k = d.resblock_kernel_sizes[index % nk];
                        d.resblock_dilation_sizes[index % nk]
                            .iter()
                            .enumerate()
                            .map(|(j, &dil)| {
                                let name = format!("dec.resblocks.{index}.convs.{j}.weight");
                                let wt = w.get_shaped(&name, &[ch, ch, k])?;
                                let on =
                                    ch >= WINOGRAD_MIN_CHANNELS && dil <= WINOGRAD_MAX_DILATION;
                                Ok(tile_outputs(k).filter(|_| on).map(|m| Winograd::new(wt, m)))
                            })
                            .collect::<Result<Vec<_>>>()
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<_>>()?;
        Ok(packs)
    }
}

/// Stage `stage`'s input and output channels, once the dimensions are checked.
fn stage_io(d: &ModelDims, stage: usize) -> Result<(usize, usize)> {
    check_decoder_dims(d)?;
    if stage >= d.upsample_rates.len() {
        return Err(ModelError::Input(format!(
            "upsample stage {stage} does not exist"
        )));
    }
    Ok((
        d.upsample_initial_channel >> stage,
        stage_channels(d, stage),
    ))
}

/// Stage `stage`'s upsampler, repacked.
fn stage_pack(w: &Weights, d: &ModelDims, stage: usize) -> Result<Polyphase> {
    let (cin, cout) = stage_io(d, stage)?;
    let (rate, k) = (d.upsample_rates[stage], d.upsample_kernel_sizes[stage]);
    let uw = w.get_shaped(&format!("dec.ups.{stage}.weight"), &[cin, cout, k])?;
    Ok(Polyphase::new(uw, rate, (k - rate) / 2))
}

/// The weights of stage `stage`, checked against `x`'s shape.
fn stage_weights<'a>(
    w: &'a Weights,
    d: &ModelDims,
    stage: usize,
    ups: &'a Polyphase,
    wino: Option<&'a [Vec<Option<Winograd>>]>,
    x: &Tensor,
) -> Result<Stage<'a>> {
    let (cin, cout) = stage_io(d, stage)?;
    check_input(x, cin, "upsample_stage")?;
    let ub = w.get_shaped(&format!("dec.ups.{stage}.bias"), &[cout])?;
    let nk = d.resblock_kernel_sizes.len();
    let blocks = (stage * nk..(stage + 1) * nk)
        .map(|index| {
            let k = d.resblock_kernel_sizes[index % nk];
            let block = wino.and_then(|b| b.get(index % nk));
            d.resblock_dilation_sizes[index % nk]
                .iter()
                .enumerate()
                .map(|(j, &dil)| {
                    let p = format!("dec.resblocks.{index}.convs.{j}");
                    Ok(ResConv {
                        w: w.get_shaped(&format!("{p}.weight"), &[cout, cout, k])?,
                        b: w.get_shaped(&format!("{p}.bias"), &[cout])?,
                        dil,
                        wino: block.and_then(|b| b.get(j)).and_then(Option::as_ref),
                    })
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Stage {
        ups,
        ups_b: ub,
        blocks,
        slope: LRELU_SLOPE,
    })
}

/// The whole decoder: `z [C, F]` → `F · hop` samples in [−1, 1].
pub fn decode(w: &Weights, d: &ModelDims, z: &Tensor) -> Result<Vec<f32>> {
    check_input(z, d.inter_channels, "decode")?;
    decode_cols(w, d, z, 0..z.dim(1), NEVER)
}

/// Up to this many frames (11.9 s at 22.05 kHz, hop 256) are decoded in one go; more in
/// windows of [`DECODE_WINDOW_FRAMES`], each with its full receptive field, so the decoder's
/// activations (tens of kB per frame at once) stay bounded: two sentences at the 8,192-frame
/// cap (`--raw --length-scale 20`) peaked at 245 MB for the whole `hark speak --out`. The
/// windows equal the whole decode (bit for bit on the Joe voice: a 110-word sentence of
/// 2,600 frames gives the same WAV as one decode).
pub const DIRECT_DECODE_FRAMES: usize = 1024;
/// Frames per decoder window past [`DIRECT_DECODE_FRAMES`].
pub const DECODE_WINDOW_FRAMES: usize = 256;

/// The decoder's audio for frames `keep` of `z [C, F]`: `keep.len() · hop` samples, equal to
/// that slice of [`decode`]. Between stages the activations are cut to what the rest of the
/// decoder reads for `keep`, so context frames only cost where they are needed. More than
/// [`DIRECT_DECODE_FRAMES`] are decoded window by window.
pub fn decode_cols(
    w: &Weights,
    d: &ModelDims,
    z: &Tensor,
    keep: Range<usize>,
    cancel: CancelFn,
) -> Result<Vec<f32>> {
    decode_cols_packed(w, d, &DecoderPacks::new(w, d)?, z, keep, cancel)
}

/// [`decode_cols`] with the upsamplers already packed (`packs` from the same weights).
pub fn decode_cols_packed(
    w: &Weights,
    d: &ModelDims,
    packs: &DecoderPacks,
    z: &Tensor,
    keep: Range<usize>,
    cancel: CancelFn,
) -> Result<Vec<f32>> {
    check_decoder_dims(d)?;
    check_input(z, d.inter_channels, "decode")?;
    if keep.is_empty() || keep.end > z.dim(1) {
        return Err(ModelError::Input(format!(
            "decode: frames {keep:?} not inside [0, {})",
            z.dim(1)
        )));
    }
    if keep.len() > DIRECT_DECODE_FRAMES {
        let (left, right) = d.decoder_receptive_span();
        let mut audio = Vec::with_capacity(keep.len() * d.samples_per_frame());
        for start in keep.clone().step_by(DECODE_WINDOW_FRAMES) {
            let end = (start + DECODE_WINDOW_FRAMES).min(keep.end);
            let (lo, hi) = (start.saturating_sub(left), (end + right).min(z.dim(1)));
            let part = z.cols(lo..hi);
            audio.extend(decode_cols_packed(
                w,
                d,
                packs,
                &part,
                start - lo..end - lo,
                cancel,
            )?);
        }
        return Ok(audio);
    }
    let u = d.upsample_initial_channel;
    let kp = d.dec_pre_kernel_size;
    let pre_w = w.get_shaped("dec.conv_pre.weight", &[u, d.inter_channels, kp])?;
    let pre_b = w.get_shaped("dec.conv_pre.bias", &[u])?;
    let n = d.upsample_rates.len();
    let kq = d.dec_post_kernel_size;
    let post = PostConv {
        w: w.get_shaped("dec.conv_post.weight", &[1, stage_channels(d, n - 1), kq])?,
        // Piper's conv_post has no bias; accept one if a voice carries it.
        b: if w.contains("dec.conv_post.bias") {
            Some(w.get_shaped("dec.conv_post.bias", &[1])?)
        } else {
            None
        },
        slope: FINAL_SLOPE,
    };
    // conv_pre (192 → 256 channels, K = 7) on Winograd's F(2, 7) with the Winograd packs.
    let pre_tile = tile_outputs(kp).filter(|_| !packs.res.is_empty());
    let mut x = conv1d_auto(z, pre_w, pre_tile, pre_b, (kp - 1) / 2);
    // `x` holds positions `at` of the current stage's input (frames × `per_frame`).
    let (mut at, mut per_frame) = (0..z.dim(1), 1usize);
    let mut y = Vec::new();
    for stage in 0..n {
        // What frames `keep` read from here on; cut the rest away.
        let (a, b) = d.decoder_reach_after_stage(stage);
        let lo = (keep.start * per_frame) as i64 + a;
        let hi = ((keep.end - 1) * per_frame) as i64 + b + 1;
        let want = (lo.max(at.start as i64) as usize)..(hi.min(at.end as i64) as usize);
        if want != at {
            x = x.cols(want.start - at.start..want.end - at.start);
            at = want;
        }
        check_cancel(cancel)?;
        let ups = packs
            .ups
            .get(stage)
            .ok_or_else(|| ModelError::Input(format!("decoder packs lack stage {stage}")))?;
        let wino = packs.res.get(stage).map(Vec::as_slice);
        let sw = stage_weights(w, d, stage, ups, wino, &x)?;
        // The last stage hands out conv_post's samples; the others their activations.
        if stage + 1 == n {
            y = sw.run_post(&x, &post, None);
        } else {
            x = sw.run(&x, None);
        }
        let rate = d.upsample_rates[stage];
        at = at.start * rate..at.end * rate;
        per_frame *= rate;
    }
    let from = keep.start * per_frame - at.start;
    y.drain(..from);
    y.truncate(keep.len() * per_frame);
    tanh_in_place(&mut y);
    Ok(y)
}

/// Flow + decoder for frames `[start, end)` of `z_p [C, F]`, computed from
/// `z_p[start − context : end + context]` (clipped to the utterance) with the margins' audio
/// discarded. With `context ≥ d.flow_decoder_receptive_frames()` it equals the matching
/// slice of the full decode. Returns `(end − start) · hop` samples.
///
/// Only the work that reaches `[start, end)` is done: the decoder runs on its own (smaller)
/// reach around the chunk, and each flow coupling on the reach of what follows it.
pub fn decode_window(
    w: &Weights,
    d: &ModelDims,
    z_p: &Tensor,
    start: usize,
    end: usize,
    context: usize,
) -> Result<Vec<f32>> {
    let (z, keep) = window_flow(w, d, None, z_p, start, end, context, NEVER)?;
    decode_cols(w, d, &z, keep, NEVER)
}

/// The flow half of [`decode_window`]: z over the decoder's share of the window, and where
/// frames `[start, end)` lie in it. `cancel` is checked between the flow's couplings, and
/// [`decode_cols`] checks it between the decoder's stages. `packs` puts the flow's WaveNet
/// convolutions on Winograd's algorithm ([`FlowPacks`]).
#[allow(clippy::too_many_arguments)]
pub fn window_flow(
    w: &Weights,
    d: &ModelDims,
    packs: Option<&FlowPacks>,
    z_p: &Tensor,
    start: usize,
    end: usize,
    context: usize,
    cancel: CancelFn,
) -> Result<(Tensor, Range<usize>)> {
    check_input(z_p, d.inter_channels, "decode_window")?;
    let f = z_p.dim(1);
    if start >= end || end > f {
        return Err(ModelError::Input(format!(
            "decode_window: frames [{start}, {end}) not inside [0, {f})"
        )));
    }
    let lo = start.saturating_sub(context);
    let hi = (end + context).min(f);
    // The decoder's share of the context; the flow covers the rest.
    let (dec_left, dec_right) = d.decoder_receptive_span();
    let dec_lo = start.saturating_sub(context.min(dec_left));
    let dec_hi = (end + context.min(dec_right)).min(f);
    let z = flow_reverse_cols_packed(
        w,
        d,
        packs,
        &z_p.cols(lo..hi),
        dec_lo - lo..dec_hi - lo,
        cancel,
    )?;
    Ok((z, start - dec_lo..end - dec_lo))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::flow::flow_reverse;
    use crate::cpu::testutil::{random_tensor, random_weights, tiny_dims};
    use hark_voice::tensor::rel_l2;
    use std::collections::HashMap;

    #[test]
    fn resblock2_is_residual() {
        let d = tiny_dims();
        let ch = 8; // stage 0 channels for upsample_initial_channel 16
        let x = random_tensor(1, &[ch, 20], 1.0);
        // Zero kernels: each conv contributes only its bias, added to the running x.
        for idx in 0..3 {
            let k = d.resblock_kernel_sizes[idx];
            let mut m = HashMap::new();
            let b0 = random_tensor(2, &[ch], 1.0);
            let b1 = random_tensor(3, &[ch], 1.0);
            m.insert(
                format!("dec.resblocks.{idx}.convs.0.weight"),
                Tensor::zeros(vec![ch, ch, k]),
            );
            m.insert(
                format!("dec.resblocks.{idx}.convs.1.weight"),
                Tensor::zeros(vec![ch, ch, k]),
            );
            m.insert(format!("dec.resblocks.{idx}.convs.0.bias"), b0.clone());
            m.insert(format!("dec.resblocks.{idx}.convs.1.bias"), b1.clone());
            let y = resblock2(&Weights::from_map(m), &d, idx, &x).unwrap();
            for c in 0..ch {
                for (o, (&yv, &xv)) in y.row(c).iter().zip(x.row(c)).enumerate() {
                    let want = xv + b0.data[c] + b1.data[c];
                    assert!((yv - want).abs() < 1e-6, "rb {idx} c {c} t {o}");
                }
            }
        }
    }

    /// ResBlock2 from the definition: per dilation, x += conv(lrelu(x)) by direct loops.
    #[test]
    fn resblock2_matches_direct_loops() {
        let d = tiny_dims();
        let w = random_weights(&d, 20);
        let idx = 5; // stage 1, kernel 7, dilations (3, 12)
        let (ch, t, k) = (4, 40, 7);
        let x = random_tensor(4, &[ch, t], 1.0);
        let mut cur: Vec<f64> = x.data.iter().map(|&v| v as f64).collect();
        for (j, &dil) in [3usize, 12].iter().enumerate() {
            let cw = &w
                .get(&format!("dec.resblocks.{idx}.convs.{j}.weight"))
                .unwrap()
                .data;
            let cb = &w
                .get(&format!("dec.resblocks.{idx}.convs.{j}.bias"))
                .unwrap()
                .data;
            let act: Vec<f64> = cur
                .iter()
                .map(|&v| if v < 0.0 { 0.1 * v } else { v })
                .collect();
            let pad = (dil * (k - 1) / 2) as isize;
            let mut next = cur.clone();
            for co in 0..ch {
                for o in 0..t {
                    let mut a = cb[co] as f64;
                    for ci in 0..ch {
                        for tap in 0..k {
                            let i = o as isize + (tap * dil) as isize - pad;
                            if i >= 0 && (i as usize) < t {
                                a += cw[(co * ch + ci) * k + tap] as f64 * act[ci * t + i as usize];
                            }
                        }
                    }
                    next[co * t + o] += a;
                }
            }
            cur = next;
        }
        let want: Vec<f32> = cur.into_iter().map(|v| v as f32).collect();
        let got = resblock2(&w, &d, idx, &x).unwrap();
        assert!(rel_l2(&got.data, &want) < 1e-6);
    }

    /// The fused stage against its definition (LReLU → ConvTranspose → mean of ResBlock2s),
    /// over lengths shorter and longer than the halos and tiles that split them anywhere.
    #[test]
    fn upsample_stage_is_mean_of_resblocks() {
        let d = tiny_dims();
        let w = random_weights(&d, 21);
        for (stage, t) in [(1, 1), (1, 9), (1, 30), (2, 2), (2, 41), (0, 17)] {
            let cin = d.upsample_initial_channel >> stage;
            let x = random_tensor(5 + t as u64, &[cin, t], 1.0);
            let mut xa = x.clone();
            crate::cpu::ops::leaky_relu(&mut xa.data, 0.1);
            let (rate, k) = (d.upsample_rates[stage], d.upsample_kernel_sizes[stage]);
            let up = crate::cpu::ops::conv_transpose1d(
                &xa,
                w.get(&format!("dec.ups.{stage}.weight")).unwrap(),
                w.get(&format!("dec.ups.{stage}.bias")).ok(),
                rate,
                (k - rate) / 2,
            );
            let mut want = vec![0f32; up.len()];
            for j in 3 * stage..3 * stage + 3 {
                let r = resblock2(&w, &d, j, &up).unwrap();
                want.iter_mut().zip(&r.data).for_each(|(a, b)| *a += b);
            }
            want.iter_mut().for_each(|v| *v /= 3.0);
            let ups = stage_pack(&w, &d, stage).unwrap();
            let sw = stage_weights(&w, &d, stage, &ups, None, &x).unwrap();
            for tile in [None, Some(rate), Some(3 * rate), Some(40)] {
                let got = sw.run(&x, tile);
                assert_eq!(got.shape, vec![cin / 2, t * rate]);
                let e = rel_l2(&got.data, &want);
                assert!(e < 1e-6, "stage {stage} t {t} tile {tile:?}: {e}");
            }
            assert_eq!(upsample_stage(&w, &d, stage, &x).unwrap().shape, up.shape);
        }
    }

    #[test]
    fn output_length_is_frames_times_hop() {
        let d = tiny_dims();
        let w = random_weights(&d, 22);
        for f in [1usize, 2, 7, 30] {
            let z = random_tensor(f as u64, &[d.inter_channels, f], 1.0);
            let y = decode(&w, &d, &z).unwrap();
            assert_eq!(y.len(), f * d.samples_per_frame());
            assert!(y.iter().all(|v| v.is_finite() && v.abs() <= 1.0));
        }
    }

    /// The audio of frame f must depend on z_p frames f−left ..= f+right exactly. Random
    /// weights attenuate far influence below f32 resolution, so the dependence is traced
    /// structurally: a NaN planted in one frame of z_p poisons exactly what reads it.
    #[test]
    fn receptive_span_is_exact() {
        let d = tiny_dims();
        let (left, right) = d.flow_decoder_receptive_span();
        assert_eq!(d.flow_decoder_receptive_frames(), left.max(right));
        let w = random_weights(&d, 23);
        let f = 2 * (left + right) + 30;
        let hop = d.samples_per_frame();
        let z = random_tensor(6, &[d.inter_channels, f], 1.0);
        let g = f / 2;
        let mut zz = z.clone();
        for c in 0..d.inter_channels {
            zz.data[c * f + g] = f32::NAN;
        }
        let pert = decode(&w, &d, &flow_reverse(&w, &d, &zz).unwrap()).unwrap();
        let changed: Vec<usize> = (0..f)
            .filter(|&fr| pert[fr * hop..(fr + 1) * hop].iter().any(|v| v.is_nan()))
            .collect();
        assert_eq!(
            changed.len(),
            left + right + 1,
            "poisoned frames are not contiguous"
        );
        // Frame fr changes iff g ∈ [fr − left, fr + right], i.e. fr ∈ [g − right, g + left].
        assert_eq!(changed.first(), Some(&(g - right)), "right reach");
        assert_eq!(changed.last(), Some(&(g + left)), "left reach");
    }

    #[test]
    fn window_equals_full_decode() {
        let d = tiny_dims();
        let w = random_weights(&d, 24);
        let ctx = d.flow_decoder_receptive_frames();
        let f = 150;
        let hop = d.samples_per_frame();
        let z = random_tensor(7, &[d.inter_channels, f], 1.0);
        let full = decode(&w, &d, &flow_reverse(&w, &d, &z).unwrap()).unwrap();
        for (a, b) in [(0, 16), (16, 48), (60, 61), (100, 150), (0, 150)] {
            let got = decode_window(&w, &d, &z, a, b, ctx).unwrap();
            assert!(rel_l2(&got, &full[a * hop..b * hop]) <= 1e-5, "[{a},{b})");
        }
        // Too little context must show: the check above can fail.
        let short = decode_window(&w, &d, &z, 60, 80, 2).unwrap();
        assert!(rel_l2(&short, &full[60 * hop..80 * hop]) > 1e-5);
        assert!(decode_window(&w, &d, &z, 10, 10, ctx).is_err());
        assert!(decode_window(&w, &d, &z, 10, f + 1, ctx).is_err());
    }

    #[test]
    fn a_long_sentence_is_decoded_in_windows_equal_to_the_whole() {
        let d = tiny_dims();
        let w = random_weights(&d, 31);
        let f = DIRECT_DECODE_FRAMES + DECODE_WINDOW_FRAMES + 77;
        let z = random_tensor(5, &[d.inter_channels, f], 1.0);
        let got = decode(&w, &d, &z).unwrap();
        // Two halves, each decoded in one go with full context, are the whole.
        let half = f / 2;
        assert!(half <= DIRECT_DECODE_FRAMES && f > DIRECT_DECODE_FRAMES);
        let mut want = decode_cols(&w, &d, &z, 0..half, NEVER).unwrap();
        want.extend(decode_cols(&w, &d, &z, half..f, NEVER).unwrap());
        assert_eq!(got.len(), want.len());
        assert!(rel_l2(&got, &want) <= 1e-6);
        // A part of it too, with context on both sides.
        let keep = 100..f - 50;
        let got = decode_cols(&w, &d, &z, keep.clone(), NEVER).unwrap();
        let hop = d.samples_per_frame();
        assert!(rel_l2(&got, &want[keep.start * hop..keep.end * hop]) <= 1e-6);
    }

    #[test]
    fn decoding_columns_equals_the_full_decode_there() {
        let d = tiny_dims();
        let w = random_weights(&d, 26);
        let f = 70;
        let hop = d.samples_per_frame();
        let z = random_tensor(11, &[d.inter_channels, f], 1.0);
        let full = decode(&w, &d, &z).unwrap();
        for keep in [0..1, 0..16, 20..37, 69..70, 0..70] {
            let got = decode_cols(&w, &d, &z, keep.clone(), NEVER).unwrap();
            let want = &full[keep.start * hop..keep.end * hop];
            assert!(rel_l2(&got, want) <= 1e-6, "{keep:?}");
        }
        // Decoding only the kept frames (no context) differs: the check can fail.
        let bare = decode(&w, &d, &z.cols(20..37)).unwrap();
        assert!(rel_l2(&bare, &full[20 * hop..37 * hop]) > 1e-6);
        assert!(decode_cols(&w, &d, &z, 60..71, NEVER).is_err());
        // Cancelling gives up between stages, whichever stage it is asked at.
        for after in 0..6 {
            let asked = std::sync::atomic::AtomicUsize::new(0);
            let cancel = || asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= after;
            let r = window_flow(&w, &d, None, &z, 10, 30, 20, &cancel)
                .and_then(|(zz, keep)| decode_cols(&w, &d, &zz, keep, &cancel));
            assert!(
                matches!(r, Err(ModelError::Cancelled)),
                "after {after}: {r:?}"
            );
        }
        assert!(decode_cols(&w, &d, &z, 5..5, NEVER).is_err());
    }

    /// The last stage with conv_post fused into its tiles equals the stage, then LeakyReLU and
    /// conv_post over its whole output, for tiles that split it anywhere.
    #[test]
    fn the_fused_post_convolution_equals_the_stage_then_conv_post() {
        let d = tiny_dims();
        let w = random_weights(&d, 27);
        let stage = d.upsample_rates.len() - 1;
        let ups = stage_pack(&w, &d, stage).unwrap();
        let c = stage_channels(&d, stage);
        let kq = d.dec_post_kernel_size;
        let post_w = random_tensor(28, &[1, c, kq], 0.5);
        let post_b = random_tensor(29, &[1], 0.5);
        for t in [1, 5, 23] {
            let x = random_tensor(30, &[d.upsample_initial_channel >> stage, t], 1.0);
            let sw = stage_weights(&w, &d, stage, &ups, None, &x).unwrap();
            let whole = sw.run(&x, None);
            for bias in [None, Some(&post_b)] {
                let want = conv1d_fused(
                    &whole,
                    &post_w,
                    bias,
                    (kq - 1) / 2,
                    1,
                    Some(FINAL_SLOPE),
                    None,
                );
                let post = PostConv {
                    w: &post_w,
                    b: bias,
                    slope: FINAL_SLOPE,
                };
                let rate = d.upsample_rates[stage];
                for tile in [None, Some(rate), Some(3 * rate)] {
                    let got = sw.run_post(&x, &post, tile);
                    assert_eq!(got.len(), want.data.len());
                    let e = rel_l2(&got, &want.data);
                    assert!(e < 1e-6, "t {t} tile {tile:?} bias {}: {e}", bias.is_some());
                }
            }
        }
    }

    #[test]
    fn bad_shapes_are_errors() {
        let d = tiny_dims();
        let w = random_weights(&d, 25);
        let z = random_tensor(8, &[d.inter_channels + 1, 4], 1.0);
        assert!(matches!(decode(&w, &d, &z), Err(ModelError::Input(_))));
        assert!(resblock2(&w, &d, 0, &random_tensor(9, &[3, 4], 1.0)).is_err());
        assert!(resblock2(&w, &d, 9, &random_tensor(9, &[2, 4], 1.0)).is_err());
        assert!(upsample_stage(&w, &d, 3, &random_tensor(9, &[2, 4], 1.0)).is_err());
        let z = random_tensor(8, &[d.inter_channels, 4], 1.0);
        assert!(matches!(
            decode(&Weights::default(), &d, &z),
            Err(ModelError::Weights(_))
        ));
        let mut bad = d.clone();
        bad.upsample_kernel_sizes.pop();
        assert!(decode(&w, &bad, &z).is_err());
    }
}
