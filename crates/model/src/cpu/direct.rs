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

/// Safe entry point: checks that every addressed element is inside `x`, `w` and `out`.
pub fn conv_valid_acc(x: &[f32], xs: usize, w: &[f32], d: ConvDims, out: &mut [f32], os: usize) {
    if d.n == 0 || d.cout == 0 {
        return;
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
    // SAFETY: bounds checked above; `out` is a unique borrow, so it aliases neither input.
    unsafe { conv_valid_acc_raw(x.as_ptr(), xs, w.as_ptr(), d, out.as_mut_ptr(), os) }
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
    #[cfg(target_arch = "x86_64")]
    match super::isa::isa() {
        // SAFETY: `isa` never exceeds what the CPU has; the caller upholds the bounds.
        super::isa::Isa::Avx512 => return unsafe { x86::conv_avx512(x, xs, w, d, out, os) },
        // SAFETY: as above (AVX2 and FMA).
        super::isa::Isa::Avx2 => return unsafe { x86::conv_avx2(x, xs, w, d, out, os) },
        super::isa::Isa::Scalar => {}
    }
    // SAFETY: the caller upholds the bounds.
    unsafe { conv_portable(x, xs, w, d, out, os) }
}

/// Plain loops, one output row at a time (the compiler vectorises the inner `j` loop).
unsafe fn conv_portable(
    x: *const f32,
    xs: usize,
    w: *const f32,
    d: ConvDims,
    out: *mut f32,
    os: usize,
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
    }
}

// Register tiles are indexed by row and vector; index loops read clearer than zipped iterators.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::needless_range_loop)]
mod x86 {
    use super::ConvDims;
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
    ) {
        let full = d.cout / 8 * 8;
        let main = ConvDims { cout: full, ..d };
        for_tiles(main, 8, 48, |co, j, cols| unsafe {
            let (x, out) = (x.add(j), out.add(j));
            match cols {
                ..=16 => tile512::<8, 1>(x, xs, w, d, co, out, os, cols),
                17..=32 => tile512::<8, 2>(x, xs, w, d, co, out, os, cols),
                _ => tile512::<8, 3>(x, xs, w, d, co, out, os, cols),
            }
        });
        let rest = ConvDims {
            cout: d.cout - full,
            ..d
        };
        for_tiles(rest, 1, 48, |co, j, cols| unsafe {
            tile512::<1, 3>(x.add(j), xs, w, d, full + co, out.add(j), os, cols)
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
    ) {
        let masks: [__mmask16; NV] = std::array::from_fn(|v| mask16(v, cols));
        let mut acc = [[_mm512_setzero_ps(); NV]; R];
        let wrow = d.cin * d.k;
        // SAFETY (whole body): the caller guarantees the rows/columns addressed are valid;
        // masked lanes are never touched (vector starts past the end use `wrapping_add`).
        unsafe {
            for r in 0..R {
                for v in 0..NV {
                    acc[r][v] = _mm512_maskz_loadu_ps(
                        masks[v],
                        out.add((co + r) * os).wrapping_add(v * 16),
                    );
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
        }
    }

    /// AVX2: 4 rows × 3 vectors (24 columns) = 12 accumulators; leftover rows one at a time;
    /// a partial last column block on as few vectors as it needs (as in [`conv_avx512`]).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn conv_avx2(
        x: *const f32,
        xs: usize,
        w: *const f32,
        d: ConvDims,
        out: *mut f32,
        os: usize,
    ) {
        let full = d.cout / 4 * 4;
        let main = ConvDims { cout: full, ..d };
        for_tiles(main, 4, 24, |co, j, cols| unsafe {
            let (x, out) = (x.add(j), out.add(j));
            match cols {
                ..=8 => tile256::<4, 1>(x, xs, w, d, co, out, os, cols),
                9..=16 => tile256::<4, 2>(x, xs, w, d, co, out, os, cols),
                _ => tile256::<4, 3>(x, xs, w, d, co, out, os, cols),
            }
        });
        let rest = ConvDims {
            cout: d.cout - full,
            ..d
        };
        for_tiles(rest, 1, 24, |co, j, cols| unsafe {
            tile256::<1, 3>(x.add(j), xs, w, d, full + co, out.add(j), os, cols)
        });
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
    unsafe fn tile256<const R: usize, const NV: usize>(
        x: *const f32,
        xs: usize,
        w: *const f32,
        d: ConvDims,
        co: usize,
        out: *mut f32,
        os: usize,
        cols: usize,
    ) {
        let masks: [__m256i; NV] = std::array::from_fn(|v| mask8(v, cols));
        let mut acc = [[_mm256_setzero_ps(); NV]; R];
        let wrow = d.cin * d.k;
        // SAFETY (whole body): as in `tile512`; masked loads and stores skip dead lanes.
        unsafe {
            for r in 0..R {
                for v in 0..NV {
                    acc[r][v] =
                        _mm256_maskload_ps(out.add((co + r) * os).wrapping_add(v * 8), masks[v]);
                }
            }
            let wb = w.add(co * wrow);
            for ci in 0..d.cin {
                let xr = x.add(ci * xs);
                let wc = wb.add(ci * d.k);
                for tap in 0..d.k {
                    let xp = xr.add(tap * d.dil);
                    let xv: [__m256; NV] = std::array::from_fn(|v| {
                        _mm256_maskload_ps(xp.wrapping_add(v * 8), masks[v])
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
            unsafe { conv_portable(x.as_ptr(), xs, w.as_ptr(), d, port.as_mut_ptr(), os) };
            assert!(rel_l2(&port, &want) < 1e-6, "portable {d:?}");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                let mut v2 = init.clone();
                // SAFETY: as above; the CPU has AVX2 and FMA.
                unsafe { x86::conv_avx2(x.as_ptr(), xs, w.as_ptr(), d, v2.as_mut_ptr(), os) };
                assert!(rel_l2(&v2, &want) < 1e-6, "avx2 {d:?}");
            }
        }
    }
}
