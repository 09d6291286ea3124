//! Token durations from log-durations, and the expansion of token-rate tensors to frames.

use hark_voice::tensor::Tensor;

/// Frames per token: `ceil(exp(logw) · length_scale)` in f32, as the ONNX graph computes it.
/// Non-finite or non-positive results give 0 frames.
pub fn durations(logw: &[f32], length_scale: f32) -> Vec<usize> {
    logw.iter()
        .map(|&l| {
            let w = (l.exp() * length_scale).ceil();
            if w.is_finite() && w > 0.0 {
                w as usize
            } else {
                0
            }
        })
        .collect()
}

/// Repeats column `t` of `x [C, T]` `durations[t]` times → `[C, Σ durations]` (a gather; the
/// dense alignment matrix of VITS is never built).
///
/// # Panics
/// If `durations.len()` differs from the number of columns of `x`.
pub fn expand_frames(x: &Tensor, durations: &[usize]) -> Tensor {
    let (c, t) = (x.dim(0), x.dim(1));
    assert_eq!(durations.len(), t, "one duration per token");
    let frames: usize = durations.iter().sum();
    let src: Vec<usize> = durations
        .iter()
        .enumerate()
        .flat_map(|(i, &n)| std::iter::repeat_n(i, n))
        .collect();
    let mut out = Tensor::zeros(vec![c, frames]);
    for ch in 0..c {
        let xr = x.row(ch);
        for (o, &s) in out.row_mut(ch).iter_mut().zip(&src) {
            *o = xr[s];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_ceil_the_scaled_exp() {
        let logw = [0.0f32, 1.0, -1.0, 2.5f32.ln(), -200.0];
        assert_eq!(durations(&logw, 1.0), vec![1, 3, 1, 3, 0]);
        assert_eq!(durations(&logw, 2.0), vec![2, 6, 1, 5, 0]);
        assert_eq!(durations(&[f32::NAN, f32::INFINITY], 1.0), vec![0, 0]);
    }

    #[test]
    fn expand_matches_dense_alignment() {
        let x = Tensor::new(vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let dur = [2usize, 0, 3];
        let got = expand_frames(&x, &dur);
        // Dense path matrix [T, F] from cumulative sums, as VITS' generate_path, then x · path.
        let f: usize = dur.iter().sum();
        let mut path = vec![0.0f32; 3 * f];
        let mut start = 0;
        for (ti, &n) in dur.iter().enumerate() {
            for fi in start..start + n {
                path[ti * f + fi] = 1.0;
            }
            start += n;
        }
        let want = crate::cpu::ops::matmul(&x.data, &path, 2, 3, f);
        assert_eq!(got.shape, vec![2, f]);
        assert_eq!(got.data, want);
    }
}
