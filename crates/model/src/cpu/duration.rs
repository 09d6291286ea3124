//! VITS stochastic duration predictor (`dp`), reverse (inference) direction only.
//!
//! `g = proj(DDSConv(pre(x)))`; the noise `z [2, T]` then runs through the reverse flows:
//! for each ConvFlow index in `dims.dp_flow_indices` a Flip then that ConvFlow, then a final
//! Flip and the ElementwiseAffine `z = (z − m)·exp(−logs)`. `logw = z[0]`.

use super::ops::{add_assign, conv1d, depthwise_conv1d, gelu, layer_norm_channels};
use super::spline::{SplineLimits, rq_spline_inverse};
use super::{ModelError, Result};
use hark_voice::tensor::Tensor;
use hark_voice::{ModelDims, Weights};

const LN_EPS: f32 = 1e-5;

/// Log-durations for each token. `x` is the encoder output `[H, T]`; `noise` is `[2, T]`,
/// already multiplied by `noise_w` (zeros for deterministic durations).
pub fn duration_logw(w: &Weights, d: &ModelDims, x: &Tensor, noise: &Tensor) -> Result<Vec<f32>> {
    let (h, t) = (d.hidden_channels, x.dim(1));
    if x.shape.len() != 2 || x.dim(0) != h || t == 0 {
        return Err(ModelError::Input(format!(
            "SDP input has shape {:?}, expected [{h}, T>0]",
            x.shape
        )));
    }
    if noise.shape != [2, t] {
        return Err(ModelError::Input(format!(
            "SDP noise has shape {:?}, expected [2, {t}]",
            noise.shape
        )));
    }
    let fc = d.dp_filter_channels;
    let g = conv_named(w, "dp.pre", x, h, fc, 1)?;
    let g = ddsconv(w, d, "dp.convs", g, None)?;
    let g = conv_named(w, "dp.proj", &g, fc, fc, 1)?;

    let mut z = noise.clone();
    for &idx in &d.dp_flow_indices {
        flip(&mut z);
        conv_flow_reverse(w, d, &format!("dp.flows.{idx}"), &mut z, &g)?;
    }
    flip(&mut z);
    let m = w.get_shaped("dp.flows.0.m", &[2, 1])?;
    let logs = w.get_shaped("dp.flows.0.logs", &[2, 1])?;
    for ch in 0..2 {
        let (mv, s) = (m.data[ch], (-logs.data[ch]).exp());
        z.row_mut(ch).iter_mut().for_each(|v| *v = (*v - mv) * s);
    }
    Ok(z.row(0).to_vec())
}

fn conv_named(
    w: &Weights,
    name: &str,
    x: &Tensor,
    cin: usize,
    cout: usize,
    k: usize,
) -> Result<Tensor> {
    let wt = w.get_shaped(&format!("{name}.weight"), &[cout, cin, k])?;
    let b = w.get_shaped(&format!("{name}.bias"), &[cout])?;
    Ok(conv1d(x, wt, Some(b), (k - 1) / 2, 1))
}

/// Channel flip (`torch.flip(x, [1])`).
fn flip(z: &mut Tensor) {
    let (c, t) = (z.dim(0), z.dim(1));
    for ch in 0..c / 2 {
        let (a, b) = z.data.split_at_mut((c - 1 - ch) * t);
        a[ch * t..(ch + 1) * t].swap_with_slice(&mut b[..t]);
    }
}

/// Dilated depthwise-separable convolutions: `x (+ g)`, then per layer i (dilation k^i):
/// `x += GELU(LN(1×1(GELU(LN(depthwise(x))))))`.
pub fn ddsconv(
    w: &Weights,
    d: &ModelDims,
    prefix: &str,
    mut x: Tensor,
    g: Option<&Tensor>,
) -> Result<Tensor> {
    let (c, k) = (d.dp_filter_channels, d.dp_kernel_size);
    if k % 2 == 0 {
        return Err(ModelError::Input(format!(
            "even DDSConv kernel size {k} is not supported"
        )));
    }
    if let Some(g) = g {
        add_assign(&mut x.data, &g.data);
    }
    let mut dil = 1usize;
    for i in 0..d.dp_ddsconv_layers {
        let sw = w.get_shaped(&format!("{prefix}.convs_sep.{i}.weight"), &[c, 1, k])?;
        let sb = w.get_shaped(&format!("{prefix}.convs_sep.{i}.bias"), &[c])?;
        let mut y = depthwise_conv1d(&x, sw, Some(sb), dil);
        layer_norm_channels(
            &mut y,
            w.get_shaped(&format!("{prefix}.norms_1.{i}.gamma"), &[c])?,
            w.get_shaped(&format!("{prefix}.norms_1.{i}.beta"), &[c])?,
            LN_EPS,
        );
        gelu(&mut y.data);
        let mut y = conv_named(w, &format!("{prefix}.convs_1x1.{i}"), &y, c, c, 1)?;
        layer_norm_channels(
            &mut y,
            w.get_shaped(&format!("{prefix}.norms_2.{i}.gamma"), &[c])?,
            w.get_shaped(&format!("{prefix}.norms_2.{i}.beta"), &[c])?,
            LN_EPS,
        );
        gelu(&mut y.data);
        add_assign(&mut x.data, &y.data);
        dil *= k;
    }
    Ok(x)
}

/// ConvFlow in reverse on `z [2, T]`: parameters from `z[0]` (conditioned on `g`), inverse
/// spline applied to `z[1]`.
fn conv_flow_reverse(
    w: &Weights,
    d: &ModelDims,
    prefix: &str,
    z: &mut Tensor,
    g: &Tensor,
) -> Result<()> {
    let (fc, bins, t) = (d.dp_filter_channels, d.dp_num_bins, z.dim(1));
    if bins == 0 {
        return Err(ModelError::Input("spline with 0 bins".into()));
    }
    let np = 3 * bins - 1;
    let x0 = Tensor::new(vec![1, t], z.row(0).to_vec());
    let hdd = conv_named(w, &format!("{prefix}.pre"), &x0, 1, fc, 1)?;
    let hdd = ddsconv(w, d, &format!("{prefix}.convs"), hdd, Some(g))?;
    let p = conv_named(w, &format!("{prefix}.proj"), &hdd, fc, np, 1)?;
    let inv = 1.0 / (fc as f32).sqrt();
    let lim = SplineLimits::default();
    let mut col = vec![0.0f32; np];
    for (ti, v) in z.row_mut(1).iter_mut().enumerate() {
        for (k, c) in col.iter_mut().enumerate() {
            *c = p.data[k * t + ti];
        }
        let uw: Vec<f32> = col[..bins].iter().map(|v| v * inv).collect();
        let uh: Vec<f32> = col[bins..2 * bins].iter().map(|v| v * inv).collect();
        *v = rq_spline_inverse(*v, &uw, &uh, &col[2 * bins..], d.dp_tail_bound, &lim);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flip_reverses_channels() {
        let mut z = Tensor::new(vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        flip(&mut z);
        assert_eq!(z.data, vec![4.0, 5.0, 6.0, 1.0, 2.0, 3.0]);
        let mut z = Tensor::new(vec![3, 1], vec![1.0, 2.0, 3.0]);
        flip(&mut z);
        assert_eq!(z.data, vec![3.0, 2.0, 1.0]);
    }
}
