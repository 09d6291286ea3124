//! Direct "valid" 1-D convolution on channels-first rows:
//!
//! `out[co·os + j] += Σ_{ci, tap} w[(co·cin + ci)·k + tap] · x[ci·xs + j + tap·dil]`
//!
//! for `co < cout`, `j < n`. Vectors run along time, which is contiguous in `[C, T]`, so a
//! tap is just a shifted load of an input row: no im2col and no packing (the conv shapes here
//! have few channels and long time axes, where a general GEMM spends most of its time
//! re-arranging data). Register tiles are `R` output channels × `NV` vectors of time; the
//! instruction set is picked at run time (AVX-512, AVX2+FMA, or portable loops).

/// Shape of one [`conv_valid_acc`] call.
#[derive(Clone, Copy, Debug)]
pub struct ConvDims {
    pub cin: usize,
    pub cout: usize,
    pub k: usize,
    pub dil: usize,
    /// Output columns.
    pub n: usize,
}

impl ConvDims {
    /// Input columns read per row: `n + dil·(k − 1)`.
    pub fn in_cols(&self) -> usize {
        self.n + self.dil * (self.k - 1)
    }
}

/// Where a convolution's accumulators start: `res[co·rs + j] + bias[co]`, plus `out`'s own
/// value when `add_out` (the mean of the decoder's ResBlocks is summed in place this way),
/// instead of `out` alone. Saves the pass that would otherwise write that sum into `out` first.
#[derive(Clone, Copy)]
pub struct Init<'a> {
    pub res: &'a [f32],
    pub rs: usize,
    pub bias: &'a [f32],
    pub add_out: bool,
}

/// A second output: LeakyReLU(`slope`) of the result into `act[co·stride + j]`, the next
/// convolution's input, written while the result is still in registers (no separate pass).
pub struct ActOut<'a> {
    pub act: &'a mut [f32],
    pub stride: usize,
    pub slope: f32,
}

/// The raw form of [`Init`] and [`ActOut`] that the kernels take.
#[derive(Clone, Copy)]
struct Fuse {
    init: Option<(*const f32, usize, *const f32, bool)>,
    act: Option<(*mut f32, usize, f32)>,
}

impl Fuse {
    const NONE: Fuse = Fuse {
        init: None,
        act: None,
    };

    /// The same buffers from column `j` on (the register tiles' column offset).
    #[cfg(target_arch = "x86_64")]
    fn at(self, j: usize) -> Fuse {
        Fuse {
            init: self
                .init
                .map(|(res, rs, bias, add)| (res.wrapping_add(j), rs, bias, add)),
            act: self.act.map(|(a, st, sl)| (a.wrapping_add(j), st, sl)),
        }
    }
}

/// LeakyReLU as the kernels compute it: `max(v, slope·v)`, which for `0 ≤ slope ≤ 1` equals
/// `v < 0 ? slope·v : v`.
#[inline(always)]
pub(crate) fn lrelu(v: f32, slope: f32) -> f32 {
    v.max(v * slope)
}

/// Safe entry point: checks that every addressed element is inside `x`, `w` and `out`.
pub fn conv_valid_acc(x: &[f32], xs: usize, w: &[f32], d: ConvDims, out: &mut [f32], os: usize) {
    conv_valid_fused(x, xs, w, d, out, os, None, None)
}

/// [`conv_valid_acc`] with its accumulators started from `init` rather than `out`, and the
/// result's LeakyReLU also written to `act`; every buffer is bounds-checked.
#[allow(clippy::too_many_arguments)]
pub fn conv_valid_fused(
    x: &[f32],
    xs: usize,
    w: &[f32],
    d: ConvDims,
    out: &mut [f32],
    os: usize,
    init: Option<Init>,
    act: Option<ActOut>,
) {
    if d.n == 0 || d.cout == 0 {
        return;
    }
    let mut fuse = Fuse::NONE;
    if let Some(i) = init {
        assert!(
            i.res.len() >= (d.cout - 1) * i.rs + d.n,
            "conv residual too small"
        );
        assert!(i.bias.len() >= d.cout, "conv bias too small");
        fuse.init = Some((i.res.as_ptr(), i.rs, i.bias.as_ptr(), i.add_out));
    }
    if let Some(a) = act {
        assert!(
            a.act.len() >= (d.cout - 1) * a.stride + d.n,
            "conv act output too small"
        );
        assert!(
            (0.0..=1.0).contains(&a.slope),
            "LeakyReLU slope outside [0, 1]"
        );
        fuse.act = Some((a.act.as_mut_ptr(), a.stride, a.slope));
    }
    assert!(d.k > 0 && d.cin > 0);
    assert_eq!(w.len(), d.cout * d.cin * d.k, "conv weight size");
    assert!(
        x.len() >= (d.cin - 1) * xs + d.in_cols(),
        "conv input too small"
    );
    assert!(
        out.len() >= (d.cout - 1) * os + d.n,
        "conv output too small"
    );
    // SAFETY: bounds checked above; `out` and `act` are unique borrows, so they alias
    // neither each other nor an input.
    unsafe { conv_dispatch(x.as_ptr(), xs, w.as_ptr(), d, out.as_mut_ptr(), os, fuse) }
}

/// # Safety
/// `x[ci·xs + c]` for `ci < cin`, `c < d.in_cols()`, `w[0..cout·cin·k]` and
/// `out[co·os + j]` for `co < cout`, `j < n` must be valid; `out` must not overlap `x` or `w`.
pub unsafe fn conv_valid_acc_raw(
    x: *const f32,
    xs: usize,
    w: *const f32,
    d: ConvDims,
    out: *mut f32,
    os: usize,
) {
    // SAFETY: the caller upholds the bounds.
    unsafe { conv_dispatch(x, xs, w, d, out, os, Fuse::NONE) }
}

/// # Safety
/// As [`conv_valid_acc_raw`], and `fuse`'s buffers hold `cout` rows of `n` at their strides,
/// the act output overlapping nothing else.
unsafe fn conv_dispatch(
    x: *const f32,
    xs: usize,
    w: *const f32,
    d: ConvDims,
    out: *mut f32,
    os: usize,
    fuse: Fuse,
) {
    #[cfg(target_arch = "x86_64")]
    match super::isa::isa() {
        // SAFETY: `isa` never exceeds what the CPU has; the caller upholds the bounds.
        super::isa::Isa::Avx512 => {
            return unsafe { x86::conv_avx512(x, xs, w, d, out, os, fuse) };
        }
        // SAFETY: as above (AVX2 and FMA).
        super::isa::Isa::Avx2 => return unsafe { x86::conv_avx2(x, xs, w, d, out, os, fuse) },
        super::isa::Isa::Scalar => {}
    }
    // SAFETY: the caller upholds the bounds.
    unsafe { conv_portable(x, xs, w, d, out, os, fuse) }
}

/// Plain loops, one output row at a time (the compiler vectorises the inner `j` loop).
unsafe fn conv_portable(
    x: *const f32,
    xs: usize,
    w: *const f32,
    d: ConvDims,
    out: *mut f32,
    os: usize,
    fuse: Fuse,
) {
    let ConvDims {
        cin,
        cout,
        k,
        dil,
        n,
    } = d;
    for co in 0..cout {
        // SAFETY: row `co` of `out` has `n` valid elements and overlaps no input.
        let o = unsafe { std::slice::from_raw_parts_mut(out.add(co * os), n) };
        if let Some((res, rs, bias, add_out)) = fuse.init {
            // SAFETY: the caller guarantees `cout` rows of `n` at stride `rs`, and the bias.
            let (r, b) = unsafe {
                (
                    std::slice::from_raw_parts(res.add(co * rs), n),
                    *bias.add(co),
                )
            };
            for (y, &rv) in o.iter_mut().zip(r) {
                *y = if add_out { *y + rv + b } else { rv + b };
            }
        }
        for ci in 0..cin {
            for tap in 0..k {
                // SAFETY: inside the caller's bounds.
                let (wv, xr) = unsafe {
                    (
                        *w.add((co * cin + ci) * k + tap),
                        std::slice::from_raw_parts(x.add(ci * xs + tap * dil), n),
                    )
                };
                o.iter_mut().zip(xr).for_each(|(y, &v)| *y += wv * v);
            }
        }
        if let Some((act, stride, slope)) = fuse.act {
            // SAFETY: the caller guarantees `cout` rows of `n` at `stride`, overlapping nothing.
            let a = unsafe { std::slice::from_raw_parts_mut(act.add(co * stride), n) };
            a.iter_mut()
                .zip(o.iter())
                .for_each(|(a, &y)| *a = lrelu(y, slope));
        }
    }
}

// Register tiles are indexed by row and vector; index loops read clearer than zipped iterators.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::needless_range_loop)]
mod x86 {
    use super::{ConvDims, Fuse};
    use std::arch::x86_64::*;

    /// Walks output rows in blocks of `r` and columns in blocks of `width`, calling
    /// `tile(co, j, cols)` for each register tile; the last column block may be partial.
    #[inline(always)]
    fn for_tiles(d: ConvDims, r: usize, width: usize, mut tile: impl FnMut(usize, usize, usize)) {
        for co in (0..d.cout).step_by(r) {
            let mut j = 0;
            while j < d.n {
                let cols = width.min(d.n - j);
                tile(co, j, cols);
                j += cols;
            }
        }
    }

    /// AVX-512: 8 rows × 3 vectors (48 columns) = 24 accumulators; leftover rows one at a
    /// time. A partial last column block runs on as few vectors as it needs: a masked lane
    /// costs a whole FMA, and the register tiles of short convolutions are mostly remainder.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn conv_avx512(
        x: *const f32,
        xs: usize,
        w: *const f32,
        d: ConvDims,
        out: *mut f32,
        os: usize,
        fuse: Fuse,
    ) {
        let full = d.cout / 8 * 8;
        let main = ConvDims { cout: full, ..d };
        for_tiles(main, 8, 48, |co, j, cols| unsafe {
            let (x, out, f) = (x.add(j), out.add(j), fuse.at(j));
            match cols {
                ..=16 => tile512::<8, 1>(x, xs, w, d, co, out, os, cols, f),
                17..=32 => tile512::<8, 2>(x, xs, w, d, co, out, os, cols, f),
                _ => tile512::<8, 3>(x, xs, w, d, co, out, os, cols, f),
            }
        });
        let rest = ConvDims {
            cout: d.cout - full,
            ..d
        };
        for_tiles(rest, 1, 48, |co, j, cols| unsafe {
            let f = fuse.at(j);
            tile512::<1, 3>(x.add(j), xs, w, d, full + co, out.add(j), os, cols, f)
        });
    }

    /// Mask of the lanes of vector `v` that fall below `cols`.
    #[inline(always)]
    fn mask16(v: usize, cols: usize) -> __mmask16 {
        let live = cols.saturating_sub(v * 16).min(16);
        ((1u32 << live) - 1) as __mmask16
    }

    /// One register tile: rows `co..co + R`, `cols ≤ 16·NV` columns from `x`/`out`.
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    #[inline]
    unsafe fn tile512<const R: usize, const NV: usize>(
        x: *const f32,
        xs: usize,
        w: *const f32,
        d: ConvDims,
        co: usize,
        out: *mut f32,
        os: usize,
        cols: usize,
        fuse: Fuse,
    ) {
        let masks: [__mmask16; NV] = std::array::from_fn(|v| mask16(v, cols));
        let mut acc = [[_mm512_setzero_ps(); NV]; R];
        let wrow = d.cin * d.k;
        // SAFETY (whole body): the caller guarantees the rows/columns addressed are valid;
        // masked lanes are never touched (vector starts past the end use `wrapping_add`).
        unsafe {
            let load_out = |r: usize, v: usize| {
                _mm512_maskz_loadu_ps(masks[v], out.add((co + r) * os).wrapping_add(v * 16))
            };
            match fuse.init {
                None => {
                    for r in 0..R {
                        for v in 0..NV {
                            acc[r][v] = load_out(r, v);
                        }
                    }
                }
                Some((res, rs, bias, add_out)) => {
                    for r in 0..R {
                        let b = _mm512_set1_ps(*bias.add(co + r));
                        for v in 0..NV {
                            let rv = _mm512_maskz_loadu_ps(
                                masks[v],
                                res.add((co + r) * rs).wrapping_add(v * 16),
                            );
                            acc[r][v] = if add_out {
                                _mm512_add_ps(_mm512_add_ps(load_out(r, v), rv), b)
                            } else {
                                _mm512_add_ps(rv, b)
                            };
                        }
                    }
                }
            }
            let wb = w.add(co * wrow);
            for ci in 0..d.cin {
                let xr = x.add(ci * xs);
                let wc = wb.add(ci * d.k);
                for tap in 0..d.k {
                    let xp = xr.add(tap * d.dil);
                    let xv: [__m512; NV] = std::array::from_fn(|v| {
                        _mm512_maskz_loadu_ps(masks[v], xp.wrapping_add(v * 16))
                    });
                    for r in 0..R {
                        let wv = _mm512_set1_ps(*wc.add(r * wrow + tap));
                        for v in 0..NV {
                            acc[r][v] = _mm512_fmadd_ps(wv, xv[v], acc[r][v]);
                        }
                    }
                }
            }
            for r in 0..R {
                for v in 0..NV {
                    _mm512_mask_storeu_ps(
                        out.add((co + r) * os).wrapping_add(v * 16),
                        masks[v],
                        acc[r][v],
                    );
                }
            }
            if let Some((act, stride, slope)) = fuse.act {
                let sl = _mm512_set1_ps(slope);
                for r in 0..R {
                    for v in 0..NV {
                        let a = _mm512_max_ps(acc[r][v], _mm512_mul_ps(acc[r][v], sl));
                        let p = act.add((co + r) * stride).wrapping_add(v * 16);
                        _mm512_mask_storeu_ps(p, masks[v], a);
                    }
                }
            }
        }
    }

    /// AVX2: 6 rows × 2 vectors (16 columns) = 12 accumulators, 15 of the 16 vector registers
    /// with the two input vectors and the broadcast weight (4 × 3 left the compiler all 16 and
    /// it spilled accumulators: 911 ms against 748 for the 10 s sentence on one core). Two FMA
    /// ports of latency 4 need 8 chains; 12 leave slack, and on the Zen 3 VM 6 rows ran at
    /// 0.88–0.98 of 4 rows' time (`avx2_rows_speed`), except at 32 channels (0.97–1.11: the two
    /// rows left over run on a half-filled tile), which keep 4. Leftover rows in tiles of 4, 2
    /// and 1; a partial last column block on as few vectors as it needs (as in [`conv_avx512`]).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn conv_avx2(
        x: *const f32,
        xs: usize,
        w: *const f32,
        d: ConvDims,
        out: *mut f32,
        os: usize,
        fuse: Fuse,
    ) {
        if d.cout <= 32 {
            unsafe { conv_avx2_rows::<4>(x, xs, w, d, out, os, fuse) }
        } else {
            unsafe { conv_avx2_rows::<6>(x, xs, w, d, out, os, fuse) }
        }
    }

    /// [`conv_avx2`] with register tiles of `R` rows, then the rows left over.
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn conv_avx2_rows<const R: usize>(
        x: *const f32,
        xs: usize,
        w: *const f32,
        d: ConvDims,
        out: *mut f32,
        os: usize,
        fuse: Fuse,
    ) {
        let mut done = unsafe { row_blocks::<R>(x, xs, w, d, 0, out, os, fuse) };
        if R > 4 {
            done += unsafe { row_blocks::<4>(x, xs, w, d, done, out, os, fuse) };
        }
        if R > 2 {
            done += unsafe { row_blocks::<2>(x, xs, w, d, done, out, os, fuse) };
        }
        unsafe { row_blocks::<1>(x, xs, w, d, done, out, os, fuse) };
    }

    /// Rows `row0..` of the output in whole blocks of `R` rows; returns the rows done.
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn row_blocks<const R: usize>(
        x: *const f32,
        xs: usize,
        w: *const f32,
        d: ConvDims,
        row0: usize,
        out: *mut f32,
        os: usize,
        fuse: Fuse,
    ) -> usize {
        let rows = (d.cout - row0) / R * R;
        let block = ConvDims { cout: rows, ..d };
        for_tiles(block, R, 16, |co, j, cols| unsafe {
            let (x, out, f, co) = (x.add(j), out.add(j), fuse.at(j), row0 + co);
            match cols {
                16 => tile256::<R, 2, true>(x, xs, w, d, co, out, os, cols, f),
                ..=8 => tile256::<R, 1, false>(x, xs, w, d, co, out, os, cols, f),
                _ => tile256::<R, 2, false>(x, xs, w, d, co, out, os, cols, f),
            }
        });
        rows
    }

    #[inline(always)]
    fn mask8(v: usize, cols: usize) -> __m256i {
        let live = cols.saturating_sub(v * 8).min(8) as i32;
        // Lane i is live (sign bit set) when i < live.
        unsafe {
            _mm256_cmpgt_epi32(
                _mm256_set1_epi32(live),
                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
            )
        }
    }

    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    #[inline]
    /// `FULL`: all `8·NV` columns are live, so the inner loop loads plainly (an AVX2 masked
    /// load takes an ALU slot beside its load, and the FMAs are short of exactly those).
    unsafe fn tile256<const R: usize, const NV: usize, const FULL: bool>(
        x: *const f32,
        xs: usize,
        w: *const f32,
        d: ConvDims,
        co: usize,
        out: *mut f32,
        os: usize,
        cols: usize,
        fuse: Fuse,
    ) {
        let masks: [__m256i; NV] = std::array::from_fn(|v| mask8(v, cols));
        let mut acc = [[_mm256_setzero_ps(); NV]; R];
        let wrow = d.cin * d.k;
        // SAFETY (whole body): as in `tile512`; masked loads and stores skip dead lanes.
        unsafe {
            let load_out = |r: usize, v: usize| {
                _mm256_maskload_ps(out.add((co + r) * os).wrapping_add(v * 8), masks[v])
            };
            match fuse.init {
                None => {
                    for r in 0..R {
                        for v in 0..NV {
                            acc[r][v] = load_out(r, v);
                        }
                    }
                }
                Some((res, rs, bias, add_out)) => {
                    for r in 0..R {
                        let b = _mm256_set1_ps(*bias.add(co + r));
                        for v in 0..NV {
                            let rv = _mm256_maskload_ps(
                                res.add((co + r) * rs).wrapping_add(v * 8),
                                masks[v],
                            );
                            acc[r][v] = if add_out {
                                _mm256_add_ps(_mm256_add_ps(load_out(r, v), rv), b)
                            } else {
                                _mm256_add_ps(rv, b)
                            };
                        }
                    }
                }
            }
            let wb = w.add(co * wrow);
            for ci in 0..d.cin {
                let xr = x.add(ci * xs);
                let wc = wb.add(ci * d.k);
                for tap in 0..d.k {
                    let xp = xr.add(tap * d.dil);
                    let xv: [__m256; NV] = std::array::from_fn(|v| {
                        if FULL {
                            _mm256_loadu_ps(xp.add(v * 8))
                        } else {
                            _mm256_maskload_ps(xp.wrapping_add(v * 8), masks[v])
                        }
                    });
                    for r in 0..R {
                        let wv = _mm256_set1_ps(*wc.add(r * wrow + tap));
                        for v in 0..NV {
                            acc[r][v] = _mm256_fmadd_ps(wv, xv[v], acc[r][v]);
                        }
                    }
                }
            }
            for r in 0..R {
                for v in 0..NV {
                    _mm256_maskstore_ps(
                        out.add((co + r) * os).wrapping_add(v * 8),
                        masks[v],
                        acc[r][v],
                    );
                }
            }
            if let Some((act, stride, slope)) = fuse.act {
                let sl = _mm256_set1_ps(slope);
                for r in 0..R {
                    for v in 0..NV {
                        let a = _mm256_max_ps(acc[r][v], _mm256_mul_ps(acc[r][v], sl));
                        let p = act.add((co + r) * stride).wrapping_add(v * 8);
                        _mm256_maskstore_ps(p, masks[v], a);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::testutil::lcg;
    use hark_voice::tensor::rel_l2;

    fn naive(x: &[f32], xs: usize, w: &[f32], d: ConvDims, out: &mut [f32], os: usize) {
        for co in 0..d.cout {
            for j in 0..d.n {
                let mut a = out[co * os + j] as f64;
                for ci in 0..d.cin {
                    for tap in 0..d.k {
                        a += (w[(co * d.cin + ci) * d.k + tap] * x[ci * xs + j + tap * d.dil])
                            as f64;
                    }
                }
                out[co * os + j] = a as f32;
            }
        }
    }

    #[test]
    fn matches_direct_loops_on_every_path() {
        // Row counts around the 8/4-row tiles, column counts around the 48/24-column tiles.
        for &(cin, cout, k, dil, n) in &[
            (1, 1, 1, 1, 1),
            (3, 8, 3, 1, 48),
            (5, 9, 5, 2, 49),
            (4, 13, 7, 3, 100),
            (16, 16, 1, 1, 17),
            (2, 3, 3, 12, 5),
            (7, 24, 3, 1, 200),
            (6, 16, 5, 2, 64),
            (6, 16, 5, 2, 80),
            (6, 16, 5, 2, 113),
            (3, 8, 3, 1, 20),
            // Past 32 rows AVX2 takes 6-row tiles, then 4, 2 and 1 for the rows left over.
            (5, 35, 3, 1, 40),
            (4, 38, 5, 2, 33),
            (3, 64, 3, 1, 17),
        ] {
            let d = ConvDims {
                cin,
                cout,
                k,
                dil,
                n,
            };
            let xs = d.in_cols() + 3; // a row stride wider than the row
            let os = n + 5;
            let x = lcg(1, cin * xs, 1.0);
            let w = lcg(2, cout * cin * k, 1.0);
            let init = lcg(3, cout * os, 1.0);
            let mut want = init.clone();
            naive(&x, xs, &w, d, &mut want, os);
            let mut got = init.clone();
            conv_valid_acc(&x, xs, &w, d, &mut got, os);
            assert!(rel_l2(&got, &want) < 1e-6, "{d:?}");
            // The padding between rows is untouched.
            for co in 0..cout - 1 {
                assert_eq!(
                    got[co * os + n..(co + 1) * os],
                    init[co * os + n..(co + 1) * os]
                );
            }
            let mut port = init.clone();
            // SAFETY: same bounds as the checked call above.
            unsafe {
                conv_portable(
                    x.as_ptr(),
                    xs,
                    w.as_ptr(),
                    d,
                    port.as_mut_ptr(),
                    os,
                    Fuse::NONE,
                )
            };
            assert!(rel_l2(&port, &want) < 1e-6, "portable {d:?}");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                let mut v2 = init.clone();
                // SAFETY: as above; the CPU has AVX2 and FMA.
                unsafe {
                    x86::conv_avx2(
                        x.as_ptr(),
                        xs,
                        w.as_ptr(),
                        d,
                        v2.as_mut_ptr(),
                        os,
                        Fuse::NONE,
                    )
                };
                assert!(rel_l2(&v2, &want) < 1e-6, "avx2 {d:?}");
            }
        }
    }

    /// The fused start (residual + bias, optionally + out) and the LeakyReLU second output,
    /// on every instruction set the CPU has, against the same loops.
    #[test]
    fn fused_start_and_act_output_match_on_every_path() {
        type Kernel = unsafe fn(*const f32, usize, *const f32, ConvDims, *mut f32, usize, Fuse);
        let mut paths: Vec<(&str, Kernel)> = vec![("portable", conv_portable)];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                paths.push(("avx2", x86::conv_avx2));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                paths.push(("avx512", x86::conv_avx512));
            }
        }
        for &(cin, cout, k, dil, n) in &[
            (3, 8, 3, 1, 48),
            (5, 9, 5, 2, 49),
            (4, 13, 7, 3, 100),
            (2, 3, 3, 12, 5),
        ] {
            let d = ConvDims {
                cin,
                cout,
                k,
                dil,
                n,
            };
            let (xs, os, rs, st) = (d.in_cols() + 3, n + 5, n + 2, n + 7);
            let x = lcg(1, cin * xs, 1.0);
            let w = lcg(2, cout * cin * k, 1.0);
            let old = lcg(3, cout * os, 1.0);
            let res = lcg(4, cout * rs, 1.0);
            let bias = lcg(5, cout, 1.0);
            for add_out in [false, true] {
                let mut want = old.clone();
                for co in 0..cout {
                    for j in 0..n {
                        let start = res[co * rs + j] + bias[co];
                        let o = &mut want[co * os + j];
                        *o = if add_out { *o + start } else { start };
                    }
                }
                naive(&x, xs, &w, d, &mut want, os);
                for (name, kernel) in &paths {
                    let mut got = old.clone();
                    let mut act = vec![f32::NAN; cout * st];
                    let fuse = Fuse {
                        init: Some((res.as_ptr(), rs, bias.as_ptr(), add_out)),
                        act: Some((act.as_mut_ptr(), st, 0.1)),
                    };
                    // SAFETY: every buffer holds `cout` rows of `n` at its stride.
                    unsafe { kernel(x.as_ptr(), xs, w.as_ptr(), d, got.as_mut_ptr(), os, fuse) };
                    assert!(rel_l2(&got, &want) < 1e-6, "{name} {d:?} add_out {add_out}");
                    for co in 0..cout {
                        for j in 0..n {
                            let y = got[co * os + j];
                            let a = act[co * st + j];
                            assert_eq!(a, if y < 0.0 { 0.1 * y } else { y }, "{name} act");
                        }
                        // Past each act row's `n` columns nothing is written.
                        assert!(act[co * st + n..co * st + st].iter().all(|v| v.is_nan()));
                    }
                }
            }
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod avx2_rows_speed {
    use super::*;
    use crate::cpu::testutil::lcg;

    /// `cargo test -p hark-model --release avx2_rows_speed -- --ignored --nocapture`: the AVX2
    /// register tile of 4 rows against 6, alternated run by run (median of the per-pair ratios).
    #[test]
    #[ignore]
    fn avx2_rows_speed() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let n = 320;
        for &(cin, cout, k) in &[
            (32, 32, 3),
            (32, 32, 7),
            (64, 64, 3),
            (64, 64, 11),
            (128, 128, 5),
            (192, 384, 5),
        ] {
            let xs = n + k - 1;
            let x = lcg(1, cin * xs, 1.0);
            let w = lcg(2, cout * cin * k, 1.0);
            let mut out = vec![0.0f32; cout * n];
            let d = ConvDims {
                cin,
                cout,
                k,
                dil: 1,
                n,
            };
            let time = |rows: usize, out: &mut [f32]| {
                let t0 = std::time::Instant::now();
                for _ in 0..20 {
                    // SAFETY: the buffers are sized for `d` above.
                    unsafe {
                        if rows == 6 {
                            x86::conv_avx2_rows::<6>(
                                x.as_ptr(),
                                xs,
                                w.as_ptr(),
                                d,
                                out.as_mut_ptr(),
                                n,
                                Fuse::NONE,
                            )
                        } else {
                            x86::conv_avx2_rows::<4>(
                                x.as_ptr(),
                                xs,
                                w.as_ptr(),
                                d,
                                out.as_mut_ptr(),
                                n,
                                Fuse::NONE,
                            )
                        }
                    }
                }
                t0.elapsed().as_secs_f64() / 20.0
            };
            let (mut r, mut t4, mut t6) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..15 {
                let a = time(4, &mut out);
                let b = time(6, &mut out);
                r.push(b / a);
                t4.push(a);
                t6.push(b);
            }
            for v in [&mut r, &mut t4, &mut t6] {
                v.sort_by(f64::total_cmp);
            }
            let gf = 2.0 * (cin * cout * k * n) as f64 / 1e9;
            println!(
                "cin {cin:3} cout {cout:3} K {k:2}: 4 rows {:7.1} µs ({:.0} GFLOP/s), 6 rows {:7.1} µs ({:.0}), ratio {:.3}",
                t4[7] * 1e6,
                gf / t4[7],
                t6[7] * 1e6,
                gf / t6[7],
                r[7]
            );
        }
    }
}
