//! The decoder's upsampling stage fused over time tiles: LReLU → ConvTranspose → mean of the
//! ResBlock2s. Each tile of output columns is computed from its input with halos, so every
//! intermediate stays in cache instead of travelling through memory as a full-length tensor
//! (the stage's tensors are tens of MB; its convolutions have few channels).
//!
//! Numerically the same operations in the same order as the unfused stage: columns outside
//! the sequence are zeroed between convolutions exactly as zero padding would see them.

use super::direct::{ActOut, ConvDims, Init, conv_valid_fused, lrelu};
use super::isa::{Isa, isa};
use super::polyphase::{PolyScratch, Polyphase};
use super::tiles::{PARALLEL_MACS, Unfilled, for_each_tile};
use super::winograd::{Winograd, conv_valid_fused_winograd, with_scratch};
use hark_voice::tensor::Tensor;

/// One residual convolution `x ← x + conv(LReLU(x))` of a ResBlock2.
pub(crate) struct ResConv<'a> {
    pub w: &'a Tensor,
    pub b: &'a Tensor,
    pub dil: usize,
    /// The same weights for Winograd's algorithm, where the voice's packs have them.
    pub wino: Option<&'a Winograd>,
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
    /// The upsampled block, and its LeakyReLU (the input of every block's first convolution).
    up: Vec<f32>,
    act_up: Vec<f32>,
    /// A chain's running x and its LeakyReLU, alternating between the two of each pair.
    y: [Vec<f32>; 2],
    act: [Vec<f32>; 2],
    sum: Vec<f32>,
}

/// The post convolution's per-tile scratch: the stage's own, its input and its output row.
#[derive(Default)]
struct PostScratch {
    stage: Scratch,
    act: Vec<f32>,
    row: Vec<f32>,
}

/// The decoder's `conv_post`: `w [1, C, K]`, an optional bias, and the LeakyReLU slope before it.
pub(crate) struct PostConv<'a> {
    pub w: &'a Tensor,
    pub b: Option<&'a Tensor>,
    pub slope: f32,
}

/// Floats per channel row of a tile, all rows together: the stage's buffers of one tile
/// (the upsampled block, its activation, two running x and their activations, the sum) then
/// stay around L2's size. 96 Ki floats against the earlier 48 Ki: fewer halo columns
/// recomputed (the 128-channel stage's tile grows from 294 to 678 columns), and the 2-thread
/// sentence of 963 frames took 295–299 ms against 308–311 (`stage_times`, Zen 4 VM, 1 MiB
/// L2; 64 Ki: 302–305, 128 Ki: 299–304).
const TILE_FLOATS: usize = 96 * 1024;

/// How a stage's run is tiled.
struct Plan {
    t_out: usize,
    /// Halo of the widest block, rounded up to the stride.
    hs: usize,
    tile: usize,
    macs: usize,
}

/// `(&pair[from], &mut pair[1 − from])`.
fn read_write(pair: &mut [Vec<f32>; 2], from: usize) -> (&[f32], &mut Vec<f32>) {
    let (first, second) = pair.split_at_mut(1);
    if from == 0 {
        (&first[0], &mut second[0])
    } else {
        (&second[0], &mut first[0])
    }
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
        let plan = self.plan(x, tile);
        let t_out = plan.t_out;
        let mut out = Unfilled::new(vec![c, t_out]);
        let dst = out.out();
        let blocks = self.blocks.len() as f32;
        for_each_tile(t_out, plan.tile, plan.macs, |a, b, sc: &mut Scratch| {
            self.tile(x, t_out, plan.hs, a, b, sc);
            for co in 0..c {
                let src = &sc.sum[co * (b - a)..(co + 1) * (b - a)];
                let row = dst.ptr().wrapping_add(co * t_out + a);
                // The blocks' mean. SAFETY: columns [a, b) of row `co` are inside the buffer
                // and this tile's alone; written through the pointer, as not initialised yet.
                for (j, &v) in src.iter().enumerate() {
                    unsafe { row.add(j).write(v / blocks) };
                }
            }
        });
        // SAFETY: the tiles cover [0, t_out) and each wrote its columns of every row.
        unsafe { out.finish() }
    }

    /// The last stage with the decoder's `conv_post` (LeakyReLU, then C → 1 channel, "same"
    /// padding) applied tile by tile: `x [Cin, T]` → `out_len(T)` samples before the tanh.
    /// Each tile widens its window by the post convolution's reach and convolves its own
    /// columns while they are in cache, so the stage's output (32 × 256 floats a frame,
    /// 20 MB for a 10 s sentence) is never written out, read back or faulted in.
    pub fn run_post(&self, x: &Tensor, post: &PostConv, tile: Option<usize>) -> Vec<f32> {
        let c = self.ups_b.len();
        let (k, s) = (post.w.dim(2), self.ups.stride());
        assert!(k % 2 == 1 && post.w.shape == [1, c, k], "conv_post shape");
        let hp = (k - 1) / 2;
        let ext = hp.div_ceil(s) * s;
        let plan = self.plan(x, tile);
        let t_out = plan.t_out;
        let mut out = Unfilled::new(vec![t_out]);
        let dst = out.out();
        let blocks = self.blocks.len() as f32;
        let bias = post.b.map_or(0.0, |b| b.data[0]);
        for_each_tile(t_out, plan.tile, plan.macs, |a, b, sc: &mut PostScratch| {
            // The stage on [a0, b0) ⊇ [a − hp, b + hp) ∩ [0, t_out).
            let (a0, b0) = (a.saturating_sub(ext), (b + ext).min(t_out));
            let n0 = b0 - a0;
            self.tile(x, t_out, plan.hs, a0, b0, &mut sc.stage);
            // conv_post's input, columns [a − hp, b + hp): the mean through LeakyReLU, zero
            // outside the sequence.
            let (n, width) = (b - a, b - a + 2 * hp);
            let first = a as isize - hp as isize;
            sc.act.resize(c * width, 0.0);
            for (co, row) in sc.act.chunks_exact_mut(width).enumerate() {
                let src = &sc.stage.sum[co * n0..(co + 1) * n0];
                for (j, v) in row.iter_mut().enumerate() {
                    let g = first + j as isize;
                    *v = if g < 0 || g as usize >= t_out {
                        0.0
                    } else {
                        lrelu(src[g as usize - a0] / blocks, post.slope)
                    };
                }
            }
            sc.row.clear();
            sc.row.resize(n, bias);
            let d = ConvDims {
                cin: c,
                cout: 1,
                k,
                dil: 1,
                n,
            };
            conv_valid_fused(&sc.act, width, &post.w.data, d, &mut sc.row, n, None, None);
            // SAFETY: samples [a, b) are inside the buffer and this tile's alone; copied
            // through the pointer, as they are not initialised yet.
            unsafe { std::ptr::copy_nonoverlapping(sc.row.as_ptr(), dst.ptr().add(a), n) };
        });
        // SAFETY: the tiles cover [0, t_out) and each wrote its samples.
        unsafe { out.finish() }.data
    }

    /// Tile width, halo and work of a run on `x`.
    fn plan(&self, x: &Tensor, tile: Option<usize>) -> Plan {
        let c = self.ups_b.len();
        let s = self.ups.stride();
        let t_out = self.ups.out_len(x.dim(1));
        let hs = self.blocks.iter().map(|b| halo(b)).max().unwrap_or(0);
        let hs = hs.div_ceil(s) * s;
        let tile = tile
            .unwrap_or_else(|| (TILE_FLOATS / c).saturating_sub(2 * hs).max(64))
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
        Plan {
            t_out,
            hs,
            tile,
            macs,
        }
    }

    /// Computes output columns `[a, b)` into `sc.sum` as `[C, b − a]`, the sum of the blocks
    /// (the caller divides by their number); `a` is a multiple of the stride and `hs` (≥
    /// every block's halo) too.
    ///
    /// Each convolution starts its accumulators from its residual plus bias and writes its
    /// LeakyReLU beside its result for the next one ([`conv_valid_fused`]), and every block's
    /// last convolution adds into the sum: no pass over the activations between convolutions.
    fn tile(&self, x: &Tensor, t_out: usize, hs: usize, a: usize, b: usize, sc: &mut Scratch) {
        let c = self.ups_b.len();
        let s = self.ups.stride();
        let n = b - a;
        // Upsampled columns [u0, u0 + wu), zero outside [0, t_out).
        let u0 = a as isize - hs as isize;
        let nq = (n + 2 * hs).div_ceil(s);
        let wu = nq * s;
        sc.up.resize(c * wu, 0.0);
        sc.act_up.resize(c * wu, 0.0);
        let (up, act_up) = (&mut sc.up, &mut sc.act_up);
        let (lo, hi) = valid(u0, wu, t_out);
        let slope = self.slope;
        self.ups.tile(
            x,
            Some(self.ups_b),
            Some(slope),
            u0 / s as isize,
            nq,
            &mut sc.poly,
            |co, row| {
                let rows = co * wu..(co + 1) * wu;
                let (dst, act) = (&mut up[rows.clone()], &mut act_up[rows]);
                dst[..lo].fill(0.0);
                dst[lo..hi].copy_from_slice(&row[lo..hi]);
                dst[hi..].fill(0.0);
                act.iter_mut()
                    .zip(dst.iter())
                    .for_each(|(a, &v)| *a = lrelu(v, slope));
            },
        );
        sc.sum.resize(c * n, 0.0);
        let Scratch {
            up,
            act_up,
            y,
            act,
            sum,
            ..
        } = sc;
        // The portable transforms are the compiler's loops, and on the decoder's
        // convolutions they cost what the GEMMs save (`stage_times` with `avx2` before the
        // AVX2 transforms: 497 ms against the direct kernel's 487 for the 963-frame sentence
        // on the Zen 4 VM); AVX2 and AVX-512 have their transforms in registers.
        let winograd_pays = isa() >= Isa::Avx2;
        for (bi, block) in self.blocks.iter().enumerate() {
            if block.is_empty() {
                // A block without convolutions passes its input on.
                let off = (a as isize - u0) as usize;
                for (co, acc) in sum.chunks_exact_mut(n).enumerate() {
                    let src = &up[co * wu + off..][..n];
                    if bi == 0 {
                        acc.copy_from_slice(src);
                    } else {
                        acc.iter_mut().zip(src).for_each(|(s, &v)| *s += v);
                    }
                }
                continue;
            }
            // The running x holds columns [c0, c0 + cw): `up` at first, then `y[cur]`; its
            // LeakyReLU is in `act_up`, then in `act[cur]`.
            let (mut c0, mut cw, mut cur) = (u0, wu, None::<usize>);
            let mut rem = halo(block);
            for (j, rc) in block.iter().enumerate() {
                let last = j + 1 == block.len();
                let k = rc.w.dim(2);
                let h = rc.dil * (k - 1) / 2;
                rem -= h;
                // This conv's output: columns [y0, y0 + wy), reading [y0 − h, y0 + wy + h).
                let y0 = a as isize - rem as isize;
                let wy = n + 2 * rem;
                let off = (y0 - h as isize - c0) as usize;
                let d = ConvDims {
                    cin: c,
                    cout: c,
                    k,
                    dil: rc.dil,
                    n: wy,
                };
                // Read the pair's `from`, write its other half.
                let from = cur.unwrap_or(1);
                let (y_in, y_out) = read_write(y, from);
                let (act_in, act_out) = read_write(act, from);
                let (input, residual): (&[f32], &[f32]) = match cur {
                    None => (act_up, up),
                    Some(_) => (act_in, y_in),
                };
                let init = Init {
                    res: &residual[off + h..],
                    rs: cw,
                    bias: &rc.b.data,
                    add_out: last && bi > 0,
                };
                let w = &rc.w.data;
                let conv = |out: &mut [f32], os: usize, act: Option<ActOut>| match rc
                    .wino
                    .filter(|_| winograd_pays)
                {
                    Some(wg) => with_scratch(|sc| {
                        let x = &input[off..];
                        conv_valid_fused_winograd(wg, x, cw, rc.dil, wy, out, os, init, act, sc)
                    }),
                    None => conv_valid_fused(&input[off..], cw, w, d, out, os, Some(init), act),
                };
                if last {
                    conv(sum, n, None);
                    break;
                }
                y_out.resize(c * wy, 0.0); // every element is written by the convolution
                act_out.resize(c * wy, 0.0);
                let next_act = ActOut {
                    act: act_out,
                    stride: wy,
                    slope: self.slope,
                };
                conv(y_out, wy, Some(next_act));
                // Outside the sequence the next conv must see zero padding.
                let (lo, hi) = valid(y0, wy, t_out);
                if lo > 0 || hi < wy {
                    for row in y_out
                        .chunks_exact_mut(wy)
                        .chain(act_out.chunks_exact_mut(wy))
                    {
                        row[..lo].fill(0.0);
                        row[hi..].fill(0.0);
                    }
                }
                (c0, cw, cur) = (y0, wy, Some(1 - from));
            }
        }
    }
}

/// The part `[lo, hi)` of a block of `w` columns starting at global column `c0` that lies
/// inside `[0, t)`.
fn valid(c0: isize, w: usize, t: usize) -> (usize, usize) {
    let lo = (-c0).clamp(0, w as isize) as usize;
    let hi = (t as isize - c0).clamp(lo as isize, w as isize) as usize;
    (lo, hi)
}
