//! Seeded Gaussian noise for the two sampling points of VITS, and prior sampling.

use crate::model::tensor::Tensor;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// A reproducible N(0, 1) source.
pub struct NoiseSource {
    rng: ChaCha8Rng,
}

impl NoiseSource {
    pub fn new(seed: u64) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// A tensor of standard normal samples, filled in row-major order.
    pub fn normal(&mut self, shape: Vec<usize>) -> Tensor {
        let n = shape.iter().product();
        let data = (0..n)
            .map(|_| self.rng.sample::<f32, _>(StandardNormal))
            .collect();
        Tensor::new(shape, data)
    }

    /// Fills `out` with the next samples of the same stream `normal` draws from (a stream
    /// split into any pieces gives the same values).
    pub fn fill_normal(&mut self, out: &mut [f32]) {
        for v in out {
            *v = self.rng.sample::<f32, _>(StandardNormal);
        }
    }

    /// SDP input noise `[2, T]` × `noise_w`; zeros without drawing when `noise_w == 0`.
    pub fn sdp_noise(&mut self, t: usize, noise_w: f32) -> Tensor {
        if noise_w == 0.0 {
            return Tensor::zeros(vec![2, t]);
        }
        let mut z = self.normal(vec![2, t]);
        z.data.iter_mut().for_each(|v| *v *= noise_w);
        z
    }
}

/// `z_p = m + ε·exp(logs)·noise_scale` with ε ~ N(0, 1). With `noise_scale == 0` nothing is
/// drawn and `m` is returned exactly.
///
/// # Panics
/// If `m_p` and `logs_p` differ in shape.
pub fn sample_prior(
    m_p: &Tensor,
    logs_p: &Tensor,
    noise_scale: f32,
    rng: &mut NoiseSource,
) -> Tensor {
    assert_eq!(m_p.shape, logs_p.shape, "m_p and logs_p shapes differ");
    if noise_scale == 0.0 {
        return m_p.clone();
    }
    let eps = rng.normal(m_p.shape.clone());
    let data = m_p
        .data
        .iter()
        .zip(&logs_p.data)
        .zip(&eps.data)
        .map(|((&m, &l), &e)| m + e * l.exp() * noise_scale)
        .collect();
    Tensor::new(m_p.shape.clone(), data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_noise() {
        let a = NoiseSource::new(7).normal(vec![3, 5]);
        let b = NoiseSource::new(7).normal(vec![3, 5]);
        let c = NoiseSource::new(8).normal(vec![3, 5]);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn fill_normal_continues_the_stream() {
        let whole = NoiseSource::new(3).normal(vec![1, 10]).data;
        let mut src = NoiseSource::new(3);
        let mut parts = vec![0.0; 10];
        src.fill_normal(&mut parts[..4]);
        let mid = src.normal(vec![1, 3]).data;
        parts[4..7].copy_from_slice(&mid);
        src.fill_normal(&mut parts[7..]);
        assert_eq!(parts, whole);
    }

    #[test]
    fn normal_has_unit_moments() {
        let z = NoiseSource::new(1).normal(vec![100, 1000]);
        let n = z.len() as f64;
        let mean = z.data.iter().map(|&v| v as f64).sum::<f64>() / n;
        let var = z
            .data
            .iter()
            .map(|&v| (v as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        assert!(
            mean.abs() < 0.01 && (var - 1.0).abs() < 0.02,
            "mean {mean} var {var}"
        );
    }

    #[test]
    fn prior_sampling() {
        let m = Tensor::new(vec![1, 3], vec![1.0, -2.0, 0.5]);
        let logs = Tensor::new(vec![1, 3], vec![0.0, 1.0, -1.0]);
        assert_eq!(sample_prior(&m, &logs, 0.0, &mut NoiseSource::new(3)), m);
        let got = sample_prior(&m, &logs, 0.5, &mut NoiseSource::new(3));
        let eps = NoiseSource::new(3).normal(vec![1, 3]);
        for i in 0..3 {
            let want = m.data[i] + eps.data[i] * logs.data[i].exp() * 0.5;
            assert!((got.data[i] - want).abs() < 1e-6);
        }
        assert!(
            NoiseSource::new(4)
                .sdp_noise(5, 0.0)
                .data
                .iter()
                .all(|&v| v == 0.0)
        );
    }
}
