//! Token durations from log-durations, and the expansion of token-rate tensors to frames.

use hark_voice::tensor::Tensor;

/// The most frames one token lasts: 2.3 s at 22.05 kHz with a 256-sample hop, several times
/// the longest phoneme or pause of ordinary speech even at half speed. The durations are
/// `exp` of a prediction, so a wild log-duration would otherwise ask for billions of frames.
pub const MAX_TOKEN_FRAMES: usize = 200;

/// The most frames one sentence lasts (95 s at 22.05 kHz, hop 256). With at most
/// `2 · MAX_SENTENCE_PHONEMES + 3` ids (hark-text) ordinary speech stays far below it; a
/// sentence that would last longer (a very slow `length_scale`, wild durations) is spoken
/// faster: every duration is scaled down by the same factor, so no phoneme is lost.
pub const MAX_SENTENCE_FRAMES: usize = 8192;

/// Frames per token: `ceil(exp(logw) · length_scale)` in f32, as the ONNX graph computes it.
/// Non-finite or non-positive results give 0 frames. Bounded by [`MAX_TOKEN_FRAMES`] per
/// token and [`MAX_SENTENCE_FRAMES`] in all.
pub fn durations(logw: &[f32], length_scale: f32) -> Vec<usize> {
    let mut d: Vec<usize> = logw
        .iter()
        .map(|&l| {
            let w = (l.exp() * length_scale).ceil();
            if w.is_finite() && w > 0.0 {
                w.min(MAX_TOKEN_FRAMES as f32) as usize
            } else {
                0
            }
        })
        .collect();
    let total: usize = d.iter().sum();
    if total > MAX_SENTENCE_FRAMES {
        tracing::warn!(
            frames = total,
            "a sentence would last more than {MAX_SENTENCE_FRAMES} frames; spoken faster"
        );
        d.iter_mut()
            .for_each(|x| *x = *x * MAX_SENTENCE_FRAMES / total);
    }
    d
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
    fn durations_are_bounded_per_token_and_per_sentence() {
        // exp(40) frames would be 2.4e17: capped.
        assert_eq!(durations(&[40.0, 1.0], 1.0), vec![MAX_TOKEN_FRAMES, 3]);
        assert_eq!(durations(&[1.0], 1e9), vec![MAX_TOKEN_FRAMES]);
        // A sentence too long in all is scaled down evenly.
        let logw = vec![(100f32).ln(); 1000]; // 100 frames each: 100,000 in all
        let d = durations(&logw, 1.0);
        assert!(d.iter().sum::<usize>() <= MAX_SENTENCE_FRAMES);
        assert!(d.iter().all(|&x| x == d[0] && x > 0));
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
