//! The decoder's upsampling stage fused over time tiles: LReLU → ConvTranspose → mean of the
//! ResBlock2s. Each tile of output columns is computed from its input with halos, so every
//! intermediate stays in cache instead of travelling through memory as a full-length tensor
//! (the stage's tensors are tens of MB; its convolutions have few channels).
//!
//! Numerically the same operations in the same order as the unfused stage: columns outside
//! the sequence are zeroed between convolutions exactly as zero padding would see them.

use super::direct::{ConvDims, conv_valid_acc};
use super::polyphase::{PolyScratch, Polyphase};
use super::tiles::{PARALLEL_MACS, Unfilled, for_each_tile, padded_block};
use hark_voice::tensor::Tensor;

/// One residual convolution `x ← x + conv(LReLU(x))` of a ResBlock2.
pub(crate) struct ResConv<'a> {
    pub w: &'a Tensor,
    pub b: &'a Tensor,
    pub dil: usize,
}

/// A stage's weights: the upsampler and, per ResBlock2, its chain of residual convolutions.
pub(crate) struct Stage<'a> {
    pub ups: &'a Polyphase,
    pub ups_b: &'a Tensor,
    pub blocks: Vec<Vec<ResConv<'a>>>,
    pub slope: f32,
}

#[derive(Default)]
struct Scratch {
    poly: PolyScratch,
    up: Vec<f32>,
    act: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
    sum: Vec<f32>,
}

/// Halo of a chain of convolutions: Σ dil·(K−1)/2.
fn halo(convs: &[ResConv]) -> usize {
    convs.iter().map(|c| c.dil * (c.w.dim(2) - 1) / 2).sum()
}

impl Stage<'_> {
    /// `x [Cin, T]` → `[Cout, out_len(T)]`. `tile` (output columns, rounded to the stride)
    /// defaults to a size whose buffers fit in L2.
    pub fn run(&self, x: &Tensor, tile: Option<usize>) -> Tensor {
        let c = self.ups_b.len();
        let s = self.ups.stride();
        let t_out = self.ups.out_len(x.dim(1));
        let hs = self.blocks.iter().map(|b| halo(b)).max().unwrap_or(0);
        let hs = hs.div_ceil(s) * s;
        let tile = tile
            .unwrap_or_else(|| (48 * 1024 / c).saturating_sub(2 * hs).max(64))
            .next_multiple_of(s)
            .min(t_out.next_multiple_of(s));
        let macs: usize = self
            .blocks
            .iter()
            .flatten()
            .map(|rc| c * c * rc.w.dim(2) * t_out)
            .sum();
        // An even number of tiles so both cores finish together.
        let th = rayon::current_num_threads().max(1);
        let n_tiles = t_out.div_ceil(tile);
        let tile = if macs >= PARALLEL_MACS && !n_tiles.is_multiple_of(th) {
            t_out
                .div_ceil(n_tiles.div_ceil(th) * th)
                .next_multiple_of(s)
        } else {
            tile
        };
        let mut out = Unfilled::new(vec![c, t_out]);
        let dst = out.out();
        for_each_tile(t_out, tile, macs, |a, b, sc: &mut Scratch| {
            self.tile(x, t_out, hs, a, b, sc);
            for co in 0..c {
                let src = &sc.sum[co * (b - a)..(co + 1) * (b - a)];
                // SAFETY: columns [a, b) of row `co` are inside the buffer and this tile's
                // alone; a copy through the pointer, as they are not initialised yet.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        src.as_ptr(),
                        dst.ptr().add(co * t_out + a),
                        b - a,
                    )
                };
            }
        });
        // SAFETY: the tiles cover [0, t_out) and each wrote its columns of every row.
        unsafe { out.finish() }
    }

    /// Computes output columns `[a, b)` into `sc.sum` as `[C, b − a]`; `a` is a multiple
    /// of the stride and `hs` (≥ every block's halo) too.
    fn tile(&self, x: &Tensor, t_out: usize, hs: usize, a: usize, b: usize, sc: &mut Scratch) {
        let c = self.ups_b.len();
        let s = self.ups.stride();
        let n = b - a;
        // Upsampled columns [u0, u0 + wu), zero outside [0, t_out).
        let u0 = a as isize - hs as isize;
        let nq = (n + 2 * hs).div_ceil(s);
        let wu = nq * s;
        sc.up.resize(c * wu, 0.0);
        let up = &mut sc.up;
        let (lo, hi) = valid(u0, wu, t_out);
        self.ups.tile(
            x,
            Some(self.ups_b),
            Some(self.slope),
            u0 / s as isize,
            nq,
            &mut sc.poly,
            |co, row| {
                let dstrow = &mut up[co * wu..(co + 1) * wu];
                dstrow[..lo].fill(0.0);
                dstrow[lo..hi].copy_from_slice(&row[lo..hi]);
                dstrow[hi..].fill(0.0);
            },
        );
        sc.sum.resize(c * n, 0.0);
        for (bi, block) in self.blocks.iter().enumerate() {
            // `cur` holds columns [c0, c0 + cw) of the running x.
            let (mut c0, mut cw) = (u0, wu);
            let mut from_up = true;
            let mut rem = halo(block);
            for rc in block {
                let h = rc.dil * (rc.w.dim(2) - 1) / 2;
                rem -= h;
                // This conv's output: columns [y0, y0 + wy), reading [y0 − h, y0 + wy + h).
                let y0 = a as isize - rem as isize;
                let wy = n + 2 * rem;
                let off = (y0 - h as isize - c0) as usize;
                let cur: &[f32] = if from_up { &sc.up } else { &sc.a };
                padded_block(
                    cur,
                    cw,
                    off as isize,
                    wy + 2 * h,
                    Some(self.slope),
                    &mut sc.act,
                );
                let y = &mut sc.b;
                y.resize(c * wy, 0.0); // every element is written below
                for (co, row) in y.chunks_exact_mut(wy).enumerate() {
                    let res = &cur[co * cw + off + h..][..wy];
                    let bias = rc.b.data[co];
                    row.iter_mut().zip(res).for_each(|(d, &r)| *d = r + bias);
                }
                let d = ConvDims {
                    cin: c,
                    cout: c,
                    k: rc.w.dim(2),
                    dil: rc.dil,
                    n: wy,
                };
                conv_valid_acc(&sc.act, wy + 2 * h, &rc.w.data, d, y, wy);
                // Outside the sequence the next conv must see zero padding.
                let (lo, hi) = valid(y0, wy, t_out);
                if lo > 0 || hi < wy {
                    for row in y.chunks_exact_mut(wy) {
                        row[..lo].fill(0.0);
                        row[hi..].fill(0.0);
                    }
                }
                std::mem::swap(&mut sc.a, &mut sc.b);
                (c0, cw, from_up) = (y0, wy, false);
            }
            let last: &[f32] = if from_up { &sc.up } else { &sc.a };
            let off = (a as isize - c0) as usize;
            for (co, acc) in sc.sum.chunks_exact_mut(n).enumerate() {
                let src = &last[co * cw + off..][..n];
                if bi == 0 {
                    acc.copy_from_slice(src);
                } else {
                    acc.iter_mut().zip(src).for_each(|(s, &v)| *s += v);
                }
            }
        }
        let k = self.blocks.len() as f32;
        sc.sum.iter_mut().for_each(|v| *v /= k);
    }
}

/// The part `[lo, hi)` of a block of `w` columns starting at global column `c0` that lies
/// inside `[0, t)`.
fn valid(c0: isize, w: usize, t: usize) -> (usize, usize) {
    let lo = (-c0).clamp(0, w as isize) as usize;
    let hi = (t as isize - c0).clamp(lo as isize, w as isize) as usize;
    (lo, hi)
}
