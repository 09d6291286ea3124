//! Time tiling shared by the convolutions: tiles of output columns, run on the rayon pool
//! when the work is large enough, each with its own reusable scratch.

use hark_voice::tensor::Tensor;

/// Below this many multiply-accumulates work runs on one thread: spawning costs more.
pub(crate) const PARALLEL_MACS: usize = 1 << 20;

/// Raw output pointer shared by tile tasks that write disjoint columns.
#[derive(Clone, Copy)]
pub(crate) struct SharedOut(pub(crate) *mut f32);
// SAFETY: tasks only write disjoint column ranges of the buffer behind the pointer.
unsafe impl Send for SharedOut {}
unsafe impl Sync for SharedOut {}

impl SharedOut {
    /// A method, not `.0`, so closures capture the `Sync` wrapper rather than the raw field.
    pub(crate) fn ptr(self) -> *mut f32 {
        self.0
    }

    /// Columns `[c0, c0 + n)` of row `r` (row length `stride`).
    ///
    /// # Safety
    /// The columns must be inside the buffer and written by no other live reference.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn cols(&self, r: usize, stride: usize, c0: usize, n: usize) -> &mut [f32] {
        unsafe { std::slice::from_raw_parts_mut(self.0.add(r * stride + c0), n) }
    }
}

/// A `[rows, cols]` output that tiles fill through [`SharedOut`] before [`Unfilled::finish`]:
/// no zeroing pass first. That pass was a memset on one thread of up to 28 MB (the decoder's
/// last stage on a 10 s sentence), page faults included, while the other core waited.
pub(crate) struct Unfilled {
    shape: Vec<usize>,
    data: Vec<f32>,
}

impl Unfilled {
    pub(crate) fn new(shape: Vec<usize>) -> Self {
        let n = shape.iter().product();
        Self {
            shape,
            data: Vec::with_capacity(n),
        }
    }

    /// Where the tiles write: the buffer's whole capacity, `rows × cols` floats.
    pub(crate) fn out(&mut self) -> SharedOut {
        SharedOut(self.data.as_mut_ptr())
    }

    /// # Safety
    /// Every one of the `rows × cols` elements has been written through [`Unfilled::out`].
    pub(crate) unsafe fn finish(mut self) -> Tensor {
        let n = self.shape.iter().product();
        // SAFETY: the capacity is `n` and the caller wrote all of it.
        unsafe { self.data.set_len(n) };
        Tensor::new(self.shape, self.data)
    }
}

/// Runs `body(tile_start, tile_end, scratch)` over `[0, total)` in tiles of `tile`,
/// on the rayon pool when the work (`macs`) is worth it.
pub(crate) fn for_each_tile<S: Default>(
    total: usize,
    tile: usize,
    macs: usize,
    body: impl Fn(usize, usize, &mut S) + Sync,
) {
    use rayon::prelude::*;
    let n_tiles = total.div_ceil(tile);
    let run = |i: usize, scratch: &mut S| body(i * tile, ((i + 1) * tile).min(total), scratch);
    if macs >= PARALLEL_MACS && n_tiles > 1 {
        (0..n_tiles)
            .into_par_iter()
            .for_each_init(S::default, |scratch, i| run(i, scratch));
    } else {
        let mut scratch = S::default();
        (0..n_tiles).for_each(|i| run(i, &mut scratch));
    }
}

/// Output columns per tile: `rows` × (tile + `span`) floats of per-tile scratch fit in L2,
/// and when the work runs in parallel the tile count is a multiple of the thread count so
/// both cores finish together.
pub(crate) fn conv_tile_columns(rows: usize, span: usize, total: usize, macs: usize) -> usize {
    const BUDGET: usize = 64 * 1024; // floats
    let fit = (BUDGET / rows.max(1)).saturating_sub(span).clamp(48, 4096);
    let mut tiles = total.div_ceil(fit);
    if macs >= PARALLEL_MACS {
        let th = rayon::current_num_threads().max(1);
        tiles = tiles.max(th).div_ceil(th) * th;
    }
    total.div_ceil(tiles.max(1)).next_multiple_of(16)
}

/// Copies columns `[c0, c0 + width)` of the rows of `x` (each `t` long) into `buf` as
/// `[rows, width]`, zero outside `[0, t)`, through LeakyReLU(`slope`) when given.
pub(crate) fn padded_block(
    x: &[f32],
    t: usize,
    c0: isize,
    width: usize,
    slope: Option<f32>,
    buf: &mut Vec<f32>,
) {
    let rows = x.len() / t.max(1);
    // Old contents are overwritten row by row; resizing only to avoid a memset per tile.
    buf.resize(rows * width, 0.0);
    let lo = (-c0).clamp(0, width as isize) as usize;
    let hi = (t as isize - c0).clamp(lo as isize, width as isize) as usize;
    for (ci, row) in buf.chunks_exact_mut(width).enumerate() {
        row[..lo].fill(0.0);
        row[hi..].fill(0.0);
        if lo == hi {
            continue;
        }
        let src = &x[ci * t + (c0 + lo as isize) as usize..][..hi - lo];
        let dst = &mut row[lo..hi];
        match slope {
            Some(sl) => dst
                .iter_mut()
                .zip(src)
                .for_each(|(d, &v)| *d = if v < 0.0 { v * sl } else { v }),
            None => dst.copy_from_slice(src),
        }
    }
}

/// [`padded_block`] on a `[C, T]` tensor.
pub(crate) fn padded_block_of(
    x: &Tensor,
    c0: isize,
    width: usize,
    slope: Option<f32>,
    buf: &mut Vec<f32>,
) {
    padded_block(&x.data, x.dim(1), c0, width, slope, buf)
}
