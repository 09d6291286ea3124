//! The flow's reverse pass: z_p → z through Piper's ResidualCouplingBlock.
//!
//! The block is `[coupling 0, Flip, coupling 1, Flip, …]` (PyTorch modules `flow.flows.0`,
//! `.1`, …: couplings at even indices, Flips at odd ones). In reverse it runs back to front:
//! Flip, coupling n−1, Flip, …, coupling 0. Each coupling is mean-only:
//! `x1 ← x1 − post(WN(pre(x0)))`. Batch 1, mask all ones.

use super::ops::{add_assign, conv1d, conv1d_fused, par_zip};
use super::vmath::tanh_sigmoid_gate;
use super::winograd::{conv1d_auto, tile_outputs};
use super::{CancelFn, ModelError, Result, check_cancel};
use hark_voice::tensor::Tensor;
use hark_voice::{ModelDims, Weights};

/// PyTorch module prefix of coupling `c` (0-based among couplings): `flow.flows.{2c}`.
pub fn coupling_prefix(c: usize) -> String {
    format!("flow.flows.{}", 2 * c)
}

pub(crate) fn check_input(x: &Tensor, channels: usize, what: &str) -> Result<()> {
    if x.shape.len() != 2 || x.dim(0) != channels || x.dim(1) == 0 {
        return Err(ModelError::Input(format!(
            "{what}: expected [{channels}, T>0], got {:?}",
            x.shape
        )));
    }
    Ok(())
}

/// Which of the WaveNets' input convolutions (Joe: 192 → 384 channels, K = 5) run on
/// Winograd's F(4, K) ([`super::winograd::conv1d_auto`]): 8 products per 4 outputs instead
/// of 20, about 0.47× the direct kernel's time on them (`winograd_speed`), which are three
/// quarters of the flow's work. Their weights are transformed at each call: kept per voice
/// they took 38 MB. Layers with a dilation above 1 keep the direct kernel.
pub struct FlowPacks {
    /// `[layer]`: the tile's outputs, or `None` for the direct kernel.
    in_layers: Vec<Option<usize>>,
}

/// Outputs per Winograd tile of the flow's convolutions (F(4, K)).
const FLOW_WINOGRAD_TILE: usize = 4;

impl FlowPacks {
    pub fn new(w: &Weights, d: &ModelDims) -> Result<Self> {
        let (h, k) = (d.hidden_channels, d.flow_kernel_size);
        let mut dilation = 1usize;
        let in_layers = (0..d.flow_wn_layers)
            .map(|i| {
                // The shape is checked here once, as the WaveNet checks it at each call.
                let name = format!("{}.enc.in_layers.{i}.weight", coupling_prefix(0));
                w.get_shaped(&name, &[2 * h, h, k])?;
                let tile =
                    (dilation == 1 && tile_outputs(k).is_some()).then_some(FLOW_WINOGRAD_TILE);
                dilation *= d.flow_dilation_rate.max(1);
                Ok(tile)
            })
            .collect::<Result<_>>()?;
        Ok(Self { in_layers })
    }
}

/// Piper's WaveNet (`modules.WN`) without conditioning: `x [H, T]` → skip sum `[H, T]`.
///
/// `prefix` is the module path, e.g. `flow.flows.0.enc`. Layer `i` uses dilation
/// `dilation_rate^i` and "same" zero padding; the gate is `tanh(a[:H]) · σ(a[H:])`; the 1×1
/// res_skip conv's first H rows are added to `x` and its last H to the skip sum, except in
/// the last layer, whose H rows are all skip.
pub fn wavenet(w: &Weights, d: &ModelDims, prefix: &str, x: &Tensor) -> Result<Tensor> {
    wavenet_packed(w, d, prefix, x, None)
}

/// [`wavenet`] with each layer's input convolution on its Winograd pack where `packs` has one.
fn wavenet_packed(
    w: &Weights,
    d: &ModelDims,
    prefix: &str,
    x: &Tensor,
    packs: Option<&FlowPacks>,
) -> Result<Tensor> {
    let h = d.hidden_channels;
    let k = d.flow_kernel_size;
    let layers = d.flow_wn_layers;
    check_input(x, h, "wavenet")?;
    if k.is_multiple_of(2) {
        return Err(ModelError::Input(format!("wavenet: even kernel size {k}")));
    }
    let t = x.dim(1);
    let mut x = x.clone();
    let mut skip = Tensor::zeros(vec![h, t]);
    let mut dilation = 1usize;
    for i in 0..layers {
        let last = i + 1 == layers;
        let in_w = w.get_shaped(&format!("{prefix}.in_layers.{i}.weight"), &[2 * h, h, k])?;
        let in_b = w.get_shaped(&format!("{prefix}.in_layers.{i}.bias"), &[2 * h])?;
        let rs_out = if last { h } else { 2 * h };
        let rs_w = w.get_shaped(
            &format!("{prefix}.res_skip_layers.{i}.weight"),
            &[rs_out, h, 1],
        )?;
        let rs_b = w.get_shaped(&format!("{prefix}.res_skip_layers.{i}.bias"), &[rs_out])?;

        let pad = dilation * (k - 1) / 2;
        let mut a = match packs.and_then(|p| p.in_layers.get(i).copied().flatten()) {
            Some(tile) => conv1d_auto(&x, in_w, Some(tile), in_b, pad),
            None => conv1d_fused(&x, in_w, Some(in_b), pad, dilation, None, None),
        };
        // Gate in place: the first H rows become tanh(a[:H]) · σ(a[H:]).
        {
            let (ta, sa) = a.data.split_at_mut(h * t);
            par_zip(ta, &sa[..h * t], tanh_sigmoid_gate);
        }
        a.data.truncate(h * t);
        a.shape = vec![h, t];

        let rs = conv1d(&a, rs_w, Some(rs_b), 0, 1);
        if last {
            add_assign(&mut skip.data, &rs.data);
        } else {
            let (res, sk) = rs.data.split_at(h * t);
            add_assign(&mut x.data, res);
            add_assign(&mut skip.data, sk);
        }
        dilation *= d.flow_dilation_rate.max(1);
    }
    Ok(skip)
}

/// The mean `m = post(WN(pre(x0)))` of coupling `c` for the first half `x0 [C/2, T]`.
pub fn coupling_mean(w: &Weights, d: &ModelDims, c: usize, x0: &Tensor) -> Result<Tensor> {
    coupling_mean_packed(w, d, c, x0, None)
}

fn coupling_mean_packed(
    w: &Weights,
    d: &ModelDims,
    c: usize,
    x0: &Tensor,
    packs: Option<&FlowPacks>,
) -> Result<Tensor> {
    let half = d.inter_channels / 2;
    let h = d.hidden_channels;
    check_input(x0, half, "coupling")?;
    let p = coupling_prefix(c);
    let pre_w = w.get_shaped(&format!("{p}.pre.weight"), &[h, half, 1])?;
    let pre_b = w.get_shaped(&format!("{p}.pre.bias"), &[h])?;
    let post_w = w.get_shaped(&format!("{p}.post.weight"), &[half, h, 1])?;
    let post_b = w.get_shaped(&format!("{p}.post.bias"), &[half])?;
    let hid = conv1d(x0, pre_w, Some(pre_b), 0, 1);
    let hid = wavenet_packed(w, d, &format!("{p}.enc"), &hid, packs)?;
    Ok(conv1d(&hid, post_w, Some(post_b), 0, 1))
}

/// Reverse of mean-only coupling `c` (weights `flow.flows.{2c}`) on `x [C, T]`:
/// `x0, x1 = split(x)`, `x1 ← x1 − m(x0)`; x0 passes through.
pub fn coupling_reverse(w: &Weights, d: &ModelDims, c: usize, x: &Tensor) -> Result<Tensor> {
    coupling_reverse_packed(w, d, c, x, None)
}

fn coupling_reverse_packed(
    w: &Weights,
    d: &ModelDims,
    c: usize,
    x: &Tensor,
    packs: Option<&FlowPacks>,
) -> Result<Tensor> {
    let ch = d.inter_channels;
    check_input(x, ch, "coupling_reverse")?;
    if !ch.is_multiple_of(2) {
        return Err(ModelError::Input(format!(
            "coupling: odd channel count {ch}"
        )));
    }
    let t = x.dim(1);
    let half = ch / 2;
    let x0 = Tensor::new(vec![half, t], x.data[..half * t].to_vec());
    let m = coupling_mean_packed(w, d, c, &x0, packs)?;
    let mut out = x.clone();
    out.data[half * t..]
        .iter_mut()
        .zip(&m.data)
        .for_each(|(v, m)| *v -= m);
    Ok(out)
}

/// Reverse the channel order of `[C, T]` in place (the flow's `Flip`).
pub fn flip_channels(x: &mut Tensor) {
    let (c, t) = (x.dim(0), x.dim(1));
    for i in 0..c / 2 {
        let j = c - 1 - i;
        let (a, b) = x.data.split_at_mut(j * t);
        a[i * t..(i + 1) * t].swap_with_slice(&mut b[..t]);
    }
}

/// The whole reverse flow: `z_p [C, F]` → `z [C, F]`.
pub fn flow_reverse(w: &Weights, d: &ModelDims, z_p: &Tensor) -> Result<Tensor> {
    check_input(z_p, d.inter_channels, "flow_reverse")?;
    let mut x = z_p.clone();
    for c in (0..d.flow_n_couplings).rev() {
        flip_channels(&mut x);
        x = coupling_reverse(w, d, c, &x)?;
    }
    Ok(x)
}

/// The reverse flow where it matters for columns `keep` of `z_p [C, T]`: each coupling runs
/// only on `keep` widened by the reach of the couplings still to come (clipped to `z_p`), so
/// a streaming window does not recompute context that the result cannot see. Equals
/// `flow_reverse(z_p)` restricted to `keep`; returns `[C, keep.len()]`.
pub fn flow_reverse_cols(
    w: &Weights,
    d: &ModelDims,
    z_p: &Tensor,
    keep: std::ops::Range<usize>,
    cancel: CancelFn,
) -> Result<Tensor> {
    flow_reverse_cols_packed(w, d, None, z_p, keep, cancel)
}

/// [`flow_reverse_cols`] with the WaveNets' input convolutions on `packs` when given.
pub fn flow_reverse_cols_packed(
    w: &Weights,
    d: &ModelDims,
    packs: Option<&FlowPacks>,
    z_p: &Tensor,
    keep: std::ops::Range<usize>,
    cancel: CancelFn,
) -> Result<Tensor> {
    check_input(z_p, d.inter_channels, "flow_reverse_cols")?;
    let t = z_p.dim(1);
    if keep.is_empty() || keep.end > t {
        return Err(ModelError::Input(format!(
            "flow_reverse_cols: columns {keep:?} not inside [0, {t})"
        )));
    }
    let reach = d.flow_coupling_reach();
    // `x` holds columns `at` of the window.
    let mut at = 0..t;
    let mut x = z_p.clone();
    for (i, c) in (0..d.flow_n_couplings).rev().enumerate() {
        let margin = (d.flow_n_couplings - i) * reach;
        let want = keep.start.saturating_sub(margin).max(at.start)..(keep.end + margin).min(at.end);
        if want != at {
            x = x.cols(want.start - at.start..want.end - at.start);
            at = want;
        }
        check_cancel(cancel)?;
        flip_channels(&mut x);
        x = coupling_reverse_packed(w, d, c, &x, packs)?;
    }
    Ok(x.cols(keep.start - at.start..keep.end - at.start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::NEVER;
    use crate::cpu::testutil::{random_tensor, random_weights, tiny_dims};
    use hark_voice::tensor::rel_l2;

    /// Forward coupling, written independently: x1 ← x1 + m(x0).
    fn coupling_forward(w: &Weights, d: &ModelDims, c: usize, x: &Tensor) -> Tensor {
        let (ch, t) = (x.dim(0), x.dim(1));
        let x0 = Tensor::new(vec![ch / 2, t], x.data[..ch / 2 * t].to_vec());
        let m = coupling_mean(w, d, c, &x0).unwrap();
        let mut y = x.clone();
        for (v, m) in y.data[ch / 2 * t..].iter_mut().zip(&m.data) {
            *v += m;
        }
        y
    }

    #[test]
    fn coupling_reverse_inverts_forward() {
        let d = tiny_dims();
        let w = random_weights(&d, 10);
        let x = random_tensor(1, &[d.inter_channels, 37], 2.0);
        for c in 0..d.flow_n_couplings {
            let y = coupling_forward(&w, &d, c, &x);
            assert!(rel_l2(&y.data, &x.data) > 1e-2, "coupling {c} is a no-op");
            let back = coupling_reverse(&w, &d, c, &y).unwrap();
            assert!(rel_l2(&back.data, &x.data) < 1e-6, "coupling {c}");
        }
    }

    #[test]
    fn flow_reverse_inverts_flow_forward() {
        let d = tiny_dims();
        let w = random_weights(&d, 11);
        let x = random_tensor(2, &[d.inter_channels, 29], 2.0);
        // Forward: coupling 0, Flip, coupling 1, Flip, …
        let mut y = x.clone();
        for c in 0..d.flow_n_couplings {
            y = coupling_forward(&w, &d, c, &y);
            flip_channels(&mut y);
        }
        let back = flow_reverse(&w, &d, &y).unwrap();
        assert!(rel_l2(&back.data, &x.data) < 1e-5);
    }

    #[test]
    fn flip_reverses_rows() {
        let mut x = Tensor::new(vec![3, 2], vec![0., 1., 2., 3., 4., 5.]);
        flip_channels(&mut x);
        assert_eq!(x.data, vec![4., 5., 2., 3., 0., 1.]);
    }

    /// Per-element WaveNet, straight from the definition.
    fn wavenet_naive(w: &Weights, d: &ModelDims, p: &str, x: &Tensor) -> Vec<f32> {
        let (h, t, k) = (d.hidden_channels, x.dim(1), d.flow_kernel_size);
        let mut x: Vec<f64> = x.data.iter().map(|&v| v as f64).collect();
        let mut out = vec![0f64; h * t];
        let mut dil = 1usize;
        for i in 0..d.flow_wn_layers {
            let last = i + 1 == d.flow_wn_layers;
            let iw = &w.get(&format!("{p}.in_layers.{i}.weight")).unwrap().data;
            let ib = &w.get(&format!("{p}.in_layers.{i}.bias")).unwrap().data;
            let rw = &w
                .get(&format!("{p}.res_skip_layers.{i}.weight"))
                .unwrap()
                .data;
            let rb = &w
                .get(&format!("{p}.res_skip_layers.{i}.bias"))
                .unwrap()
                .data;
            let pad = (dil * (k - 1) / 2) as isize;
            let mut acts = vec![0f64; h * t];
            for c in 0..h {
                for o in 0..t {
                    let mut a = [ib[c] as f64, ib[h + c] as f64];
                    for (half, a) in a.iter_mut().enumerate() {
                        let co = half * h + c;
                        for ci in 0..h {
                            for tap in 0..k {
                                let j = o as isize + (tap * dil) as isize - pad;
                                if j >= 0 && (j as usize) < t {
                                    *a +=
                                        iw[(co * h + ci) * k + tap] as f64 * x[ci * t + j as usize];
                                }
                            }
                        }
                    }
                    acts[c * t + o] = a[0].tanh() / (1.0 + (-a[1]).exp());
                }
            }
            let rows = if last { h } else { 2 * h };
            let mut rs = vec![0f64; rows * t];
            for r in 0..rows {
                for o in 0..t {
                    let mut v = rb[r] as f64;
                    for ci in 0..h {
                        v += rw[r * h + ci] as f64 * acts[ci * t + o];
                    }
                    rs[r * t + o] = v;
                }
            }
            if last {
                out.iter_mut().zip(&rs).for_each(|(a, b)| *a += b);
            } else {
                x.iter_mut().zip(&rs[..h * t]).for_each(|(a, b)| *a += b);
                out.iter_mut().zip(&rs[h * t..]).for_each(|(a, b)| *a += b);
            }
            dil *= d.flow_dilation_rate;
        }
        out.into_iter().map(|v| v as f32).collect()
    }

    #[test]
    fn wavenet_matches_per_element_loops() {
        for rate in [1, 2] {
            let mut d = tiny_dims();
            d.hidden_channels = 3;
            d.flow_wn_layers = 3;
            d.flow_dilation_rate = rate;
            let w = random_weights(&d, 12);
            let x = random_tensor(3, &[3, 11], 1.5);
            let got = wavenet(&w, &d, "flow.flows.2.enc", &x).unwrap();
            let want = wavenet_naive(&w, &d, "flow.flows.2.enc", &x);
            assert_eq!(got.shape, vec![3, 11]);
            assert!(rel_l2(&got.data, &want) < 1e-5, "rate {rate}");
        }
    }

    #[test]
    fn bad_shapes_are_errors() {
        let d = tiny_dims();
        let w = random_weights(&d, 13);
        let bad = random_tensor(4, &[d.inter_channels + 1, 5], 1.0);
        assert!(matches!(
            flow_reverse(&w, &d, &bad),
            Err(ModelError::Input(_))
        ));
        let empty = Tensor::zeros(vec![d.inter_channels, 0]);
        assert!(flow_reverse(&w, &d, &empty).is_err());
        assert!(wavenet(&w, &d, "flow.flows.0.enc", &bad).is_err());
        // Missing weights are errors too, not panics.
        let x = random_tensor(5, &[d.inter_channels, 5], 1.0);
        assert!(matches!(
            flow_reverse(&Weights::default(), &d, &x),
            Err(ModelError::Weights(_))
        ));
    }

    #[test]
    fn flow_on_columns_equals_the_full_flow_there() {
        let d = tiny_dims();
        let w = random_weights(&d, 12);
        let t = 90;
        let x = random_tensor(4, &[d.inter_channels, t], 1.0);
        let full = flow_reverse(&w, &d, &x).unwrap();
        for keep in [0..10, 30..45, 80..90, 0..90, 44..45] {
            let got = flow_reverse_cols(&w, &d, &x, keep.clone(), NEVER).unwrap();
            let want = full.cols(keep.clone());
            assert_eq!(got.shape, want.shape);
            assert!(rel_l2(&got.data, &want.data) <= 1e-6, "{keep:?}");
        }
        // The trimming must be what makes it cheap, not a no-op: a window cut too tightly
        // around the columns differs.
        let tight = flow_reverse(&w, &d, &x.cols(30..45)).unwrap();
        assert!(rel_l2(&tight.data, &full.cols(30..45).data) > 1e-6);
        assert!(flow_reverse_cols(&w, &d, &x, 80..91, NEVER).is_err());
    }
}
