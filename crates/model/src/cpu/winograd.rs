//! Winograd's minimal filtering, F(m, K) (Toom–Cook), for "valid" 1-D convolutions with many
//! channels: the encoder's FFN, the flow's WaveNet convolutions (192 → 384, K = 5), the
//! decoder's conv_pre and its 128-channel ResBlocks (dilated ones as their phases end to end).
//!
//! `m` outputs of a K-tap filter come from `n = m + K − 1` products instead of `m·K`:
//! each channel's input tile is transformed (`Bᵀ`), the weights (`G`: once per voice for the
//! decoder, at each call for the others), the products of the `n` points are `n`
//! channel-mixing GEMMs, and `Aᵀ` folds them back into `m` outputs. With many channels the
//! GEMMs are all the work, so F(4, 5) does 8/20 of the direct convolution's multiply-adds.
//! Why not everywhere: the transforms are per channel and the GEMMs per channel pair, so they
//! pay only where channels are many (the decoder's 32- and 64-channel stages gain nothing or
//! lose), and the interpolation points ±2, ±½ amplify rounding (measured in the tests: ≤ 1e-6
//! relative against f64).
//!
//! The GEMMs run on the direct kernel with one tap ([`super::direct`]), so the instruction
//! set dispatch and register tiling are shared.

use super::direct::{ActOut, ConvDims, Init, conv_valid_acc_raw, lrelu};
use super::isa::{Isa, isa};
use super::tiles::{PARALLEL_MACS, Unfilled, for_each_tile, padded_block_of};
use hark_voice::tensor::Tensor;

/// Tiles (of `m` outputs) per chunk: one AVX-512 register tile's width, so each GEMM is
/// whole register tiles and a chunk's transformed input stays in L2.
const CHUNK_TILES: usize = 48;
/// Output channels whose products are kept at once (bounds the product buffer).
const ROW_BLOCK: usize = 64;
/// Filters (`[Cin]`-rows of K taps) transformed together by [`Winograd::refill_rows`]: 256 of
/// K = 7 are 7 KiB of weights, read once per point from L1.
const REFILL_ROWS: usize = 256;

/// Runs `$body(args…)` compiled for AVX-512 or AVX2 when the CPU has them (the transforms'
/// loops are written for the compiler to vectorise).
macro_rules! dispatch {
    ($body:ident($($arg:ident: $ty:ty),*)) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx512f")]
            fn v4($($arg: $ty),*) {
                $body($($arg),*)
            }
            #[target_feature(enable = "avx2,fma")]
            fn v3($($arg: $ty),*) {
                $body($($arg),*)
            }
            match isa() {
                // SAFETY: `isa` never exceeds what the CPU has (AVX-512F).
                Isa::Avx512 => return unsafe { v4($($arg),*) },
                // SAFETY: as above (AVX2 and FMA).
                Isa::Avx2 => return unsafe { v3($($arg),*) },
                Isa::Scalar => {}
            }
        }
        $body($($arg),*)
    }};
}

/// The interpolation points, best conditioned first (∞ is added on top).
const POINTS: [f64; 8] = [0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0];

/// F(m, K)'s three matrices in f64: `Aᵀ [m, n]`, `G [n, K]`, `Bᵀ [n, n]`, such that
/// `y_i = Σ_p Aᵀ[i][p] · (G g)_p · (Bᵀ d)_p = Σ_j g_j · d_{i+j}`.
///
/// From the linear convolution s = g ∗ h evaluated at the points (∞ gives the top
/// coefficient) and interpolated back, `s = C ((E_g g) ⊙ (E_h h))` with `C = V⁻¹`;
/// correlation is its transpose: `y = E_hᵀ ((E_g g) ⊙ (Cᵀ d))`.
fn toom_cook(m: usize, k: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let n = m + k - 1;
    assert!(
        m >= 1 && k >= 1 && n - 1 <= POINTS.len(),
        "F({m}, {k}) needs too many points"
    );
    // Row p of an evaluation matrix with `cols` coefficients.
    let eval = |p: usize, cols: usize| -> Vec<f64> {
        if p + 1 == n {
            (0..cols)
                .map(|j| f64::from(u8::from(j + 1 == cols)))
                .collect()
        } else {
            (0..cols).map(|j| POINTS[p].powi(j as i32)).collect()
        }
    };
    let mut at = vec![0.0; m * n];
    let mut g = vec![0.0; n * k];
    let mut v = vec![0.0; n * n];
    for p in 0..n {
        for (i, e) in eval(p, m).into_iter().enumerate() {
            at[i * n + p] = e;
        }
        g[p * k..(p + 1) * k].copy_from_slice(&eval(p, k));
        v[p * n..(p + 1) * n].copy_from_slice(&eval(p, n));
    }
    let c = invert(&v, n);
    let bt = (0..n * n).map(|i| c[(i % n) * n + i / n]).collect();
    (at, g, bt)
}

/// Gauss–Jordan inverse with partial pivoting of an `n × n` matrix (tiny and well posed
/// here: a Vandermonde matrix of distinct points).
fn invert(a: &[f64], n: usize) -> Vec<f64> {
    let mut a = a.to_vec();
    let mut inv: Vec<f64> = (0..n * n)
        .map(|i| f64::from(u8::from(i / n == i % n)))
        .collect();
    for col in 0..n {
        let piv = (col..n)
            .max_by(|&x, &y| a[x * n + col].abs().total_cmp(&a[y * n + col].abs()))
            .unwrap_or(col);
        for j in 0..n {
            a.swap(col * n + j, piv * n + j);
            inv.swap(col * n + j, piv * n + j);
        }
        let d = a[col * n + col];
        assert!(d.abs() > 1e-12, "singular interpolation matrix");
        for j in 0..n {
            a[col * n + j] /= d;
            inv[col * n + j] /= d;
        }
        for r in (0..n).filter(|&r| r != col) {
            let f = a[r * n + col];
            for j in 0..n {
                a[r * n + j] -= f * a[col * n + j];
                inv[r * n + j] -= f * inv[col * n + j];
            }
        }
    }
    inv
}

/// A convolution's weights transformed for F(m, K): made once per voice ([`Winograd::new`]),
/// or at each call into a buffer kept per thread ([`conv1d_auto`]).
pub struct Winograd {
    m: usize,
    k: usize,
    cin: usize,
    cout: usize,
    /// `Aᵀ [m, n]`, `Bᵀ [n, n]` and `G [n, K]` rounded to f32 (G's entries, powers of the
    /// points 0, ±1, ±2, ±½, are exact).
    at: Vec<f32>,
    bt: Vec<f32>,
    g: Vec<f32>,
    /// `G w` per point: `[n][cout][cin]`.
    v: Vec<f32>,
}

/// Per-thread buffers of [`Winograd::acc`].
#[derive(Default)]
pub struct WinoScratch {
    phase: Vec<f32>,
    u: Vec<f32>,
    prod: Vec<f32>,
}

impl Winograd {
    /// `w [Cout, Cin, K]` for F(`m`, K).
    pub fn new(w: &Tensor, m: usize) -> Self {
        let (cout, cin, k) = (w.dim(0), w.dim(1), w.dim(2));
        let mut wg = Self::empty(m, k);
        (wg.cout, wg.cin) = (cout, cin);
        // On the calling thread: a rayon split here, inside a model call whose other workers
        // spin for its tiles (`team::hot`), hung an engine at its drop in CI.
        wg.v = vec![0.0f32; wg.points() * cout * cin];
        for (p, plane) in wg.v.chunks_exact_mut(cout * cin).enumerate() {
            // G's entries are exact in f32, so the sums are the f64 ones of before.
            let gp = &wg.g[p * k..][..k];
            for (dst, taps) in plane.iter_mut().zip(w.data.chunks_exact(k)) {
                let s: f64 = gp
                    .iter()
                    .zip(taps)
                    .map(|(&a, &b)| f64::from(a) * f64::from(b))
                    .sum();
                *dst = s as f32;
            }
        }
        wg
    }

    /// F(`m`, `k`) with no weights yet: a buffer for [`Self::refill_rows`].
    fn empty(m: usize, k: usize) -> Self {
        assert!((1..=8).contains(&m), "F({m}, K): 1 to 8 outputs a tile");
        let (at, g, bt) = toom_cook(m, k);
        let f32s = |v: Vec<f64>| v.into_iter().map(|x| x as f32).collect();
        Self {
            m,
            k,
            cin: 0,
            cout: 0,
            at: f32s(at),
            bt: f32s(bt),
            g: f32s(g),
            v: Vec::new(),
        }
    }

    /// Transforms `w` (`[cout, cin, K]` row-major, of the same K; any channels) into this
    /// one's buffer, in f32.
    ///
    /// Block by block of [`REFILL_ROWS`] filters, every point's plane from the block while it
    /// is in L1: plane by plane over all of `w`, each point read the whole weight again (8
    /// passes over the flow's 1.5 MB for F(4, 5)), and the transform was 5 % of a one-thread
    /// sentence (`perf` of `hark bench`). The same sums, so the same bits.
    fn refill_rows(&mut self, w: &[f32], cout: usize, cin: usize) {
        assert_eq!(w.len(), cout * cin * self.k, "winograd refill shape");
        (self.cout, self.cin) = (cout, cin);
        let (k, plane, points) = (self.k, cout * cin, self.points());
        self.v.resize(points * plane, 0.0);
        let g = &self.g;
        for (b, block) in w.chunks(REFILL_ROWS * k).enumerate() {
            let (i0, n) = (b * REFILL_ROWS, block.len() / k);
            for p in 0..points {
                transform_weights(&g[p * k..][..k], block, &mut self.v[p * plane + i0..][..n]);
            }
        }
    }

    fn points(&self) -> usize {
        self.m + self.k - 1
    }

    /// `out[co·os + j] += Σ_{ci, tap} w[co, ci, tap] · x[ci·xs + j + tap]` for `j < n_out`:
    /// [`super::direct::conv_valid_acc`]'s contract with dilation 1. `x` holds `cin` rows of
    /// `n_out + K − 1` columns at stride `xs`.
    pub fn acc(
        &self,
        x: &[f32],
        xs: usize,
        n_out: usize,
        out: &mut [f32],
        os: usize,
        sc: &mut WinoScratch,
    ) {
        if n_out == 0 {
            return;
        }
        let in_cols = n_out + self.k - 1;
        assert!(
            x.len() >= (self.cin - 1) * xs + in_cols,
            "winograd input too small"
        );
        assert!(
            out.len() >= (self.cout - 1) * os + n_out,
            "winograd output too small"
        );
        let (m, n, cin) = (self.m, self.points(), self.cin);
        let qx = CHUNK_TILES + (n - 1) / m;
        sc.phase.resize(m * cin * qx, 0.0);
        sc.u.resize(n * cin * CHUNK_TILES, 0.0);
        sc.prod.resize(n * ROW_BLOCK * CHUNK_TILES, 0.0);
        let tiles = n_out.div_ceil(m);
        for q0 in (0..tiles).step_by(CHUNK_TILES) {
            let c0 = q0 * m;
            // The chunk's tiles in whole vectors: a short input transforms only those.
            let live = (tiles - q0).min(CHUNK_TILES).next_multiple_of(16);
            let valid = (in_cols - c0).min(m * (live + (n - 1) / m));
            let read = (live + (n - 1) / m).min(qx);
            split_phases(self, &x[c0..], xs, valid, qx, read, &mut sc.phase);
            transform_input(self, &sc.phase, qx, live, &mut sc.u);
            let cols = (n_out - c0).min(CHUNK_TILES * m);
            for r0 in (0..self.cout).step_by(ROW_BLOCK) {
                let rows = ROW_BLOCK.min(self.cout - r0);
                self.products(&sc.u, r0, rows, cols.div_ceil(m), &mut sc.prod);
                transform_output(self, &sc.prod, rows, &mut out[r0 * os + c0..], os, cols);
            }
        }
    }

    /// `prod[p][r][q] = Σ_ci v[p][r0 + r][ci] · u[p][ci][q]`: one GEMM per point on the
    /// direct kernel (one tap).
    fn products(&self, u: &[f32], r0: usize, rows: usize, tiles: usize, prod: &mut [f32]) {
        let (n, cin) = (self.points(), self.cin);
        let plane = ROW_BLOCK * CHUNK_TILES;
        for p in 0..n {
            for r in 0..rows {
                prod[p * plane + r * CHUNK_TILES..][..tiles].fill(0.0);
            }
        }
        let d = ConvDims {
            cin,
            cout: rows,
            k: 1,
            dil: 1,
            n: tiles,
        };
        for p in 0..n {
            let up = &u[p * cin * CHUNK_TILES..][..cin * CHUNK_TILES];
            let vp = &self.v[(p * self.cout + r0) * cin..][..rows * cin];
            let pp = &mut prod[p * plane..][..rows * CHUNK_TILES];
            // SAFETY: `up` holds `cin` rows of CHUNK_TILES columns, `vp` the `rows × cin`
            // weights, `pp` `rows` rows of CHUNK_TILES; the three are distinct buffers.
            unsafe {
                conv_valid_acc_raw(
                    up.as_ptr(),
                    CHUNK_TILES,
                    vp.as_ptr(),
                    d,
                    pp.as_mut_ptr(),
                    CHUNK_TILES,
                )
            };
        }
    }
}

/// [`super::ops::conv1d`] of `x` with weights `w` (stride 1, dilation 1, zero padding `pad`,
/// bias), on Winograd's F(`tile`, K) where the input is long enough for it to pay, its
/// weights transformed at each call. The transformed weights are `n / K` times the direct
/// kernel's (2× for F(4, 3)) and must stream through the cache once per call, and its tiles
/// are 16 of its tiles wide, so on a few dozen columns (a short sentence's encoder, a
/// streaming window's flow) the direct kernel is faster and splits over both cores.
pub fn conv1d_auto(
    x: &Tensor,
    w: &Tensor,
    tile: Option<usize>,
    bias: &Tensor,
    pad: usize,
) -> Tensor {
    match tile {
        Some(m) if x.dim(1) >= WINOGRAD_MIN_COLUMNS => conv1d_winograd_rows(x, w, m, bias, pad),
        _ => super::ops::conv1d(x, w, Some(bias), pad, 1),
    }
}

thread_local! {
    /// The last weights [`conv1d_auto`] transformed on this thread: kept per voice, the flow's
    /// and the encoder's would take 80 MB (2.36 MB for each of the flow's 16 convolutions,
    /// 3.5 MB for each of the encoder's 12), against 2–4 MB here.
    static TRANSFORMED: std::cell::Cell<Vec<Winograd>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Input columns below which [`conv1d_auto`] keeps the direct kernel. Measured with
/// `stage_times` on the Zen 4 VM: the flow of a 72-frame sentence took 13.7 ms on Winograd
/// and 11.6 direct on one thread (7.1 direct, 9.5 Winograd on two), while the encoder of
/// 233 ids took 16.1–17.0 ms on Winograd and 18.6 direct on two threads. With the rows split
/// between the threads ([`conv1d_winograd_rows`]) Winograd is at least as fast as the direct
/// kernel on two threads from 111 columns on (`row_split_speed`, Emerald Rapids VM), so the
/// same bound holds at any thread count.
const WINOGRAD_MIN_COLUMNS: usize = 128;

/// [`conv1d_auto`]'s Winograd path (stride 1, dilation 1, zero padding `pad`, bias):
/// `x [Cin, T]` → `[Cout, T + 2·pad − (K − 1)]`, the output rows split between the threads.
/// Each part transforms only its own rows' weights, into its thread's buffer
/// ([`TRANSFORMED`]), then runs every column in tiles of at most 8 vectors of 16 tiles. Split
/// by columns every part needs all the weights, so their transform (0.45–0.58 ms for one of
/// the flow's convolutions, bound by writing its 2.4 MB) ran on one thread while the other
/// waited; by rows it is shared, and the parts are equal however the columns fall. What a
/// part repeats is the input transform, `n / rows` of its products (4 % for the flow).
fn conv1d_winograd_rows(x: &Tensor, w: &Tensor, m: usize, bias: &Tensor, pad: usize) -> Tensor {
    let (cin, t) = (x.dim(0), x.dim(1));
    assert!(
        w.shape.len() == 3,
        "winograd conv: weight shape {:?}",
        w.shape
    );
    let (cout, k) = (w.dim(0), w.dim(2));
    assert_eq!(
        w.dim(1),
        cin,
        "winograd conv: input has {cin} channels, weight expects {}",
        w.dim(1)
    );
    assert_eq!(
        bias.len(),
        cout,
        "bias length does not match output channels"
    );
    assert!(t + 2 * pad >= k - 1, "winograd conv: input too short");
    let t_out = t + 2 * pad - (k - 1);
    if t_out == 0 || cout == 0 {
        return Tensor::zeros(vec![cout, t_out]);
    }
    let macs = cout * cin * k * t_out;
    let parts = if macs >= PARALLEL_MACS {
        rayon::current_num_threads().clamp(1, cout)
    } else {
        1
    };
    let rows = cout.div_ceil(parts);
    let unit = 16 * m;
    let units = t_out.div_ceil(unit);
    let tile = units.div_ceil(units.div_ceil(8)) * unit;
    let mut out = Unfilled::new(vec![cout, t_out]);
    let dst = out.out();
    for_each_tile(cout, rows, macs, |r0, r1, _: &mut ()| {
        let rc = r1 - r0;
        // SAFETY: rows [r0, r1) are inside the buffer and this part's alone; each is filled
        // from the bias before Winograd adds to it.
        let dst = unsafe { dst.cols(r0, t_out, 0, rc * t_out) };
        for (row, &b) in dst.chunks_exact_mut(t_out).zip(&bias.data[r0..r1]) {
            row.fill(b);
        }
        // One buffer per (m, K) in use (the encoder's, the flow's, conv_pre's), made once per
        // thread and then only refilled. Taken out of the slot for the part and put back
        // after, so a part nested by work stealing would make its own, not borrow it twice.
        let mut cache = TRANSFORMED.take();
        let mut wg = match cache.iter().position(|wg| wg.m == m && wg.k == k) {
            Some(i) => cache.swap_remove(i),
            None => Winograd::empty(m, k),
        };
        wg.refill_rows(&w.data[r0 * cin * k..r1 * cin * k], rc, cin);
        with_scratch(|sc| {
            for o0 in (0..t_out).step_by(tile) {
                let n = tile.min(t_out - o0);
                let in_cols = n + k - 1;
                padded_block_of(x, o0 as isize - pad as isize, in_cols, None, &mut sc.gather);
                wg.acc(&sc.gather, in_cols, n, &mut dst[o0..], t_out, &mut sc.wino);
            }
        });
        cache.push(wg);
        TRANSFORMED.set(cache);
    });
    // SAFETY: the parts cover rows [0, cout), and each wrote all of its rows.
    unsafe { out.finish() }
}

/// Outputs per tile for a K-tap filter: the most of 4 or 2 whose F(m, K) needs at most the
/// eight points of [`POINTS`] and ∞ (F(4, 3), F(4, 5), F(2, 7)); `None` past K = 7.
pub fn tile_outputs(k: usize) -> Option<usize> {
    [4, 2].into_iter().find(|&m| m + k - 1 <= 8)
}

/// Per-thread buffers of [`conv_valid_fused_winograd`] and [`conv1d_winograd_rows`].
#[derive(Default)]
pub(crate) struct FusedScratch {
    gather: Vec<f32>,
    prod: Vec<f32>,
    row: Vec<f32>,
    wino: WinoScratch,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<FusedScratch> = std::cell::RefCell::default();
}

/// Runs `f` with this thread's [`FusedScratch`], kept from call to call: made afresh per call
/// its megabytes were page-faulted in every time, which made the encoder of a 111-id clause
/// slower on Winograd (15.0 ms at 2 threads) than on the direct kernel (10.2).
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut FusedScratch) -> R) -> R {
    SCRATCH.with_borrow_mut(f)
}

/// [`super::direct::conv_valid_fused`] with its accumulators started from `init` (required
/// here), on the weights of `wg`, for any dilation: a dilated convolution is `dil`
/// undilated ones on the input's phases (columns `r, r + dil, …`), laid end to end in one
/// buffer so that one call does them all (the `K − 1` outputs across each seam are dropped).
#[allow(clippy::too_many_arguments)]
pub(crate) fn conv_valid_fused_winograd(
    wg: &Winograd,
    x: &[f32],
    xs: usize,
    dil: usize,
    n: usize,
    out: &mut [f32],
    os: usize,
    init: Init,
    act: Option<ActOut>,
    sc: &mut FusedScratch,
) {
    let (cin, cout, k) = (wg.cin, wg.cout, wg.k);
    if n == 0 {
        return;
    }
    assert!(dil >= 1, "dilation 0");
    let in_cols = n + dil * (k - 1);
    assert!(x.len() >= (cin - 1) * xs + in_cols, "conv input too small");
    assert!(out.len() >= (cout - 1) * os + n, "conv output too small");
    assert!(
        init.res.len() >= (cout - 1) * init.rs + n,
        "conv residual too small"
    );
    assert!(init.bias.len() >= cout, "conv bias too small");
    // Phase r: outputs r, r + dil, … (n_r of them) at `pos[r]` of the concatenation.
    let phases = dil.min(n);
    let n_r = |r: usize| (n - r).div_ceil(dil);
    let mut pos = Vec::with_capacity(phases);
    let mut len = 0;
    for r in 0..phases {
        pos.push(len);
        len += n_r(r) + k - 1;
    }
    let (src, stride) = if dil == 1 {
        (x, xs)
    } else {
        sc.gather.resize(cin * len, 0.0);
        for ci in 0..cin {
            let row = &x[ci * xs..][..in_cols];
            let dst = &mut sc.gather[ci * len..][..len];
            for (r, &p) in pos.iter().enumerate() {
                let cols = n_r(r) + k - 1;
                for (d, &v) in dst[p..p + cols]
                    .iter_mut()
                    .zip(row[r..].iter().step_by(dil))
                {
                    *d = v;
                }
            }
        }
        (&sc.gather[..], len)
    };
    let no = len - (k - 1);
    sc.prod.clear();
    sc.prod.resize(cout * no, 0.0);
    wg.acc(src, stride, no, &mut sc.prod, no, &mut sc.wino);
    let mut act = act;
    sc.row.resize(n, 0.0);
    for co in 0..cout {
        let prod = &sc.prod[co * no..][..no];
        // The row's results in column order.
        let conv = if dil == 1 {
            &prod[..n]
        } else {
            for (r, &p) in pos.iter().enumerate() {
                let dst = sc.row[r..].iter_mut().step_by(dil);
                dst.zip(&prod[p..p + n_r(r)]).for_each(|(d, &v)| *d = v);
            }
            &sc.row[..]
        };
        let res = &init.res[co * init.rs..][..n];
        let o = &mut out[co * os..][..n];
        let a = act
            .as_mut()
            .map(|a| (&mut a.act[co * a.stride..][..n], a.slope));
        epilogue(o, res, conv, init.bias[co], init.add_out, a);
    }
}

/// `out ← (out if add_out) + res + bias + conv`, and its LeakyReLU into `act`: the direct
/// kernel's fused start and second output, as one pass over a row.
fn epilogue(
    out: &mut [f32],
    res: &[f32],
    conv: &[f32],
    bias: f32,
    add_out: bool,
    act: Option<(&mut [f32], f32)>,
) {
    dispatch!(epilogue_body(out: &mut [f32], res: &[f32], conv: &[f32], bias: f32, add_out: bool, act: Option<(&mut [f32], f32)>))
}

#[inline(always)]
fn epilogue_body(
    out: &mut [f32],
    res: &[f32],
    conv: &[f32],
    bias: f32,
    add_out: bool,
    act: Option<(&mut [f32], f32)>,
) {
    if add_out {
        out.iter_mut()
            .zip(res.iter().zip(conv))
            .for_each(|(y, (&r, &c))| *y = *y + r + bias + c);
    } else {
        out.iter_mut()
            .zip(res.iter().zip(conv))
            .for_each(|(y, (&r, &c))| *y = r + bias + c);
    }
    if let Some((a, slope)) = act {
        a.iter_mut()
            .zip(out.iter())
            .for_each(|(d, &v)| *d = lrelu(v, slope));
    }
}

/// `dst[i] = Σ_j g[j] · w[i·K + j]`: one point's plane of the transformed weights.
fn transform_weights(g: &[f32], w: &[f32], dst: &mut [f32]) {
    dispatch!(transform_weights_body(g: &[f32], w: &[f32], dst: &mut [f32]))
}

#[inline(always)]
fn transform_weights_body(g: &[f32], w: &[f32], dst: &mut [f32]) {
    match g.len() {
        3 => transform_weights_k::<3>(g, w, dst),
        5 => transform_weights_k::<5>(g, w, dst),
        k => dst
            .iter_mut()
            .zip(w.chunks_exact(k))
            .for_each(|(d, taps)| *d = g.iter().zip(taps).map(|(a, b)| a * b).sum()),
    }
}

/// [`transform_weights_body`] with K known to the compiler (strided loads it can vectorise).
#[inline(always)]
fn transform_weights_k<const K: usize>(g: &[f32], w: &[f32], dst: &mut [f32]) {
    let g: [f32; K] = std::array::from_fn(|j| g[j]);
    for (d, taps) in dst.iter_mut().zip(w.chunks_exact(K)) {
        let mut s = 0.0;
        for j in 0..K {
            s += g[j] * taps[j];
        }
        *d = s;
    }
}

/// `phase[φ][ci][q] = x[ci·xs + m·q + φ]` for `q < read`, zero from column `valid` on: the
/// input split into its `m` phases so that every tap of the transform is a contiguous row.
fn split_phases(
    wg: &Winograd,
    x: &[f32],
    xs: usize,
    valid: usize,
    qx: usize,
    read: usize,
    phase: &mut [f32],
) {
    dispatch!(split_body(wg: &Winograd, x: &[f32], xs: usize, valid: usize, qx: usize, read: usize, phase: &mut [f32]))
}

#[inline(always)]
fn split_body(
    wg: &Winograd,
    x: &[f32],
    xs: usize,
    valid: usize,
    qx: usize,
    read: usize,
    phase: &mut [f32],
) {
    let (m, cin) = (wg.m, wg.cin);
    assert!(x.len() >= (cin - 1) * xs + valid && phase.len() >= m * cin * qx);
    for ci in 0..cin {
        let row = &x[ci * xs..][..valid];
        // Whole 16-column blocks of every phase in registers where the CPU can.
        #[cfg(target_arch = "x86_64")]
        let done = match isa() {
            // SAFETY: AVX-512F is there (`isa`); bounds asserted above.
            Isa::Avx512 if matches!(m, 2 | 4) => unsafe { x86::split(m, row, ci, cin, qx, phase) },
            // SAFETY: AVX2 is there (`isa`); bounds asserted above.
            Isa::Avx2 if matches!(m, 2 | 4) => unsafe {
                x86::split_avx2(m, row, ci, cin, qx, phase)
            },
            _ => 0,
        };
        #[cfg(not(target_arch = "x86_64"))]
        let done = 0;
        // Past `valid` only zeros, up to the `read` columns the transform reads.
        let upto = read.max(done).min(qx);
        for f in 0..m {
            let dst = &mut phase[(f * cin + ci) * qx..][..upto];
            for (q, d) in dst.iter_mut().enumerate().skip(done) {
                *d = row.get(m * q + f).copied().unwrap_or(0.0);
            }
        }
    }
}

/// `u[p][ci][q] = Σ_j Bᵀ[p][j] · x[ci][m·q + j]`, read from the phases.
fn transform_input(wg: &Winograd, phase: &[f32], qx: usize, live: usize, u: &mut [f32]) {
    dispatch!(input_body(wg: &Winograd, phase: &[f32], qx: usize, live: usize, u: &mut [f32]))
}

#[inline(always)]
fn input_body(wg: &Winograd, phase: &[f32], qx: usize, live: usize, u: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if isa() == Isa::Avx512 {
        match wg.points() {
            // SAFETY: AVX-512F is there (`isa`); the sizes are those `acc` allocated.
            8 => return unsafe { x86::input::<8>(wg, phase, qx, live, u) },
            6 => return unsafe { x86::input::<6>(wg, phase, qx, live, u) },
            _ => {}
        }
    }
    #[cfg(target_arch = "x86_64")]
    if isa() == Isa::Avx2 {
        match wg.points() {
            // SAFETY: AVX2 and FMA are there (`isa`); the sizes are those `acc` allocated.
            8 => return unsafe { x86::input_avx2::<8>(wg, phase, qx, live, u) },
            6 => return unsafe { x86::input_avx2::<6>(wg, phase, qx, live, u) },
            _ => {}
        }
    }
    match wg.points() {
        8 => input_fixed::<8>(wg, phase, qx, live, u),
        7 => input_fixed::<7>(wg, phase, qx, live, u),
        6 => input_fixed::<6>(wg, phase, qx, live, u),
        4 => input_fixed::<4>(wg, phase, qx, live, u),
        _ => input_any(wg, phase, qx, live, u),
    }
}

/// [`input_body`] for `N` points: each 16-column block of a channel's `N` inputs is read
/// once into registers and all `N` transformed rows come from it.
#[inline(always)]
fn input_fixed<const N: usize>(
    wg: &Winograd,
    phase: &[f32],
    qx: usize,
    live: usize,
    u: &mut [f32],
) {
    let (m, cin) = (wg.m, wg.cin);
    let bt: [[f32; N]; N] = std::array::from_fn(|p| std::array::from_fn(|j| wg.bt[p * N + j]));
    for ci in 0..cin {
        let rows: [&[f32]; N] =
            std::array::from_fn(|j| &phase[((j % m) * cin + ci) * qx + j / m..][..CHUNK_TILES]);
        for q0 in (0..live).step_by(16) {
            let x: [&[f32]; N] = std::array::from_fn(|j| &rows[j][q0..q0 + 16]);
            for (p, bp) in bt.iter().enumerate() {
                let mut acc = [0.0f32; 16];
                for (xj, &b) in x.iter().zip(bp) {
                    acc.iter_mut().zip(*xj).for_each(|(a, &v)| *a += b * v);
                }
                u[(p * cin + ci) * CHUNK_TILES + q0..][..16].copy_from_slice(&acc);
            }
        }
    }
}

/// [`input_body`] for any number of points.
#[inline(always)]
fn input_any(wg: &Winograd, phase: &[f32], qx: usize, live: usize, u: &mut [f32]) {
    let (m, n, cin) = (wg.m, wg.points(), wg.cin);
    for p in 0..n {
        for ci in 0..cin {
            let dst = &mut u[(p * cin + ci) * CHUNK_TILES..][..live];
            dst.fill(0.0);
            for j in 0..n {
                let b = wg.bt[p * n + j];
                let src = &phase[((j % m) * cin + ci) * qx + j / m..][..live];
                dst.iter_mut().zip(src).for_each(|(d, &s)| *d += b * s);
            }
        }
    }
}

/// `out[r·os + m·q + i] += Σ_p Aᵀ[i][p] · prod[p][r][q]` for the first `cols` columns.
fn transform_output(
    wg: &Winograd,
    prod: &[f32],
    rows: usize,
    out: &mut [f32],
    os: usize,
    cols: usize,
) {
    dispatch!(output_body(wg: &Winograd, prod: &[f32], rows: usize, out: &mut [f32], os: usize, cols: usize))
}

#[inline(always)]
fn output_body(wg: &Winograd, prod: &[f32], rows: usize, out: &mut [f32], os: usize, cols: usize) {
    #[cfg(target_arch = "x86_64")]
    if isa() == Isa::Avx512 {
        match (wg.m, wg.points()) {
            // SAFETY: AVX-512F is there (`isa`); the sizes are those `acc` allocated.
            (4, 8) => return unsafe { x86::output::<4, 8>(wg, prod, rows, out, os, cols) },
            (4, 6) => return unsafe { x86::output::<4, 6>(wg, prod, rows, out, os, cols) },
            (2, 8) => return unsafe { x86::output::<2, 8>(wg, prod, rows, out, os, cols) },
            (2, 6) => return unsafe { x86::output::<2, 6>(wg, prod, rows, out, os, cols) },
            _ => {}
        }
    }
    #[cfg(target_arch = "x86_64")]
    if isa() == Isa::Avx2 {
        // SAFETY (each arm): AVX2 and FMA are there (`isa`); the sizes are those `acc` allocated.
        match (wg.m, wg.points()) {
            (4, 8) => return unsafe { x86::output_avx2::<4, 8>(wg, prod, rows, out, os, cols) },
            (4, 6) => return unsafe { x86::output_avx2::<4, 6>(wg, prod, rows, out, os, cols) },
            (2, 8) => return unsafe { x86::output_avx2::<2, 8>(wg, prod, rows, out, os, cols) },
            (2, 6) => return unsafe { x86::output_avx2::<2, 6>(wg, prod, rows, out, os, cols) },
            _ => {}
        }
    }
    match (wg.m, wg.points()) {
        (4, 8) => output_fixed::<4, 8>(wg, prod, rows, out, os, cols),
        (2, 8) => output_fixed::<2, 8>(wg, prod, rows, out, os, cols),
        (3, 7) => output_fixed::<3, 7>(wg, prod, rows, out, os, cols),
        (2, 6) => output_fixed::<2, 6>(wg, prod, rows, out, os, cols),
        (4, 6) => output_fixed::<4, 6>(wg, prod, rows, out, os, cols),
        (2, 4) => output_fixed::<2, 4>(wg, prod, rows, out, os, cols),
        _ => output_any(wg, prod, rows, out, os, cols),
    }
}

/// [`output_body`] for `M` outputs of `N` points, a row's `N` products read once per
/// 16-column block.
#[inline(always)]
fn output_fixed<const M: usize, const N: usize>(
    wg: &Winograd,
    prod: &[f32],
    rows: usize,
    out: &mut [f32],
    os: usize,
    cols: usize,
) {
    let plane = ROW_BLOCK * CHUNK_TILES;
    let at: [[f32; N]; M] = std::array::from_fn(|i| std::array::from_fn(|p| wg.at[i * N + p]));
    let mut y = [[0.0f32; CHUNK_TILES]; M];
    for r in 0..rows {
        for q0 in (0..cols.div_ceil(M)).step_by(16) {
            let pv: [&[f32]; N] =
                std::array::from_fn(|p| &prod[p * plane + r * CHUNK_TILES + q0..][..16]);
            for (yi, ai) in y.iter_mut().zip(&at) {
                let mut acc = [0.0f32; 16];
                for (pp, &a) in pv.iter().zip(ai) {
                    acc.iter_mut().zip(*pp).for_each(|(s, &v)| *s += a * v);
                }
                yi[q0..q0 + 16].copy_from_slice(&acc);
            }
        }
        interleave_add::<M>(&y, &mut out[r * os..][..cols]);
    }
}

/// [`output_body`] for any `m` and number of points.
#[inline(always)]
fn output_any(wg: &Winograd, prod: &[f32], rows: usize, out: &mut [f32], os: usize, cols: usize) {
    let (m, n) = (wg.m, wg.points());
    let plane = ROW_BLOCK * CHUNK_TILES;
    let mut y = [[0.0f32; CHUNK_TILES]; 8];
    for r in 0..rows {
        for (i, yi) in y.iter_mut().enumerate().take(m) {
            yi.fill(0.0);
            for p in 0..n {
                let a = wg.at[i * n + p];
                let src = &prod[p * plane + r * CHUNK_TILES..][..CHUNK_TILES];
                yi.iter_mut().zip(src).for_each(|(d, &s)| *d += a * s);
            }
        }
        let row = &mut out[r * os..][..cols];
        row.iter_mut()
            .enumerate()
            .for_each(|(c, o)| *o += y[c % m][c / m]);
    }
}

/// `row[M·q + i] += y[i][q]` (M known to the compiler, so the loop is shuffles, not divisions).
#[inline(always)]
fn interleave_add<const M: usize>(y: &[[f32; CHUNK_TILES]; M], row: &mut [f32]) {
    let q = row.len() / M;
    let mut groups = row.chunks_exact_mut(M);
    for (q, g) in groups.by_ref().enumerate() {
        for i in 0..M {
            g[i] += y[i][q];
        }
    }
    for (i, o) in groups.into_remainder().iter_mut().enumerate() {
        *o += y[i][q];
    }
}

/// The transforms in AVX-512 registers: a 16-column block of all `N` points at once.
// Register arrays are indexed by point; index loops read clearer than zipped iterators.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::needless_range_loop)]
mod x86 {
    use super::{CHUNK_TILES, ROW_BLOCK, Winograd};
    use std::arch::x86_64::*;

    /// [`super::split_body`] for `m` = 2 or 4 on whole blocks of 16 tiles of one row:
    /// `m` vectors in, de-interleaved by permutes; returns the tiles done.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn split(
        m: usize,
        row: &[f32],
        ci: usize,
        cin: usize,
        qx: usize,
        phase: &mut [f32],
    ) -> usize {
        let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        let blocks = (row.len() / (16 * m)).min(qx / 16);
        assert!(phase.len() >= m * cin * qx);
        let (src, dst) = (row.as_ptr(), phase.as_mut_ptr());
        for b in 0..blocks {
            // SAFETY: block b reads row[16·m·b, 16·m·(b + 1)) ⊆ row and writes columns
            // [16b, 16b + 16) ⊆ [0, qx) of the phase rows (both bounded above).
            unsafe {
                let a: [__m512; 4] = std::array::from_fn(|v| {
                    if v < m {
                        _mm512_loadu_ps(src.add(16 * (m * b + v)))
                    } else {
                        _mm512_setzero_ps()
                    }
                });
                let out: [__m512; 4] = if m == 2 {
                    [
                        _mm512_permutex2var_ps(a[0], even, a[1]),
                        _mm512_permutex2var_ps(a[0], odd, a[1]),
                        a[2],
                        a[3],
                    ]
                } else {
                    // Even and odd columns, then each split again.
                    let e = [
                        _mm512_permutex2var_ps(a[0], even, a[1]),
                        _mm512_permutex2var_ps(a[2], even, a[3]),
                    ];
                    let o = [
                        _mm512_permutex2var_ps(a[0], odd, a[1]),
                        _mm512_permutex2var_ps(a[2], odd, a[3]),
                    ];
                    [
                        _mm512_permutex2var_ps(e[0], even, e[1]),
                        _mm512_permutex2var_ps(o[0], even, o[1]),
                        _mm512_permutex2var_ps(e[0], odd, e[1]),
                        _mm512_permutex2var_ps(o[0], odd, o[1]),
                    ]
                };
                for (f, v) in out.iter().enumerate().take(m) {
                    _mm512_storeu_ps(dst.add((f * cin + ci) * qx + 16 * b), *v);
                }
            }
        }
        blocks * 16
    }

    /// [`super::input_body`]: `N` input rows in, `N` transformed rows out, per channel and
    /// 16 tiles.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn input<const N: usize>(
        wg: &Winograd,
        phase: &[f32],
        qx: usize,
        live: usize,
        u: &mut [f32],
    ) {
        let (m, cin) = (wg.m, wg.cin);
        assert!(phase.len() >= m * cin * qx && u.len() >= N * cin * CHUNK_TILES);
        assert!(qx >= CHUNK_TILES + (N - 1) / m && live <= CHUNK_TILES);
        let bt: [[__m512; N]; N] =
            std::array::from_fn(|p| std::array::from_fn(|j| _mm512_set1_ps(wg.bt[p * N + j])));
        let (src, dst) = (phase.as_ptr(), u.as_mut_ptr());
        for ci in 0..cin {
            for q0 in (0..live).step_by(16) {
                // SAFETY: row (j % m, ci) of the phases has qx ≥ CHUNK_TILES + j / m columns,
                // and u's row (p, ci) CHUNK_TILES (both asserted above).
                unsafe {
                    let x: [__m512; N] = std::array::from_fn(|j| {
                        _mm512_loadu_ps(src.add(((j % m) * cin + ci) * qx + j / m + q0))
                    });
                    for p in 0..N {
                        let mut acc = _mm512_mul_ps(bt[p][0], x[0]);
                        for j in 1..N {
                            acc = _mm512_fmadd_ps(bt[p][j], x[j], acc);
                        }
                        _mm512_storeu_ps(dst.add((p * cin + ci) * CHUNK_TILES + q0), acc);
                    }
                }
            }
        }
    }

    /// [`super::output_body`]: a row's `N` products of 16 tiles → `M` output phases →
    /// interleaved in registers and added to `M` vectors of the row.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn output<const M: usize, const N: usize>(
        wg: &Winograd,
        prod: &[f32],
        rows: usize,
        out: &mut [f32],
        os: usize,
        cols: usize,
    ) {
        let plane = ROW_BLOCK * CHUNK_TILES;
        assert!(prod.len() >= (N - 1) * plane + rows * CHUNK_TILES);
        assert!(rows > 0 && out.len() >= (rows - 1) * os + cols && cols <= M * CHUNK_TILES);
        let at: [[__m512; N]; M] =
            std::array::from_fn(|i| std::array::from_fn(|p| _mm512_set1_ps(wg.at[i * N + p])));
        // Lane k of the first half takes a[k/2] (k even) or b[k/2] (k odd): 2-way interleave.
        let lo2 = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
        let hi2 = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
        // The same on pairs of lanes (64-bit elements).
        let lo2q = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
        let hi2q = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
        let (src, dst) = (prod.as_ptr(), out.as_mut_ptr());
        for r in 0..rows {
            for c0 in (0..cols).step_by(16 * M) {
                let q0 = c0 / M;
                // SAFETY: row r of every plane has CHUNK_TILES ≥ q0 + 16 columns.
                let y: [__m512; M] = unsafe {
                    let pv: [__m512; N] = std::array::from_fn(|p| {
                        _mm512_loadu_ps(src.add(p * plane + r * CHUNK_TILES + q0))
                    });
                    std::array::from_fn(|i| {
                        let mut acc = _mm512_mul_ps(at[i][0], pv[0]);
                        for p in 1..N {
                            acc = _mm512_fmadd_ps(at[i][p], pv[p], acc);
                        }
                        acc
                    })
                };
                // Column c0 + 16·v + l of the row, from phase (16v + l) % M.
                let v: [__m512; M] = match M {
                    2 => std::array::from_fn(|k| {
                        let idx = if k == 0 { lo2 } else { hi2 };
                        _mm512_permutex2var_ps(y[0], idx, y[1])
                    }),
                    _ => {
                        // 4: pairs (0, 1) and (2, 3) interleaved, then the pairs of lanes.
                        let a = [
                            _mm512_permutex2var_ps(y[0], lo2, y[1]),
                            _mm512_permutex2var_ps(y[0], hi2, y[1]),
                        ];
                        let b = [
                            _mm512_permutex2var_ps(y[2], lo2, y[3]),
                            _mm512_permutex2var_ps(y[2], hi2, y[3]),
                        ];
                        std::array::from_fn(|k| {
                            let idx = if k % 2 == 0 { lo2q } else { hi2q };
                            _mm512_castpd_ps(_mm512_permutex2var_pd(
                                _mm512_castps_pd(a[k / 2]),
                                idx,
                                _mm512_castps_pd(b[k / 2]),
                            ))
                        })
                    }
                };
                for (k, vk) in v.iter().enumerate() {
                    let c = c0 + 16 * k;
                    if c >= cols {
                        break;
                    }
                    let live = (cols - c).min(16);
                    let mask = ((1u32 << live) - 1) as __mmask16;
                    // SAFETY: columns [c, c + live) of row r are inside `out` (asserted).
                    unsafe {
                        let p = dst.add(r * os + c);
                        let o = _mm512_maskz_loadu_ps(mask, p);
                        _mm512_mask_storeu_ps(p, mask, _mm512_add_ps(o, *vk));
                    }
                }
            }
        }
    }

    /// [`split`] in AVX2: 8 tiles of one row per block, de-interleaved by in-lane shuffles
    /// and a cross-lane permute of 64-bit pairs.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn split_avx2(
        m: usize,
        row: &[f32],
        ci: usize,
        cin: usize,
        qx: usize,
        phase: &mut [f32],
    ) -> usize {
        // Even and odd elements of the 16 in (a, b), in order.
        #[target_feature(enable = "avx2")]
        #[inline]
        fn halves(a: __m256, b: __m256) -> (__m256, __m256) {
            // Per 128-bit lane: [a0 a2 b0 b2 | a4 a6 b4 b6]; then the 64-bit pairs 0 2 1 3.
            let e = _mm256_shuffle_ps::<0b10_00_10_00>(a, b);
            let o = _mm256_shuffle_ps::<0b11_01_11_01>(a, b);
            let fix = |v: __m256| {
                _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v)))
            };
            (fix(e), fix(o))
        }
        let blocks = (row.len() / (8 * m)).min(qx / 8);
        assert!(phase.len() >= m * cin * qx);
        let (src, dst) = (row.as_ptr(), phase.as_mut_ptr());
        for b in 0..blocks {
            // SAFETY: block b reads row[8·m·b, 8·m·(b + 1)) ⊆ row and writes columns
            // [8b, 8b + 8) ⊆ [0, qx) of the phase rows (both bounded above).
            unsafe {
                let a: [__m256; 4] = std::array::from_fn(|v| {
                    if v < m {
                        _mm256_loadu_ps(src.add(8 * (m * b + v)))
                    } else {
                        _mm256_setzero_ps()
                    }
                });
                let out: [__m256; 4] = if m == 2 {
                    let (e, o) = halves(a[0], a[1]);
                    [e, o, a[2], a[3]]
                } else {
                    let (e0, o0) = halves(a[0], a[1]);
                    let (e1, o1) = halves(a[2], a[3]);
                    let (ee, eo) = halves(e0, e1);
                    let (oe, oo) = halves(o0, o1);
                    [ee, oe, eo, oo]
                };
                for (f, v) in out.iter().enumerate().take(m) {
                    _mm256_storeu_ps(dst.add((f * cin + ci) * qx + 8 * b), *v);
                }
            }
        }
        blocks * 8
    }

    /// [`input`] in AVX2, 8 tiles at a time (the compiler's loops, without FMA contraction
    /// and with 16-wide arrays, took 11 % of a 128-channel ResBlock convolution).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn input_avx2<const N: usize>(
        wg: &Winograd,
        phase: &[f32],
        qx: usize,
        live: usize,
        u: &mut [f32],
    ) {
        let (m, cin) = (wg.m, wg.cin);
        assert!(phase.len() >= m * cin * qx && u.len() >= N * cin * CHUNK_TILES);
        assert!(qx >= CHUNK_TILES + (N - 1) / m && live <= CHUNK_TILES);
        let bt: [[__m256; N]; N] =
            std::array::from_fn(|p| std::array::from_fn(|j| _mm256_set1_ps(wg.bt[p * N + j])));
        let (src, dst) = (phase.as_ptr(), u.as_mut_ptr());
        for ci in 0..cin {
            for q0 in (0..live).step_by(8) {
                // SAFETY: as in `input` (8-column steps inside the same bounds).
                unsafe {
                    let x: [__m256; N] = std::array::from_fn(|j| {
                        _mm256_loadu_ps(src.add(((j % m) * cin + ci) * qx + j / m + q0))
                    });
                    for p in 0..N {
                        let mut acc = _mm256_mul_ps(bt[p][0], x[0]);
                        for j in 1..N {
                            acc = _mm256_fmadd_ps(bt[p][j], x[j], acc);
                        }
                        _mm256_storeu_ps(dst.add((p * cin + ci) * CHUNK_TILES + q0), acc);
                    }
                }
            }
        }
    }

    /// [`output`] in AVX2: a row's `N` products of 8 tiles → `M` output phases → interleaved
    /// by unpacks (a 4 × 4 transpose per 128-bit lane for `M` = 4) and added to the row.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn output_avx2<const M: usize, const N: usize>(
        wg: &Winograd,
        prod: &[f32],
        rows: usize,
        out: &mut [f32],
        os: usize,
        cols: usize,
    ) {
        let plane = ROW_BLOCK * CHUNK_TILES;
        assert!(prod.len() >= (N - 1) * plane + rows * CHUNK_TILES);
        assert!(rows > 0 && out.len() >= (rows - 1) * os + cols && cols <= M * CHUNK_TILES);
        let at: [[__m256; N]; M] =
            std::array::from_fn(|i| std::array::from_fn(|p| _mm256_set1_ps(wg.at[i * N + p])));
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let (src, dst) = (prod.as_ptr(), out.as_mut_ptr());
        for r in 0..rows {
            for c0 in (0..cols).step_by(8 * M) {
                let q0 = c0 / M;
                // SAFETY: row r of every plane has CHUNK_TILES ≥ q0 + 8 columns.
                let y: [__m256; M] = unsafe {
                    let pv: [__m256; N] = std::array::from_fn(|p| {
                        _mm256_loadu_ps(src.add(p * plane + r * CHUNK_TILES + q0))
                    });
                    std::array::from_fn(|i| {
                        let mut acc = _mm256_mul_ps(at[i][0], pv[0]);
                        for p in 1..N {
                            acc = _mm256_fmadd_ps(at[i][p], pv[p], acc);
                        }
                        acc
                    })
                };
                // Column c0 + 8·v + l of the row, from phase (8v + l) % M.
                let v: [__m256; M] = if M == 2 {
                    let lo = _mm256_unpacklo_ps(y[0], y[1]);
                    let hi = _mm256_unpackhi_ps(y[0], y[1]);
                    std::array::from_fn(|k| {
                        if k == 0 {
                            _mm256_permute2f128_ps::<0x20>(lo, hi)
                        } else {
                            _mm256_permute2f128_ps::<0x31>(lo, hi)
                        }
                    })
                } else {
                    let pd = _mm256_castps_pd;
                    let t0 = pd(_mm256_unpacklo_ps(y[0], y[1]));
                    let t1 = pd(_mm256_unpacklo_ps(y[2], y[3]));
                    let t2 = pd(_mm256_unpackhi_ps(y[0], y[1]));
                    let t3 = pd(_mm256_unpackhi_ps(y[2], y[3]));
                    // Tiles q0 + {0, 4}, {1, 5}, {2, 6}, {3, 7}: four outputs each.
                    let c = [
                        _mm256_castpd_ps(_mm256_unpacklo_pd(t0, t1)),
                        _mm256_castpd_ps(_mm256_unpackhi_pd(t0, t1)),
                        _mm256_castpd_ps(_mm256_unpacklo_pd(t2, t3)),
                        _mm256_castpd_ps(_mm256_unpackhi_pd(t2, t3)),
                    ];
                    std::array::from_fn(|k| match k {
                        0 => _mm256_permute2f128_ps::<0x20>(c[0], c[1]),
                        1 => _mm256_permute2f128_ps::<0x20>(c[2], c[3]),
                        2 => _mm256_permute2f128_ps::<0x31>(c[0], c[1]),
                        _ => _mm256_permute2f128_ps::<0x31>(c[2], c[3]),
                    })
                };
                for (k, vk) in v.iter().enumerate() {
                    let c = c0 + 8 * k;
                    if c >= cols {
                        break;
                    }
                    let live = (cols - c).min(8) as i32;
                    // SAFETY: columns [c, c + live) of row r are inside `out` (asserted).
                    unsafe {
                        let p = dst.add(r * os + c);
                        if live == 8 {
                            _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), *vk));
                        } else {
                            let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(live), lanes);
                            let o = _mm256_maskload_ps(p, mask);
                            _mm256_maskstore_ps(p, mask, _mm256_add_ps(o, *vk));
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::direct::conv_valid_acc;
    use hark_voice::tensor::rel_l2;

    fn lcg(seed: u64, n: usize) -> Vec<f32> {
        crate::cpu::testutil::lcg(seed, n, 1.0)
    }

    #[test]
    fn toom_cook_computes_correlation_exactly_in_f64() {
        for &(m, k) in &[
            (1, 1),
            (2, 3),
            (4, 3),
            (2, 5),
            (3, 5),
            (4, 5),
            (2, 7),
            (6, 3),
        ] {
            let n = m + k - 1;
            let (at, g, bt) = toom_cook(m, k);
            let gw: Vec<f64> = lcg(1, k).into_iter().map(f64::from).collect();
            let d: Vec<f64> = lcg(2, n).into_iter().map(f64::from).collect();
            // `Winograd::new` transforms the weights with G rounded to f32: exact.
            assert!(
                g.iter().all(|&x| f64::from(x as f32) == x),
                "F({m},{k}): G not exact"
            );
            for i in 0..m {
                let want: f64 = (0..k).map(|j| gw[j] * d[i + j]).sum();
                let got: f64 = (0..n)
                    .map(|p| {
                        let gp: f64 = (0..k).map(|j| g[p * k + j] * gw[j]).sum();
                        let dp: f64 = (0..n).map(|j| bt[p * n + j] * d[j]).sum();
                        at[i * n + p] * gp * dp
                    })
                    .sum();
                assert!(
                    (got - want).abs() < 1e-12,
                    "F({m},{k}) output {i}: {got} vs {want}"
                );
            }
        }
    }

    /// The direct kernel's result against Winograd's, both accumulating into the same start.
    fn check(cin: usize, cout: usize, k: usize, m: usize, n_out: usize, xs_pad: usize) -> f64 {
        let xs = n_out + k - 1 + xs_pad;
        let x = lcg(3, cin * xs);
        let w = Tensor::new(vec![cout, cin, k], lcg(4, cout * cin * k));
        let os = n_out + 3;
        let start = lcg(5, cout * os);
        let mut want = start.clone();
        let d = ConvDims {
            cin,
            cout,
            k,
            dil: 1,
            n: n_out,
        };
        conv_valid_acc(&x, xs, &w.data, d, &mut want, os);
        let mut got = start.clone();
        let wg = Winograd::new(&w, m);
        wg.acc(&x, xs, n_out, &mut got, os, &mut WinoScratch::default());
        // Columns past n_out are untouched.
        for co in 0..cout {
            assert_eq!(
                &got[co * os + n_out..(co + 1) * os],
                &start[co * os + n_out..(co + 1) * os]
            );
        }
        rel_l2(&got, &want)
    }

    #[test]
    fn weights_transformed_by_blocks_equal_the_plane_by_plane_transform() {
        // Row counts under, at and across REFILL_ROWS, for every K the models use.
        for (cout, cin, k) in [
            (3, 5, 3),
            (16, 16, 5),
            (384, 192, 5),
            (257, 1, 7),
            (100, 7, 3),
        ] {
            let m = tile_outputs(k).unwrap();
            let w = lcg((cout * cin * k) as u64, cout * cin * k);
            let mut wg = Winograd::empty(m, k);
            wg.refill_rows(&w, cout, cin);
            let plane = cout * cin;
            let mut want = vec![0.0f32; wg.points() * plane];
            for (p, dst) in want.chunks_exact_mut(plane).enumerate() {
                transform_weights(&wg.g[p * k..][..k], &w, dst);
            }
            assert!(
                wg.v.iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "[{cout}, {cin}, {k}]"
            );
        }
    }

    #[test]
    fn equals_the_direct_convolution_on_every_shape() {
        for &(cin, cout, k, m, n_out, pad) in &[
            (1, 1, 1, 1, 1, 0),
            (3, 5, 3, 2, 7, 1),
            (7, 9, 5, 4, 1, 0),
            (7, 9, 5, 4, 2, 0),
            (16, 70, 5, 4, 193, 0),
            (33, 17, 5, 2, 250, 5),
            (24, 130, 5, 4, 4 * CHUNK_TILES + 3, 2),
            (192, 384, 5, 4, 300, 0),
            (8, 8, 3, 4, 100, 0),
        ] {
            let e = check(cin, cout, k, m, n_out, pad);
            assert!(
                e < 2e-6,
                "cin {cin} cout {cout} F({m},{k}) n {n_out}: rel L2 {e}"
            );
        }
    }

    /// The Winograd path split by output rows (each thread transforms its rows' weights)
    /// against the split it replaced (by columns, the weights transformed first on the calling
    /// thread) and against the direct kernel, on both threads of a pool, interleaved in one
    /// process: the encoder's and the flow's shapes at a clause's and a sentence's lengths.
    #[test]
    #[ignore]
    fn row_split_speed() {
        use rayon::prelude::*;
        fn by_columns(x: &Tensor, w: &Tensor, m: usize, b: &Tensor, pad: usize) -> Tensor {
            let (cout, k, t) = (w.dim(0), w.dim(2), x.dim(1));
            let t_out = t + 2 * pad - (k - 1);
            let mut wg = Winograd::empty(m, k);
            wg.refill_rows(&w.data, cout, w.dim(1));
            let unit = 16 * m;
            let units = t_out.div_ceil(unit);
            let th = rayon::current_num_threads();
            let tiles = units.div_ceil(8).max(th).div_ceil(th) * th;
            let tile = units.div_ceil(tiles) * unit;
            let parts: Vec<(usize, Vec<f32>)> = (0..t_out.div_ceil(tile))
                .into_par_iter()
                .map(|i| {
                    let (o0, o1) = (i * tile, ((i + 1) * tile).min(t_out));
                    let n = o1 - o0;
                    with_scratch(|sc| {
                        padded_block_of(
                            x,
                            o0 as isize - pad as isize,
                            n + k - 1,
                            None,
                            &mut sc.gather,
                        );
                        sc.prod.clear();
                        for &v in &b.data {
                            sc.prod.extend(std::iter::repeat_n(v, n));
                        }
                        wg.acc(&sc.gather, n + k - 1, n, &mut sc.prod, n, &mut sc.wino);
                        (o0, sc.prod.clone())
                    })
                })
                .collect();
            let mut out = vec![0.0f32; cout * t_out];
            for (o0, prod) in parts {
                let n = prod.len() / cout;
                for (co, src) in prod.chunks_exact(n).enumerate() {
                    out[co * t_out + o0..][..n].copy_from_slice(src);
                }
            }
            Tensor::new(vec![cout, t_out], out)
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for &(name, cin, cout, k, t) in &[
            ("flow, clause", 192, 384, 5, 300),
            ("flow, sentence", 192, 384, 5, 950),
            ("encoder conv1, sentence", 192, 768, 3, 407),
            ("encoder conv2, sentence", 768, 192, 3, 407),
            ("encoder conv1, clause", 192, 768, 3, 111),
        ] {
            let x = Tensor::new(vec![cin, t], lcg(50, cin * t));
            let w = Tensor::new(vec![cout, cin, k], lcg(51, cout * cin * k));
            let b = Tensor::new(vec![cout], lcg(52, cout));
            let m = tile_outputs(k).unwrap();
            let pad = (k - 1) / 2;
            let mut ms = [Vec::new(), Vec::new(), Vec::new()];
            for _ in 0..25 {
                for (arm, v) in ms.iter_mut().enumerate() {
                    let t0 = std::time::Instant::now();
                    pool.install(|| {
                        crate::cpu::team::hot(|| match arm {
                            0 => conv1d_winograd_rows(&x, &w, m, &b, pad),
                            1 => by_columns(&x, &w, m, &b, pad),
                            _ => crate::cpu::ops::conv1d(&x, &w, Some(&b), pad, 1),
                        })
                    });
                    v.push(t0.elapsed().as_secs_f64() * 1e3);
                }
            }
            let med = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let [r, c, d] = ms.map(|mut v| med(&mut v));
            eprintln!(
                "{name} ({cin}->{cout}, K {k}, {t} columns), 2 threads: rows {r:.3} ms, columns {c:.3}, direct {d:.3}"
            );
        }
    }

    /// [`conv1d_auto`]'s Winograd path, its output rows split over 1, 2 and 3 threads (parts
    /// of unequal rows; a convolution with fewer rows than threads; several column tiles):
    /// equal to the direct convolution, and the splits to each other bit for bit.
    #[test]
    fn the_row_split_equals_the_direct_convolution_at_any_thread_count() {
        for &(cin, cout, k, m, t, pad) in &[
            (192, 384, 5, 4, 300, 2),
            (400, 2, 3, 4, 700, 1),
            (24, 130, 5, 4, 16 * CHUNK_TILES + 9, 2),
            (16, 70, 7, 2, 1300, 3),
        ] {
            let x = Tensor::new(vec![cin, t], lcg(40, cin * t));
            let w = Tensor::new(vec![cout, cin, k], lcg(41, cout * cin * k));
            let b = Tensor::new(vec![cout], lcg(42, cout));
            let want = crate::cpu::ops::conv1d(&x, &w, Some(&b), pad, 1);
            let mut first: Option<Vec<f32>> = None;
            for threads in [1, 2, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let got = pool.install(|| conv1d_winograd_rows(&x, &w, m, &b, pad));
                assert_eq!(got.shape, want.shape);
                let e = hark_voice::tensor::rel_l2(&got.data, &want.data);
                let case = format!("cin {cin} cout {cout} F({m},{k}) t {t}, {threads} threads");
                assert!(e < 2e-6, "{case}: rel L2 {e}");
                match &first {
                    None => first = Some(got.data),
                    Some(f) => assert!(
                        f.iter()
                            .zip(&got.data)
                            .all(|(a, b)| a.to_bits() == b.to_bits()),
                        "{case}: not the 1-thread result"
                    ),
                }
            }
        }
    }

    #[test]
    fn the_fused_dilated_form_equals_the_direct_kernel() {
        use crate::cpu::direct::conv_valid_fused;
        for &(c, k, dil, n, add_out, with_act) in &[
            (8, 3, 1, 37, false, true),
            (16, 3, 2, 100, true, false),
            (12, 5, 6, 250, false, true),
            (64, 7, 3, 333, true, true),
            (20, 7, 12, 301, false, true),
            (9, 5, 2, 3, false, true),
            (9, 7, 12, 5, true, true),
        ] {
            let m = tile_outputs(k).expect("a tile size");
            let xs = n + dil * (k - 1) + 2;
            let x = lcg(7, c * xs);
            let w = Tensor::new(vec![c, c, k], lcg(8, c * c * k));
            let res = lcg(9, c * (n + 1));
            let bias = lcg(10, c);
            let init = Init {
                res: &res,
                rs: n + 1,
                bias: &bias,
                add_out,
            };
            let d = ConvDims {
                cin: c,
                cout: c,
                k,
                dil,
                n,
            };
            let start = lcg(11, c * n);
            let (mut want, mut got) = (start.clone(), start.clone());
            let (mut act_w, mut act_g) = (vec![0.0; c * n], vec![0.0; c * n]);
            fn act(a: &mut [f32], on: bool, n: usize) -> Option<ActOut<'_>> {
                on.then_some(ActOut {
                    act: a,
                    stride: n,
                    slope: 0.1,
                })
            }
            let aw = act(&mut act_w, with_act, n);
            conv_valid_fused(&x, xs, &w.data, d, &mut want, n, Some(init), aw);
            let wg = Winograd::new(&w, m);
            let mut sc = FusedScratch::default();
            let ag = act(&mut act_g, with_act, n);
            conv_valid_fused_winograd(&wg, &x, xs, dil, n, &mut got, n, init, ag, &mut sc);
            let e = rel_l2(&got, &want);
            assert!(e < 2e-6, "c {c} k {k} dil {dil} n {n}: rel L2 {e}");
            assert!(rel_l2(&act_g, &act_w) < 2e-6, "act c {c} k {k} dil {dil}");
        }
    }

    /// The register forms of the split and of both transforms (AVX2, and AVX-512 where the CPU
    /// has it) against the portable loops, whatever level [`isa`] picks on this machine.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_register_transforms_equal_the_portable_loops() {
        let avx2 = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma");
        let avx512 = std::arch::is_x86_feature_detected!("avx512f");
        if !avx2 {
            eprintln!("skipped: no AVX2 on this CPU");
            return;
        }
        let cin = 5;
        for &(m, k) in &[(4, 3), (4, 5), (2, 7), (2, 5)] {
            let w = Tensor::new(vec![ROW_BLOCK, cin, k], lcg(20, ROW_BLOCK * cin * k));
            let wg = Winograd::new(&w, m);
            let n = wg.points();
            let qx = CHUNK_TILES + (n - 1) / m;
            // Split: the tiles a register form did equal the scalar de-interleave.
            let row = lcg(21, m * CHUNK_TILES + 5);
            for level in [2, 3].into_iter().filter(|&l| l == 2 || avx512) {
                let mut phase = vec![f32::NAN; m * cin * qx];
                // SAFETY: the CPU has the level's features (checked above).
                let done = unsafe {
                    if level == 2 {
                        x86::split_avx2(m, &row, 1, cin, qx, &mut phase)
                    } else {
                        x86::split(m, &row, 1, cin, qx, &mut phase)
                    }
                };
                assert!(
                    done >= CHUNK_TILES - 16,
                    "F({m},{k}) level {level}: {done} tiles"
                );
                for f in 0..m {
                    for q in 0..done {
                        assert_eq!(phase[(f * cin + 1) * qx + q], row[m * q + f]);
                    }
                }
            }
            // Input transform.
            let phase = lcg(22, m * cin * qx);
            let live = CHUNK_TILES;
            let mut want = vec![0.0; n * cin * CHUNK_TILES];
            input_any(&wg, &phase, qx, live, &mut want);
            for level in [2, 3].into_iter().filter(|&l| l == 2 || avx512) {
                let mut got = vec![0.0; n * cin * CHUNK_TILES];
                // SAFETY: as above; the buffers have the sizes `acc` gives them.
                unsafe {
                    match (level, n) {
                        (2, 8) => x86::input_avx2::<8>(&wg, &phase, qx, live, &mut got),
                        (2, _) => x86::input_avx2::<6>(&wg, &phase, qx, live, &mut got),
                        (_, 8) => x86::input::<8>(&wg, &phase, qx, live, &mut got),
                        _ => x86::input::<6>(&wg, &phase, qx, live, &mut got),
                    }
                }
                let e = rel_l2(&got, &want);
                assert!(e < 1e-6, "input F({m},{k}) level {level}: rel L2 {e}");
            }
            // Output transform, onto a start, on whole and partial vectors of columns.
            let plane = ROW_BLOCK * CHUNK_TILES;
            let prod = lcg(23, n * plane);
            let (rows, os) = (7, m * CHUNK_TILES + 2);
            for cols in [m * CHUNK_TILES, 37, 8 * m + 3, 1] {
                let start = lcg(24, rows * os);
                let mut want = start.clone();
                output_any(&wg, &prod, rows, &mut want, os, cols);
                for level in [2, 3].into_iter().filter(|&l| l == 2 || avx512) {
                    let mut got = start.clone();
                    // SAFETY: as above.
                    unsafe {
                        match (level, m, n) {
                            (2, 4, 8) => {
                                x86::output_avx2::<4, 8>(&wg, &prod, rows, &mut got, os, cols)
                            }
                            (2, 4, _) => {
                                x86::output_avx2::<4, 6>(&wg, &prod, rows, &mut got, os, cols)
                            }
                            (2, _, 8) => {
                                x86::output_avx2::<2, 8>(&wg, &prod, rows, &mut got, os, cols)
                            }
                            (2, _, _) => {
                                x86::output_avx2::<2, 6>(&wg, &prod, rows, &mut got, os, cols)
                            }
                            (_, 4, 8) => x86::output::<4, 8>(&wg, &prod, rows, &mut got, os, cols),
                            (_, 4, _) => x86::output::<4, 6>(&wg, &prod, rows, &mut got, os, cols),
                            (_, _, 8) => x86::output::<2, 8>(&wg, &prod, rows, &mut got, os, cols),
                            _ => x86::output::<2, 6>(&wg, &prod, rows, &mut got, os, cols),
                        }
                    }
                    let e = rel_l2(&got, &want);
                    assert!(
                        e < 1e-6,
                        "output F({m},{k}) cols {cols} level {level}: rel L2 {e}"
                    );
                    // Columns past `cols` and the rows' padding are untouched.
                    for r in 0..rows {
                        assert_eq!(
                            got[r * os + cols..(r + 1) * os],
                            start[r * os + cols..(r + 1) * os]
                        );
                    }
                }
            }
        }
    }

    /// `cargo test -p hark-model --release fused_speed -- --ignored --nocapture`: the
    /// decoder's ResBlock convolutions, direct against Winograd, at a tile's width.
    #[test]
    #[ignore]
    fn fused_speed() {
        use crate::cpu::direct::conv_valid_fused;
        use std::time::Instant;
        let n = 320;
        let cs: Vec<usize> =
            std::env::var("WINO_C").map_or(vec![128, 64, 32], |v| vec![v.parse().unwrap()]);
        let kd: Vec<(usize, usize)> = match std::env::var("WINO_KD") {
            Ok(v) => {
                let (k, d) = v.split_once(',').unwrap();
                vec![(k.parse().unwrap(), d.parse().unwrap())]
            }
            Err(_) => vec![(3, 1), (3, 2), (5, 2), (5, 6), (7, 3), (7, 12)],
        };
        for c in cs {
            for &(k, dil) in &kd {
                let xs = n + dil * (k - 1);
                let x = lcg(7, c * xs);
                let w = Tensor::new(vec![c, c, k], lcg(8, c * c * k));
                let res = lcg(9, c * n);
                let bias = lcg(10, c);
                let init = Init {
                    res: &res,
                    rs: n,
                    bias: &bias,
                    add_out: false,
                };
                let d = ConvDims {
                    cin: c,
                    cout: c,
                    k,
                    dil,
                    n,
                };
                let mut out = vec![0.0; c * n];
                let mut act = vec![0.0; c * n];
                let wg = Winograd::new(&w, tile_outputs(k).unwrap());
                let mut sc = FusedScratch::default();
                let reps = 200;
                let (mut td, mut tw) = (f64::MAX, f64::MAX);
                for _ in 0..3 {
                    let t0 = Instant::now();
                    for _ in 0..reps {
                        let a = ActOut {
                            act: &mut act,
                            stride: n,
                            slope: 0.1,
                        };
                        conv_valid_fused(&x, xs, &w.data, d, &mut out, n, Some(init), Some(a));
                    }
                    td = td.min(t0.elapsed().as_secs_f64() / reps as f64);
                    let t0 = Instant::now();
                    for _ in 0..reps {
                        let a = ActOut {
                            act: &mut act,
                            stride: n,
                            slope: 0.1,
                        };
                        conv_valid_fused_winograd(
                            &wg,
                            &x,
                            xs,
                            dil,
                            n,
                            &mut out,
                            n,
                            init,
                            Some(a),
                            &mut sc,
                        );
                    }
                    tw = tw.min(t0.elapsed().as_secs_f64() / reps as f64);
                }
                println!(
                    "C {c:3} K {k} dil {dil:2}: direct {:7.1} µs, winograd {:7.1} µs, ratio {:.3}",
                    td * 1e6,
                    tw * 1e6,
                    tw / td
                );
            }
        }
    }

    /// `cargo test -p hark-model --release winograd_speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn winograd_speed() {
        use std::time::Instant;
        let n_out: usize = std::env::var("WINO_N").map_or(336, |v| v.parse().unwrap());
        let (cin, cout, k) = (192, 384, 5);
        let xs = n_out + k - 1;
        let x = lcg(3, cin * xs);
        let w = Tensor::new(vec![cout, cin, k], lcg(4, cout * cin * k));
        let mut out = vec![0.0f32; cout * n_out];
        let d = ConvDims {
            cin,
            cout,
            k,
            dil: 1,
            n: n_out,
        };
        let ms: Vec<usize> =
            std::env::var("WINO_M").map_or(vec![2, 3, 4], |v| vec![v.parse().unwrap()]);
        for m in ms {
            let wg = Winograd::new(&w, m);
            let mut sc = WinoScratch::default();
            for _ in 0..3 {
                let t0 = Instant::now();
                for _ in 0..20 {
                    conv_valid_acc(&x, xs, &w.data, d, &mut out, n_out);
                }
                let direct = t0.elapsed().as_secs_f64() / 20.0;
                let t0 = Instant::now();
                for _ in 0..20 {
                    wg.acc(&x, xs, n_out, &mut out, n_out, &mut sc);
                }
                let wino = t0.elapsed().as_secs_f64() / 20.0;
                let gf = 2.0 * (cin * cout * k * n_out) as f64 / 1e9;
                println!(
                    "F({m},{k}): direct {:.3} ms ({:.0} GFLOP/s), winograd {:.3} ms, ratio {:.3}",
                    direct * 1e3,
                    gf / direct,
                    wino * 1e3,
                    wino / direct
                );
            }
        }
    }
}
