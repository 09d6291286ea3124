//! Branch-free f32 `exp`/`tanh`/sigmoid that the compiler vectorises (libm's are scalar
//! calls), run under a runtime-detected instruction set. Accurate to a few ulp, far inside the
//! 1e-4 parity budget.

const LOG2E: f32 = std::f32::consts::LOG2_E;

/// Cephes' expf: e^x = 2^n · e^r with |r| ≤ ln2/2 and a degree-6 polynomial for e^r.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.3, 88.3);
    // Round to nearest by adding and removing 1.5·2^23 (vectorises on any SSE level).
    const MAGIC: f32 = 12_582_912.0;
    let shifted = x * LOG2E + MAGIC;
    let n = shifted - MAGIC;
    // ln2 split in two so n·ln2 is exact in the first part.
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 5e-1;
    let er = p * r * r + r + 1.0;
    // 2^n from n's bits in `shifted` (its low mantissa bits hold n): integer operations
    // that vectorise, where `n as i32` (a saturating cast) would go lane by lane.
    let biased = shifted
        .to_bits()
        .wrapping_sub(MAGIC.to_bits())
        .wrapping_add(127);
    er * f32::from_bits(biased << 23)
}

/// Cephes' tanhf: an odd polynomial below 0.625, else 1 − 2/(e^{2|x|} + 1).
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let ax = x.abs();
    let z = x * x;
    let small =
        ((((-5.704_988_7e-3 * z + 2.063_909e-2) * z - 5.373_971_6e-2) * z + 1.333_144_2e-1) * z
            - 3.333_328e-1)
            * z
            * x
            + x;
    let big = (1.0 - 2.0 / (exp(2.0 * ax) + 1.0)).copysign(x);
    if ax < 0.625 { small } else { big }
}

#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// erf by Abramowitz and Stegun 7.1.26 (absolute error 1.5e-7, below 1e-6 after f32
/// rounding: a few ulp of the 1 that GELU adds it to): `1 − t·P(t)·e^{−x²}` with `t = 1/(1 + p|x|)`, odd in x.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let ax = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * ax);
    let p = ((((1.061_405_4 * t - 1.453_152) * t + 1.421_413_8) * t - 0.284_496_74) * t
        + 0.254_829_6)
        * t;
    (1.0 - p * exp(-ax * ax)).copysign(x)
}

// Index loops, not iterator adapters: those are out-of-line calls that would be compiled
// without the caller's target features.
#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn gate_body(a: &mut [f32], b: &[f32]) {
    let b = &b[..a.len()];
    for i in 0..a.len() {
        a[i] = tanh(a[i]) * sigmoid(b[i]);
    }
}

#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn tanh_body(a: &mut [f32], _: &[f32]) {
    for i in 0..a.len() {
        a[i] = tanh(a[i]);
    }
}

#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn gelu_body(a: &mut [f32], _: &[f32]) {
    for i in 0..a.len() {
        a[i] = 0.5 * a[i] * (1.0 + erf(a[i] * std::f32::consts::FRAC_1_SQRT_2));
    }
}

#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn softmax_body(a: &mut [f32], _: &[f32]) {
    let max = a.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    // The exponentials in a loop of their own, which vectorises; the running sum would not.
    for i in 0..a.len() {
        a[i] = exp(a[i] - max);
    }
    let inv = 1.0 / a.iter().sum::<f32>();
    for i in 0..a.len() {
        a[i] *= inv;
    }
}

/// `pub fn $name(a, b)` running `$body` compiled for AVX-512 or AVX2 when the CPU has them.
/// (Direct calls of `#[inline(always)]` bodies: a generic `Fn` would not be inlined.)
macro_rules! multiversion {
    ($(#[$doc:meta])* $name:ident, $body:ident) => {
        $(#[$doc])*
        pub fn $name(a: &mut [f32], b: &[f32]) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn v4(a: &mut [f32], b: &[f32]) {
                    $body(a, b)
                }
                #[target_feature(enable = "avx2,fma")]
                fn v3(a: &mut [f32], b: &[f32]) {
                    $body(a, b)
                }
                match $crate::cpu::isa::isa() {
                    // SAFETY: `isa` never exceeds what the CPU has (AVX-512F).
                    $crate::cpu::isa::Isa::Avx512 => return unsafe { v4(a, b) },
                    // SAFETY: as above (AVX2 and FMA).
                    $crate::cpu::isa::Isa::Avx2 => return unsafe { v3(a, b) },
                    $crate::cpu::isa::Isa::Scalar => {}
                }
            }
            $body(a, b)
        }
    };
}

multiversion!(
    /// WaveNet's gate in place: `a ← tanh(a) · σ(b)` (`b` at least as long as `a`).
    tanh_sigmoid_gate,
    gate_body
);
multiversion!(
    /// `a ← tanh(a)` (`b` unused).
    tanh_in_place2,
    tanh_body
);

multiversion!(
    /// `a ← GELU(a)` (`b` unused).
    gelu_in_place2,
    gelu_body
);

multiversion!(
    /// `a ← softmax(a)` (`b` unused).
    softmax_in_place2,
    softmax_body
);

/// `a ← softmax(a)`, max-subtracted.
pub fn softmax_in_place(a: &mut [f32]) {
    softmax_in_place2(a, &[])
}

/// `a ← tanh(a)`.
pub fn tanh_in_place(a: &mut [f32]) {
    tanh_in_place2(a, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_to_libm() {
        let mut worst = [0f32; 3];
        for i in -200_000..=200_000 {
            let x = i as f32 * 1e-4 * (1.0 + (i as f32).abs() * 1e-5); // dense near 0, to ±60
            let rel = |a: f32, b: f32| ((a - b) / b.abs().max(1e-30)).abs();
            worst[0] = worst[0].max(rel(exp(x), x.exp()));
            worst[1] = worst[1].max(rel(tanh(x), x.tanh()));
            worst[2] = worst[2].max(rel(sigmoid(x), 1.0 / (1.0 + (-x).exp())));
        }
        assert!(worst.iter().all(|&e| e < 1e-6), "{worst:?}");
        let erf_worst = (-200_000..=200_000)
            .map(|i| i as f32 * 5e-5)
            .map(|x| (erf(x) - libm::erff(x)).abs())
            .fold(0f32, f32::max);
        assert!(erf_worst < 1e-6, "erf off by {erf_worst}");
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(-20.0), -1.0);
        assert_eq!(exp(-1000.0), (-87.3f32).exp());
        assert_eq!(tanh(1e3), 1.0);
        assert_eq!(tanh(-1e3), -1.0);
        let mut a = vec![0.3, -2.0, 5.0];
        tanh_sigmoid_gate(&mut a, &[0.1, 0.2, -3.0]);
        assert!((a[0] - 0.3f32.tanh() / (1.0 + (-0.1f32).exp())).abs() < 1e-7);
    }
}
