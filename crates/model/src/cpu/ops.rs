//! CPU building blocks on channels-first `[C, T]` tensors. Convolutions run on the direct
//! kernel of [`super::direct`]; `matmul` and the reference transposed convolution use `gemm`.

use super::direct::{ConvDims, conv_valid_acc_raw};
use super::polyphase::Polyphase;
use super::tiles::{
    PARALLEL_MACS, SharedOut, Unfilled, conv_tile_columns, for_each_tile, padded_block_of,
};
use gemm::Parallelism;
use hark_voice::tensor::Tensor;

/// A strided matrix view: element (r, c) is at `ptr[r * rs + c * cs]`.
#[derive(Clone, Copy)]
struct View {
    rs: isize,
    cs: isize,
}

/// `dst[m×n] (+)= lhs[m×k] · rhs[k×n]` with arbitrary strides.
///
/// # Safety
/// Every element addressed through the pointers and strides must lie in its buffer, and
/// `dst` must not alias `lhs` or `rhs`.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_strided(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut f32,
    dv: View,
    accumulate: bool,
    lhs: *const f32,
    lv: View,
    rhs: *const f32,
    rv: View,
) {
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    let par = if m * n * k >= PARALLEL_MACS {
        Parallelism::Rayon(0)
    } else {
        Parallelism::None
    };
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            dv.cs,
            dv.rs,
            accumulate,
            lhs,
            lv.cs,
            lv.rs,
            rhs,
            rv.cs,
            rv.rs,
            if accumulate { 1.0 } else { 0.0 },
            1.0,
            false,
            false,
            false,
            par,
        );
    }
}

/// Row-major `a[m×k] · b[k×n]`.
pub fn matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    assert_eq!(a.len(), m * k);
    assert_eq!(b.len(), k * n);
    let mut out = vec![0.0; m * n];
    // SAFETY: the three buffers are exactly m×k, k×n and m×n, row-major.
    unsafe {
        gemm_strided(
            m,
            n,
            k,
            out.as_mut_ptr(),
            View {
                rs: n as isize,
                cs: 1,
            },
            false,
            a.as_ptr(),
            View {
                rs: k as isize,
                cs: 1,
            },
            b.as_ptr(),
            View {
                rs: n as isize,
                cs: 1,
            },
        );
    }
    out
}

/// 1-D convolution, stride 1: `x [Cin, T]`, `w [Cout, Cin, K]` → `[Cout, T + 2·pad − dil·(K−1)]`.
/// (The unfused case of [`conv1d_fused`].)
pub fn conv1d(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    pad: usize,
    dilation: usize,
) -> Tensor {
    conv1d_fused(x, w, bias, pad, dilation, None, None)
}

/// Depthwise 1-D convolution (groups = channels): `w [C, 1, K]`, "same" padding.
pub fn depthwise_conv1d(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, dilation: usize) -> Tensor {
    let (c, t) = (x.dim(0), x.dim(1));
    let k = w.dim(2);
    assert_eq!(w.dim(0), c);
    let pad = dilation * (k - 1) / 2;
    let mut out = Tensor::zeros(vec![c, t]);
    init_bias(&mut out, bias);
    for ch in 0..c {
        let xr = x.row(ch);
        let wr = &w.data[ch * k..(ch + 1) * k];
        let yr = out.row_mut(ch);
        for (tap, &wv) in wr.iter().enumerate() {
            // Output o reads input o + shift; only the part inside the row contributes
            // (zero padding), so each tap is one branch-free loop over that range.
            let shift = (tap * dilation) as isize - pad as isize;
            let lo = (-shift).clamp(0, t as isize) as usize;
            let hi = (t as isize - shift).clamp(lo as isize, t as isize) as usize;
            if lo == hi {
                continue; // the tap reaches past the row (a short input, a wide dilation)
            }
            let src = &xr[(lo as isize + shift) as usize..(hi as isize + shift) as usize];
            yr[lo..hi]
                .iter_mut()
                .zip(src)
                .for_each(|(y, &v)| *y += wv * v);
        }
    }
    out
}

/// Transposed 1-D convolution: `x [Cin, T]`, `w [Cin, Cout, K]` →
/// `[Cout, (T−1)·stride − 2·pad + K]`.
pub fn conv_transpose1d(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    stride: usize,
    pad: usize,
) -> Tensor {
    let (cin, t) = (x.dim(0), x.dim(1));
    let (wcin, cout, k) = (w.dim(0), w.dim(1), w.dim(2));
    assert_eq!(cin, wcin, "conv_transpose1d: channel mismatch");
    let t_out = (t - 1) * stride + k - 2 * pad;
    let mut out = Tensor::zeros(vec![cout, t_out]);
    init_bias(&mut out, bias);
    for tap in 0..k {
        // Input column `i` lands on output column `i·stride + tap − pad`.
        let off = tap as isize - pad as isize;
        let i_start = if off < 0 {
            ((-off) as usize).div_ceil(stride)
        } else {
            0
        };
        let i_end = {
            let limit = t_out as isize - off; // need i·stride < limit
            if limit <= 0 {
                0
            } else {
                ((limit as usize).div_ceil(stride)).min(t)
            }
        };
        if i_start >= i_end {
            continue;
        }
        let o_first = (i_start * stride) as isize + off;
        // SAFETY: output columns o_first + j·stride for j < i_end − i_start stay in range.
        unsafe {
            gemm_strided(
                cout,
                i_end - i_start,
                cin,
                out.data.as_mut_ptr().offset(o_first),
                View {
                    rs: t_out as isize,
                    cs: stride as isize,
                },
                true,
                w.data.as_ptr().add(tap),
                View {
                    rs: k as isize,
                    cs: (cout * k) as isize,
                },
                x.data.as_ptr().add(i_start),
                View {
                    rs: t as isize,
                    cs: 1,
                },
            );
        }
    }
    out
}

/// 1-D convolution with optional fusions, `out = residual + bias + w ⊛ act(x)` where `act` is
/// LeakyReLU(`pre_slope`) when given (applied to the input, as in `conv(lrelu(x))`), stride 1,
/// zero padding `pad`. Same shapes as [`conv1d`]; `residual` must have the output's shape.
///
/// Time is cut into tiles (in parallel when worth it; a short output's rows are split between
/// the threads instead, see [`row_parts`]). Each tile starts from residual + bias
/// and runs the direct kernel of [`super::direct`] on its input columns; those are read in
/// place when no padding or activation is needed, else copied once into a padded,
/// activated scratch block small enough for L2.
pub fn conv1d_fused(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    pad: usize,
    dilation: usize,
    pre_slope: Option<f32>,
    residual: Option<&Tensor>,
) -> Tensor {
    let (cin, t) = (x.dim(0), x.dim(1));
    let (cout, wcin, k) = (w.dim(0), w.dim(1), w.dim(2));
    assert_eq!(
        cin, wcin,
        "conv1d: input has {cin} channels, weight expects {wcin}"
    );
    let span = dilation * (k - 1);
    assert!(t + 2 * pad >= span, "conv1d: input too short");
    let t_out = t + 2 * pad - span;
    if let Some(r) = residual {
        assert_eq!(r.shape, vec![cout, t_out], "conv1d: residual shape");
    }
    if let Some(b) = bias {
        assert_eq!(b.len(), cout, "bias length does not match output channels");
    }
    if t_out == 0 || cout == 0 {
        return Tensor::zeros(vec![cout, t_out]);
    }
    let mut out = Unfilled::new(vec![cout, t_out]);
    let in_place = pad == 0 && pre_slope.is_none();
    let macs = cout * cin * k * t_out;
    let parts = row_parts(cout, t_out, macs);
    // Split by rows, each part runs the serial plan of column tiles.
    let plan_macs = if parts > 1 { 0 } else { macs };
    let tile = conv_tile_columns(if in_place { 0 } else { cin }, span, t_out, plan_macs);
    let n_tiles = t_out.div_ceil(tile);
    let part_rows = cout.div_ceil(parts).next_multiple_of(8);
    let dst = out.out();
    for_each_tile(parts * n_tiles, 1, macs, |u, _, buf: &mut Vec<f32>| {
        let (r0, o0) = ((u / n_tiles) * part_rows, (u % n_tiles) * tile);
        let (r1, o1) = ((r0 + part_rows).min(cout), (o0 + tile).min(t_out));
        if r0 >= r1 {
            return;
        }
        let n = o1 - o0;
        for co in r0..r1 {
            let b = bias.map_or(0.0, |b| b.data[co]);
            // Written through the pointer, not a slice: the memory is not initialised yet.
            let row = dst.ptr().wrapping_add(co * t_out + o0);
            // SAFETY: columns [o0, o1) of row `co` are inside the buffer and this unit's alone.
            match residual {
                Some(r) => r.data[co * t_out + o0..co * t_out + o1]
                    .iter()
                    .enumerate()
                    .for_each(|(j, &v)| unsafe { row.add(j).write(v + b) }),
                None => (0..n).for_each(|j| unsafe { row.add(j).write(b) }),
            }
        }
        let d = ConvDims {
            cin,
            cout: r1 - r0,
            k,
            dil: dilation,
            n,
        };
        let (src, xs) = if in_place {
            (&x.data[o0..], t)
        } else {
            padded_block_of(x, o0 as isize - pad as isize, d.in_cols(), pre_slope, buf);
            (&buf[..], d.in_cols())
        };
        assert!(src.len() >= (cin - 1) * xs + d.in_cols());
        // SAFETY: input bounds asserted above; this unit writes only columns [o0, o1) of rows
        // [r0, r1) of `out`, which no other unit touches and no input aliases.
        unsafe {
            conv_valid_acc_raw(
                src.as_ptr(),
                xs,
                w.data[r0 * cin * k..].as_ptr(),
                d,
                dst.ptr().add(r0 * t_out + o0),
                t_out,
            )
        };
    });
    // SAFETY: the units cover every row and [0, t_out); each set its part before accumulating.
    unsafe { out.finish() }
}

/// Output columns below which a parallel [`conv1d_fused`] splits its output rows between the
/// threads rather than its columns: column tiles are whole vectors, so few columns split
/// unevenly (the encoder's 111 columns went 64 : 47 to two threads).
const ROW_SPLIT_COLUMNS: usize = 256;

/// How many row parts a [`conv1d_fused`] of `cout` rows and `t_out` columns runs in.
fn row_parts(cout: usize, t_out: usize, macs: usize) -> usize {
    let th = rayon::current_num_threads().max(1);
    if macs >= PARALLEL_MACS && th > 1 && t_out < ROW_SPLIT_COLUMNS && cout >= 8 * th {
        th
    } else {
        1
    }
}

/// Transposed 1-D convolution, same contract as [`conv_transpose1d`], computed per output
/// phase on the direct kernel (see [`Polyphase`]), output columns tiled in parallel.
pub fn conv_transpose1d_fast(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    stride: usize,
    pad: usize,
) -> Tensor {
    Polyphase::new(w, stride, pad).run(x, bias, None)
}

fn init_bias(out: &mut Tensor, bias: Option<&Tensor>) {
    if let Some(b) = bias {
        assert_eq!(
            b.len(),
            out.dim(0),
            "bias length does not match output channels"
        );
        for (ch, &bv) in b.data.iter().enumerate() {
            out.row_mut(ch).fill(bv);
        }
    }
}

/// LayerNorm over the channel axis of `[C, T]`, per time step (VITS' channels-first LN).
/// Blocks of time steps run in parallel when the tensor is large.
pub fn layer_norm_channels(x: &mut Tensor, gamma: &Tensor, beta: &Tensor, eps: f32) {
    let (c, t) = (x.dim(0), x.dim(1));
    assert!(
        gamma.len() == c && beta.len() == c,
        "layer norm: {c} channels"
    );
    if t == 0 {
        return;
    }
    let dst = SharedOut(x.data.as_mut_ptr());
    // Work ≈ 3 passes over the tensor: parallel once it is worth a fork.
    let block = t.div_ceil(rayon::current_num_threads().max(1)).max(64);
    for_each_tile(t, block, 64 * c * t, |t0, t1, _: &mut ()| {
        let n = t1 - t0;
        // SAFETY: this block owns columns [t0, t1) of every row.
        let row = |ch: usize| unsafe { dst.cols(ch, t, t0, n) };
        let mut mean = vec![0.0f32; n];
        let mut var = vec![0.0f32; n];
        for ch in 0..c {
            mean.iter_mut()
                .zip(row(ch).iter())
                .for_each(|(m, &v)| *m += v);
        }
        mean.iter_mut().for_each(|m| *m /= c as f32);
        for ch in 0..c {
            for ((s, &v), &m) in var.iter_mut().zip(row(ch).iter()).zip(&mean) {
                *s += (v - m) * (v - m);
            }
        }
        let inv: Vec<f32> = var
            .iter()
            .map(|s| 1.0 / (s / c as f32 + eps).sqrt())
            .collect();
        for ch in 0..c {
            let (g, b) = (gamma.data[ch], beta.data[ch]);
            for ((v, &m), &iv) in row(ch).iter_mut().zip(&mean).zip(&inv) {
                *v = (*v - m) * iv * g + b;
            }
        }
    });
}

/// Below this many elements an elementwise pass runs on one thread.
const PARALLEL_ELEMENTS: usize = 1 << 15;

/// `f(a_part, b_part)` over matching parts of `a` and `b` (`b` empty, or as long as `a`), on
/// the rayon pool when `a` is long.
pub(crate) fn par_zip(a: &mut [f32], b: &[f32], f: impl Fn(&mut [f32], &[f32]) + Sync) {
    use rayon::prelude::*;
    assert!(
        b.is_empty() || b.len() == a.len(),
        "elementwise: lengths differ"
    );
    let th = rayon::current_num_threads().max(1);
    if a.len() < PARALLEL_ELEMENTS || th == 1 {
        return f(a, b);
    }
    // Parts of whole 64-byte lines, one or two per thread.
    let part = a.len().div_ceil(2 * th).next_multiple_of(16);
    a.par_chunks_mut(part).enumerate().for_each(|(i, ap)| {
        let bp = if b.is_empty() {
            b
        } else {
            &b[i * part..i * part + ap.len()]
        };
        f(ap, bp)
    });
}

pub fn relu(x: &mut [f32]) {
    par_zip(x, &[], |a, _| a.iter_mut().for_each(|v| *v = v.max(0.0)));
}

pub fn leaky_relu(x: &mut [f32], slope: f32) {
    x.iter_mut().for_each(|v| {
        if *v < 0.0 {
            *v *= slope
        }
    });
}

/// Exact (erf) GELU, as PyTorch's default.
pub fn gelu(x: &mut [f32]) {
    par_zip(x, &[], super::vmath::gelu_in_place2);
}

pub fn add_assign(x: &mut [f32], y: &[f32]) {
    assert_eq!(x.len(), y.len());
    par_zip(x, y, |a, b| a.iter_mut().zip(b).for_each(|(a, b)| *a += b));
}

/// Multiply each time step by a 0/1 mask of length T.
pub fn apply_time_mask(x: &mut Tensor, mask: &[f32]) {
    for ch in 0..x.dim(0) {
        x.row_mut(ch)
            .iter_mut()
            .zip(mask)
            .for_each(|(v, m)| *v *= m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hark_voice::tensor::rel_l2;

    fn lcg(seed: u64, n: usize) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
            })
            .collect()
    }

    /// Direct-loop convolution, the definition the GEMM version must match.
    fn conv1d_naive(x: &Tensor, w: &Tensor, b: Option<&Tensor>, pad: usize, dil: usize) -> Tensor {
        let (cin, t) = (x.dim(0), x.dim(1));
        let (cout, _, k) = (w.dim(0), w.dim(1), w.dim(2));
        let t_out = t + 2 * pad - dil * (k - 1);
        let mut y = Tensor::zeros(vec![cout, t_out]);
        for co in 0..cout {
            for o in 0..t_out {
                let mut acc = b.map_or(0.0, |b| b.data[co]) as f64;
                for ci in 0..cin {
                    for tap in 0..k {
                        let i = o as isize + (tap * dil) as isize - pad as isize;
                        if i >= 0 && (i as usize) < t {
                            acc += (w.data[(co * cin + ci) * k + tap] * x.data[ci * t + i as usize])
                                as f64;
                        }
                    }
                }
                y.data[co * t_out + o] = acc as f32;
            }
        }
        y
    }

    fn conv_transpose_naive(
        x: &Tensor,
        w: &Tensor,
        b: Option<&Tensor>,
        s: usize,
        p: usize,
    ) -> Tensor {
        let (cin, t) = (x.dim(0), x.dim(1));
        let (_, cout, k) = (w.dim(0), w.dim(1), w.dim(2));
        let t_out = (t - 1) * s + k - 2 * p;
        let mut y = vec![0f64; cout * t_out];
        for co in 0..cout {
            for ci in 0..cin {
                for i in 0..t {
                    for tap in 0..k {
                        let o = (i * s + tap) as isize - p as isize;
                        if o >= 0 && (o as usize) < t_out {
                            y[co * t_out + o as usize] +=
                                (w.data[(ci * cout + co) * k + tap] * x.data[ci * t + i]) as f64;
                        }
                    }
                }
            }
            if let Some(b) = b {
                for o in 0..t_out {
                    y[co * t_out + o] += b.data[co] as f64;
                }
            }
        }
        Tensor::new(vec![cout, t_out], y.into_iter().map(|v| v as f32).collect())
    }

    #[test]
    fn conv1d_matches_direct_loops() {
        for &(cin, cout, t, k, pad, dil) in &[
            (3, 4, 10, 1, 0, 1),
            (5, 7, 13, 3, 1, 1),
            (4, 6, 9, 5, 2, 1),
            (3, 3, 20, 3, 6, 6),
            (2, 5, 8, 7, 3, 1),
        ] {
            let x = Tensor::new(vec![cin, t], lcg(1, cin * t));
            let w = Tensor::new(vec![cout, cin, k], lcg(2, cout * cin * k));
            let b = Tensor::new(vec![cout], lcg(3, cout));
            let got = conv1d(&x, &w, Some(&b), pad, dil);
            let want = conv1d_naive(&x, &w, Some(&b), pad, dil);
            assert_eq!(got.shape, want.shape);
            assert!(rel_l2(&got.data, &want.data) < 1e-6, "k{k} d{dil}");
        }
    }

    #[test]
    fn conv_transpose_matches_direct_loops() {
        for &(cin, cout, t, k, s, p) in
            &[(4, 3, 5, 16, 8, 4), (3, 2, 7, 8, 4, 2), (2, 2, 1, 4, 2, 1)]
        {
            let x = Tensor::new(vec![cin, t], lcg(4, cin * t));
            let w = Tensor::new(vec![cin, cout, k], lcg(5, cin * cout * k));
            let b = Tensor::new(vec![cout], lcg(6, cout));
            let got = conv_transpose1d(&x, &w, Some(&b), s, p);
            let want = conv_transpose_naive(&x, &w, Some(&b), s, p);
            assert_eq!(got.shape, want.shape);
            assert!(rel_l2(&got.data, &want.data) < 1e-6);
        }
    }

    #[test]
    fn depthwise_matches_grouped_definition() {
        // Dilations whose outer taps reach past short rows too (9 · 1 > 3).
        for (c, t, k, dil) in [(4, 11, 3, 3), (3, 3, 3, 9), (2, 1, 5, 2), (2, 12, 3, 9)] {
            depthwise_case(c, t, k, dil);
        }
    }

    fn depthwise_case(c: usize, t: usize, k: usize, dil: usize) {
        let x = Tensor::new(vec![c, t], lcg(7, c * t));
        let w = Tensor::new(vec![c, 1, k], lcg(8, c * k));
        let got = depthwise_conv1d(&x, &w, None, dil);
        for ch in 0..c {
            let xc = Tensor::new(vec![1, t], x.row(ch).to_vec());
            let wc = Tensor::new(vec![1, 1, k], w.data[ch * k..(ch + 1) * k].to_vec());
            let want = conv1d_naive(&xc, &wc, None, dil * (k - 1) / 2, dil);
            assert!(rel_l2(got.row(ch), &want.data) < 1e-6);
        }
    }

    #[test]
    fn layer_norm_normalises_each_step() {
        let (c, t) = (8, 5);
        let mut x = Tensor::new(vec![c, t], lcg(9, c * t));
        let ones = Tensor::new(vec![c], vec![1.0; c]);
        let zeros = Tensor::zeros(vec![c]);
        layer_norm_channels(&mut x, &ones, &zeros, 1e-5);
        for o in 0..t {
            let col: Vec<f32> = (0..c).map(|ch| x.data[ch * t + o]).collect();
            let mean: f32 = col.iter().sum::<f32>() / c as f32;
            let var: f32 = col.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / c as f32;
            assert!(mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-2);
        }
    }

    #[test]
    fn conv1d_fused_matches_direct_loops() {
        // Short and long inputs (several tiles), padding wider than the input, dilation.
        for &(cin, cout, t, k, pad, dil) in &[
            (3, 4, 10, 1, 0, 1),
            (5, 7, 13, 3, 1, 1),
            (4, 6, 9, 5, 2, 1),
            (3, 3, 20, 3, 6, 6),
            (2, 5, 8, 7, 3, 1),
            (2, 3, 3, 7, 18, 6),
            (6, 5, 3001, 7, 9, 3),
            (4, 4, 2500, 3, 1, 1),
        ] {
            let x = Tensor::new(vec![cin, t], lcg(11, cin * t));
            let w = Tensor::new(vec![cout, cin, k], lcg(12, cout * cin * k));
            let b = Tensor::new(vec![cout], lcg(13, cout));
            let plain = conv1d_fused(&x, &w, Some(&b), pad, dil, None, None);
            let want = conv1d_naive(&x, &w, Some(&b), pad, dil);
            assert_eq!(plain.shape, want.shape);
            assert!(rel_l2(&plain.data, &want.data) < 1e-6, "k{k} d{dil} t{t}");
            // Fusions: conv(lrelu(x)) + bias + residual.
            let mut xa = x.clone();
            leaky_relu(&mut xa.data, 0.1);
            let res = Tensor::new(want.shape.clone(), lcg(14, want.len()));
            let mut want = conv1d_naive(&xa, &w, Some(&b), pad, dil);
            add_assign(&mut want.data, &res.data);
            let got = conv1d_fused(&x, &w, Some(&b), pad, dil, Some(0.1), Some(&res));
            assert!(
                rel_l2(&got.data, &want.data) < 1e-6,
                "fused k{k} d{dil} t{t}"
            );
        }
    }

    #[test]
    fn a_short_wide_convolution_splits_its_rows_between_threads_bit_for_bit() {
        // The encoder's shapes at a clause's length (under ROW_SPLIT_COLUMNS, parallel), a
        // row count that leaves the last part short, and the fused form.
        for &(cin, cout, t, k, pad) in &[(192, 768, 111, 3, 1), (192, 200, 97, 1, 0)] {
            let x = Tensor::new(vec![cin, t], lcg(21, cin * t));
            let w = Tensor::new(vec![cout, cin, k], lcg(22, cout * cin * k));
            let b = Tensor::new(vec![cout], lcg(23, cout));
            let res = Tensor::new(vec![cout, t], lcg(24, cout * t));
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| {
                    assert_eq!(row_parts(cout, t, cout * cin * k * t), threads);
                    (
                        conv1d_fused(&x, &w, Some(&b), pad, 1, None, None),
                        conv1d_fused(&x, &w, Some(&b), pad, 1, Some(0.1), Some(&res)),
                    )
                })
            };
            let (one, one_fused) = run(1);
            let want = conv1d_naive(&x, &w, Some(&b), pad, 1);
            assert!(rel_l2(&one.data, &want.data) < 1e-6, "{cout} rows");
            for threads in [2, 3] {
                let (got, got_fused) = run(threads);
                assert_eq!(got.data, one.data, "{threads} threads, {cout} rows");
                assert_eq!(got_fused.data, one_fused.data, "fused, {threads} threads");
            }
        }
    }

    #[test]
    fn conv_transpose_fast_matches_direct_loops() {
        for &(cin, cout, t, k, s, p) in &[
            (4, 3, 5, 16, 8, 4),
            (3, 2, 7, 8, 4, 2),
            (2, 2, 1, 4, 2, 1),
            (3, 2, 6, 5, 2, 1),
            (2, 3, 4, 3, 3, 0),
            (5, 4, 700, 16, 8, 4),
            (3, 3, 1500, 8, 4, 2),
        ] {
            let x = Tensor::new(vec![cin, t], lcg(15, cin * t));
            let w = Tensor::new(vec![cin, cout, k], lcg(16, cin * cout * k));
            let b = Tensor::new(vec![cout], lcg(17, cout));
            let got = conv_transpose1d_fast(&x, &w, Some(&b), s, p);
            let want = conv_transpose_naive(&x, &w, Some(&b), s, p);
            assert_eq!(got.shape, want.shape);
            assert!(rel_l2(&got.data, &want.data) < 1e-6, "k{k} s{s} p{p} t{t}");
        }
    }
}
