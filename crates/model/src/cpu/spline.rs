//! Unconstrained rational-quadratic spline with linear tails (Durkan et al., "Neural Spline
//! Flows"), as used by the VITS stochastic duration predictor's ConvFlows.
//!
//! Inside `[−B, B]` the map is a monotone rational-quadratic spline on `num_bins` bins whose
//! widths, heights and inner knot derivatives come from unconstrained parameters; outside it is
//! the identity. Scalar f32, in the same order of operations as the PyTorch code.

/// Bin-shape limits (VITS defaults: all 1e-3) and the searchsorted epsilon (1e-6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SplineLimits {
    pub min_bin_width: f32,
    pub min_bin_height: f32,
    pub min_derivative: f32,
    pub eps: f32,
}

impl Default for SplineLimits {
    fn default() -> Self {
        Self {
            min_bin_width: 1e-3,
            min_bin_height: 1e-3,
            min_derivative: 1e-3,
            eps: 1e-6,
        }
    }
}

/// Knots of one spline: `num_bins + 1` x-knots, y-knots and derivatives.
struct Knots {
    cumw: Vec<f32>,
    cumh: Vec<f32>,
    deriv: Vec<f32>,
}

fn softmax(v: &[f32]) -> Vec<f32> {
    let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = v.iter().map(|&x| (x - max).exp()).collect();
    let s: f32 = e.iter().sum();
    e.iter().map(|&x| x / s).collect()
}

fn softplus(x: f32) -> f32 {
    // PyTorch's threshold: linear above 20.
    if x > 20.0 { x } else { x.exp().ln_1p() }
}

/// Cumulative knot positions from unnormalised bin sizes, mapped onto `[lo, hi]`.
fn knots_1d(u: &[f32], min_size: f32, lo: f32, hi: f32) -> Vec<f32> {
    let n = u.len();
    let p = softmax(u);
    let mut cum = Vec::with_capacity(n + 1);
    cum.push(0.0f32);
    let mut acc = 0.0f32;
    for &pi in &p {
        acc += min_size + (1.0 - min_size * n as f32) * pi;
        cum.push(acc);
    }
    for c in cum.iter_mut() {
        *c = (hi - lo) * *c + lo;
    }
    cum[0] = lo;
    cum[n] = hi;
    cum
}

fn knots(uw: &[f32], uh: &[f32], ud: &[f32], bound: f32, lim: &SplineLimits) -> Knots {
    let n = uw.len();
    assert!(
        n >= 1 && uh.len() == n && ud.len() + 1 == n,
        "spline parameter lengths"
    );
    // Boundary derivatives are fixed so that softplus gives 1 − min_derivative (slope 1 at the
    // edges, matching the linear tails).
    let edge = ((1.0f64 - lim.min_derivative as f64).exp() - 1.0).ln() as f32;
    let deriv = std::iter::once(edge)
        .chain(ud.iter().copied())
        .chain(std::iter::once(edge))
        .map(|u| lim.min_derivative + softplus(u))
        .collect();
    Knots {
        cumw: knots_1d(uw, lim.min_bin_width, -bound, bound),
        cumh: knots_1d(uh, lim.min_bin_height, -bound, bound),
        deriv,
    }
}

/// Bin index as VITS' searchsorted: `#{locations ≥ …} − 1` with the last location raised by
/// eps, clamped into range (NaN inputs end up in bin 0 and stay NaN).
fn search(locs: &[f32], x: f32, eps: f32) -> usize {
    let n = locs.len();
    let count = locs
        .iter()
        .enumerate()
        .filter(|&(i, &l)| x >= if i == n - 1 { l + eps } else { l })
        .count();
    count.saturating_sub(1).min(n - 2)
}

/// Forward transform of `x` (unconstrained params: `uw`, `uh` of length `num_bins`, `ud` of
/// length `num_bins − 1`).
pub fn rq_spline_forward(
    x: f32,
    uw: &[f32],
    uh: &[f32],
    ud: &[f32],
    bound: f32,
    lim: &SplineLimits,
) -> f32 {
    if !(x >= -bound && x <= bound) {
        return x;
    }
    let k = knots(uw, uh, ud, bound, lim);
    let b = search(&k.cumw, x, lim.eps);
    let (cw, w) = (k.cumw[b], k.cumw[b + 1] - k.cumw[b]);
    let (ch, h) = (k.cumh[b], k.cumh[b + 1] - k.cumh[b]);
    let delta = h / w;
    let (d0, d1) = (k.deriv[b], k.deriv[b + 1]);
    let theta = (x - cw) / w;
    let tt = theta * (1.0 - theta);
    let num = h * (delta * theta * theta + d0 * tt);
    let den = delta + (d0 + d1 - 2.0 * delta) * tt;
    ch + num / den
}

/// Inverse transform of `y` (the direction VITS runs at inference).
pub fn rq_spline_inverse(
    y: f32,
    uw: &[f32],
    uh: &[f32],
    ud: &[f32],
    bound: f32,
    lim: &SplineLimits,
) -> f32 {
    if !(y >= -bound && y <= bound) {
        return y;
    }
    let k = knots(uw, uh, ud, bound, lim);
    let b = search(&k.cumh, y, lim.eps);
    let (cw, w) = (k.cumw[b], k.cumw[b + 1] - k.cumw[b]);
    let (ch, h) = (k.cumh[b], k.cumh[b + 1] - k.cumh[b]);
    let delta = h / w;
    let (d0, d1) = (k.deriv[b], k.deriv[b + 1]);
    let dy = y - ch;
    let s = d0 + d1 - 2.0 * delta;
    let a = dy * s + h * (delta - d0);
    let bb = h * d0 - dy * s;
    let c = -delta * dy;
    let disc = (bb * bb - 4.0 * a * c).max(0.0);
    let root = (2.0 * c) / (-bb - disc.sqrt());
    root * w + cw
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn params(rng: &mut ChaCha8Rng, bins: usize, scale: f32) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let mut v = |n: usize| {
            (0..n)
                .map(|_| rng.random_range(-1.0f32..1.0) * scale)
                .collect::<Vec<_>>()
        };
        (v(bins), v(bins), v(bins - 1))
    }

    #[test]
    fn inverse_undoes_forward() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let lim = SplineLimits::default();
        for trial in 0..200 {
            let bins = 1 + trial % 12;
            // Moderate parameters: every bin's slope stays well conditioned in x.
            let (uw, uh, ud) = params(&mut rng, bins, 1.0);
            for _ in 0..20 {
                let x = rng.random_range(-5.0f32..5.0);
                let y = rq_spline_forward(x, &uw, &uh, &ud, 5.0, &lim);
                assert!((-5.0..=5.0).contains(&y), "inside maps inside");
                let back = rq_spline_inverse(y, &uw, &uh, &ud, 5.0, &lim);
                assert!((back - x).abs() < 1e-4, "bins {bins}: x {x} → {y} → {back}");
            }
        }
    }

    #[test]
    fn forward_undoes_inverse_with_steep_bins() {
        // Large parameters give bins with slopes near 1e-3 or 1e3; compare in y, where the
        // round trip is well conditioned.
        let mut rng = ChaCha8Rng::seed_from_u64(14);
        let lim = SplineLimits::default();
        for trial in 0..200 {
            let bins = 1 + trial % 12;
            let (uw, uh, ud) = params(&mut rng, bins, 4.0);
            for _ in 0..20 {
                let y = rng.random_range(-5.0f32..5.0);
                let x = rq_spline_inverse(y, &uw, &uh, &ud, 5.0, &lim);
                assert!(
                    (-5.0 - 1e-4..=5.0 + 1e-4).contains(&x),
                    "inside maps inside: {x}"
                );
                let back = rq_spline_forward(x.clamp(-5.0, 5.0), &uw, &uh, &ud, 5.0, &lim);
                assert!((back - y).abs() < 1e-3, "bins {bins}: y {y} → {x} → {back}");
            }
        }
    }

    #[test]
    fn forward_is_monotone_and_fixes_the_bounds() {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        let lim = SplineLimits::default();
        let (uw, uh, ud) = params(&mut rng, 10, 2.0);
        let mut prev = f32::NEG_INFINITY;
        for i in 0..=1000 {
            let x = -5.0 + 10.0 * i as f32 / 1000.0;
            let y = rq_spline_forward(x, &uw, &uh, &ud, 5.0, &lim);
            assert!(y >= prev, "not monotone at {x}");
            prev = y;
        }
        assert!((rq_spline_forward(-5.0, &uw, &uh, &ud, 5.0, &lim) + 5.0).abs() < 1e-5);
        assert!((rq_spline_forward(5.0, &uw, &uh, &ud, 5.0, &lim) - 5.0).abs() < 1e-4);
    }

    #[test]
    fn tails_are_identity() {
        let mut rng = ChaCha8Rng::seed_from_u64(13);
        let lim = SplineLimits::default();
        let (uw, uh, ud) = params(&mut rng, 10, 3.0);
        for x in [-100.0f32, -5.0001, 5.0001, 7.5, 1e6] {
            assert_eq!(rq_spline_forward(x, &uw, &uh, &ud, 5.0, &lim), x);
            assert_eq!(rq_spline_inverse(x, &uw, &uh, &ud, 5.0, &lim), x);
        }
        assert!(rq_spline_inverse(f32::NAN, &uw, &uh, &ud, 5.0, &lim).is_nan());
    }

    #[test]
    fn zero_params_give_identity() {
        // Uniform bins, all derivatives 1 − 1e-3 + 1e-3 = 1: the spline is the identity.
        let lim = SplineLimits::default();
        let z = vec![0.0f32; 10];
        let d = vec![((1.0f64 - 1e-3).exp() - 1.0).ln() as f32; 9];
        for i in 0..=20 {
            let x = -5.0 + i as f32 * 0.5;
            assert!((rq_spline_forward(x, &z, &z, &d, 5.0, &lim) - x).abs() < 1e-5);
            assert!((rq_spline_inverse(x, &z, &z, &d, 5.0, &lim) - x).abs() < 1e-5);
        }
    }
}
