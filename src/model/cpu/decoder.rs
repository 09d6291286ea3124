//! HiFi-GAN decoder (Piper's `Generator`, resblock type "2"): z `[C, F]` → audio
//! `F · hop` samples, plus the windowed flow+decoder used for streaming.

use super::flow::{check_input, flow_reverse};
use super::ops::{conv1d, conv_transpose1d, leaky_relu};
use super::{ModelError, Result};
use crate::model::tensor::Tensor;
use crate::voice::{ModelDims, Weights};

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
        return Err(ModelError::Input(format!("resblock {index} does not exist")));
    }
    let ch = stage_channels(d, stage);
    check_input(x, ch, "resblock2")?;
    let k = d.resblock_kernel_sizes[index % nk];
    let mut x = x.clone();
    let mut xt = Tensor::zeros(x.shape.clone());
    for (j, &dil) in d.resblock_dilation_sizes[index % nk].iter().enumerate() {
        let cw = w.get_shaped(&format!("dec.resblocks.{index}.convs.{j}.weight"), &[ch, ch, k])?;
        let cb = w.get_shaped(&format!("dec.resblocks.{index}.convs.{j}.bias"), &[ch])?;
        xt.data.copy_from_slice(&x.data);
        leaky_relu(&mut xt.data, LRELU_SLOPE);
        let y = conv1d(&xt, cw, Some(cb), dil * (k - 1) / 2, dil);
        x.data.iter_mut().zip(&y.data).for_each(|(a, b)| *a += b);
    }
    Ok(x)
}

/// Upsampling stage `stage`: LReLU₀.₁ → ConvTranspose (`dec.ups.{stage}`, stride = rate,
/// padding (k − rate)/2) → mean of the stage's ResBlock2s. `[C, T]` → `[C/2, T · rate]`.
pub fn upsample_stage(w: &Weights, d: &ModelDims, stage: usize, x: &Tensor) -> Result<Tensor> {
    check_decoder_dims(d)?;
    if stage >= d.upsample_rates.len() {
        return Err(ModelError::Input(format!("upsample stage {stage} does not exist")));
    }
    let cin = d.upsample_initial_channel >> stage;
    let cout = stage_channels(d, stage);
    check_input(x, cin, "upsample_stage")?;
    let (rate, k) = (d.upsample_rates[stage], d.upsample_kernel_sizes[stage]);
    let uw = w.get_shaped(&format!("dec.ups.{stage}.weight"), &[cin, cout, k])?;
    let ub = w.get_shaped(&format!("dec.ups.{stage}.bias"), &[cout])?;
    let mut xa = x.clone();
    leaky_relu(&mut xa.data, LRELU_SLOPE);
    let up = conv_transpose1d(&xa, uw, Some(ub), rate, (k - rate) / 2);
    drop(xa);
    let nk = d.resblock_kernel_sizes.len();
    let mut sum: Option<Tensor> = None;
    for j in 0..nk {
        let r = resblock2(w, d, stage * nk + j, &up)?;
        match sum.as_mut() {
            None => sum = Some(r),
            Some(s) => s.data.iter_mut().zip(&r.data).for_each(|(a, b)| *a += b),
        }
    }
    let mut sum = sum.expect("at least one resblock");
    let n = nk as f32;
    sum.data.iter_mut().for_each(|v| *v /= n);
    Ok(sum)
}

/// The whole decoder: `z [C, F]` → `F · hop` samples in [−1, 1].
pub fn decode(w: &Weights, d: &ModelDims, z: &Tensor) -> Result<Vec<f32>> {
    check_decoder_dims(d)?;
    check_input(z, d.inter_channels, "decode")?;
    let u = d.upsample_initial_channel;
    let kp = d.dec_pre_kernel_size;
    let pre_w = w.get_shaped("dec.conv_pre.weight", &[u, d.inter_channels, kp])?;
    let pre_b = w.get_shaped("dec.conv_pre.bias", &[u])?;
    let mut x = conv1d(z, pre_w, Some(pre_b), (kp - 1) / 2, 1);
    for stage in 0..d.upsample_rates.len() {
        x = upsample_stage(w, d, stage, &x)?;
    }
    leaky_relu(&mut x.data, FINAL_SLOPE);
    let last = stage_channels(d, d.upsample_rates.len() - 1);
    let kq = d.dec_post_kernel_size;
    let post_w = w.get_shaped("dec.conv_post.weight", &[1, last, kq])?;
    // Piper's conv_post has no bias; accept one if a voice carries it.
    let post_b = if w.contains("dec.conv_post.bias") {
        Some(w.get_shaped("dec.conv_post.bias", &[1])?)
    } else {
        None
    };
    let mut y = conv1d(&x, post_w, post_b, (kq - 1) / 2, 1).data;
    y.iter_mut().for_each(|v| *v = v.tanh());
    Ok(y)
}

/// Flow + decoder for frames `[start, end)` of `z_p [C, F]`, computed from
/// `z_p[start − context : end + context]` (clipped to the utterance) with the margins' audio
/// discarded. With `context ≥ d.flow_decoder_receptive_frames()` it equals the matching
/// slice of the full decode. Returns `(end − start) · hop` samples.
pub fn decode_window(
    w: &Weights,
    d: &ModelDims,
    z_p: &Tensor,
    start: usize,
    end: usize,
    context: usize,
) -> Result<Vec<f32>> {
    check_input(z_p, d.inter_channels, "decode_window")?;
    let f = z_p.dim(1);
    if start >= end || end > f {
        return Err(ModelError::Input(format!(
            "decode_window: frames [{start}, {end}) not inside [0, {f})"
        )));
    }
    let lo = start.saturating_sub(context);
    let hi = (end + context).min(f);
    let n = hi - lo;
    let c = z_p.dim(0);
    let mut win = Tensor::zeros(vec![c, n]);
    for ch in 0..c {
        win.row_mut(ch).copy_from_slice(&z_p.row(ch)[lo..hi]);
    }
    let z = flow_reverse(w, d, &win)?;
    let audio = decode(w, d, &z)?;
    let hop = d.samples_per_frame();
    Ok(audio[(start - lo) * hop..(end - lo) * hop].to_vec())
}
