//! Seeded Gaussian noise for the two sampling points of VITS, and prior sampling.

use hark_voice::tensor::Tensor;
use rand::{Rng, RngCore, SeedableRng};
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

    /// `n` samples, exactly those `normal(vec![1, n])` gives, leaving the generator where it
    /// would leave it, but drawn on several threads (the GPU backend's prior noise is on the
    /// onset's critical path). The sampler takes a variable number of words per sample
    /// (rejections), so pieces of the stream are drawn from guessed word positions, each
    /// noting where its samples start; piece j+1 is joined at the first position that both
    /// it and the chain arriving from piece j start a sample at, from where the two chains
    /// are the same draws. A piece that ends without a join is finished sequentially.
    ///
    /// On two threads it draws sequentially: the pieces ran at about a third of the
    /// sequential draw's speed per sample on the 2-core VM, and with the merge the parallel
    /// draw took 1.15–1.3 ms for 82 k samples (a 10 s sentence's prior) against 0.88–0.98 ms
    /// on one thread (Emerald Rapids VM, `sample_prior`'s sizes).
    pub fn normals_parallel(&mut self, n: usize) -> Vec<f32> {
        const MIN_PIECE: usize = 4096;
        const MIN_THREADS: usize = 3;
        let threads = rayon::current_num_threads();
        if threads < MIN_THREADS {
            return self.normal(vec![1, n]).data;
        }
        self.normals_in_pieces(n, threads.min(n / MIN_PIECE))
    }

    fn normals_in_pieces(&mut self, n: usize, parts: usize) -> Vec<f32> {
        use rayon::prelude::*;
        const OVERLAP: usize = 256;
        if parts <= 1 || n < parts {
            return self.normal(vec![1, n]).data;
        }
        let start = self.rng.get_word_pos();
        let seg = n / parts;
        // Two words per sample when nothing is rejected; the last piece also covers the few
        // percent the rejections push the stream back.
        let count = |j: usize| {
            if j + 1 == parts {
                n - j * seg + n / 32 + OVERLAP
            } else {
                seg + OVERLAP
            }
        };
        // (word position of each sample, then of the end, counted from `start`; samples).
        // Allocated here and only filled on the workers: a block a worker allocates and this
        // thread frees stays on the worker's pages until that worker allocates the same size
        // again, so each of the pool's threads kept its own high-water mark (the CUDA soak's
        // growth, RELIABILITY.md).
        let mut pieces: Vec<(Vec<u64>, Vec<f32>)> = (0..parts)
            .map(|j| {
                (
                    Vec::with_capacity(count(j) + 1),
                    Vec::with_capacity(count(j)),
                )
            })
            .collect();
        pieces
            .par_iter_mut()
            .enumerate()
            .for_each(|(j, (pos, val))| {
                let mut rng = self.rng.clone();
                let first = 2 * (j * seg) as u64;
                rng.set_word_pos(start + first as u128);
                let mut rng = WordCount { rng, words: first };
                for _ in 0..count(j) {
                    pos.push(rng.words);
                    val.push(rng.sample::<f32, _>(StandardNormal));
                }
                pos.push(rng.words);
                debug_assert_eq!(rng.rng.get_word_pos(), start + rng.words as u128);
            });
        // Each piece's samples up to where the chain meets the next piece's, copied whole.
        let mut out = Vec::with_capacity(n);
        let (mut j, mut i) = (0, 0);
        loop {
            let (pos, val) = &pieces[j];
            // This piece's samples that the output still wants.
            let end = val.len().min(i + n - out.len());
            // The first sample from which this chain is the next piece's, if it meets it.
            let join = pieces.get(j + 1).and_then(|(next_pos, _)| {
                let from = i.max(pos.partition_point(|&p| p < next_pos[0]));
                (from..end).find_map(|a| next_pos.binary_search(&pos[a]).ok().map(|b| (a, b)))
            });
            match join {
                Some((a, b)) => {
                    out.extend_from_slice(&val[i..a]);
                    (j, i) = (j + 1, b);
                }
                None => {
                    out.extend_from_slice(&val[i..end]);
                    self.rng.set_word_pos(start + pos[end] as u128);
                    // A piece that ended before its chain met the next one: finish sequentially.
                    let rest = n - out.len();
                    out.extend(self.normal(vec![1, rest]).data);
                    return out;
                }
            }
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

/// A generator that counts the 32-bit words drawn from it, as ChaCha's word position counts
/// them (a `u64` draws two, bytes a word per four or part of four): [`NoiseSource::normals_in_pieces`]
/// notes where each sample starts, and `get_word_pos` for every sample made the parallel draw
/// slower than the sequential one (82 k samples: 1.7 ms on two threads, 0.6 ms on one, Emerald
/// Rapids VM), as ChaCha reads its block counter through a run-time dispatched call.
struct WordCount<R> {
    rng: R,
    words: u64,
}

impl<R: RngCore> RngCore for WordCount<R> {
    fn next_u32(&mut self) -> u32 {
        self.words += 1;
        self.rng.next_u32()
    }

    fn next_u64(&mut self) -> u64 {
        self.words += 2;
        self.rng.next_u64()
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        self.words += dst.len().div_ceil(4) as u64;
        self.rng.fill_bytes(dst)
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
    // The same draws as `rng.normal(shape)`, on every core: ~170 k of them for a 10 s
    // sentence took 2–3 ms of one thread.
    let mut data = rng.normals_parallel(m_p.len());
    let (m, l) = (&m_p.data[..], &logs_p.data[..]);
    use rayon::prelude::*;
    const PART: usize = 8192;
    data.par_chunks_mut(PART).enumerate().for_each(|(i, e)| {
        let at = i * PART;
        let (m, l) = (&m[at..at + e.len()], &l[at..at + e.len()]);
        for j in 0..e.len() {
            e[j] = m[j] + e[j] * crate::cpu::vmath::exp(l[j]) * noise_scale;
        }
    });
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
    fn parallel_normals_equal_sequential() {
        for (seed, prefix, n) in [
            (1u64, 0usize, 0usize),
            (2, 3, 1),
            (3, 0, 5000),
            (4, 7, 8193),
            (5, 1, 100_000),
            (6, 384, 333_333),
        ] {
            let mut a = NoiseSource::new(seed);
            let mut b = NoiseSource::new(seed);
            a.normal(vec![1, prefix]);
            b.normal(vec![1, prefix]);
            let want = a.normal(vec![1, n]).data;
            let got = b.normals_parallel(n);
            assert_eq!(got, want, "seed {seed}, n {n}");
            for parts in [2, 5, 16] {
                let mut c = NoiseSource::new(seed);
                c.normal(vec![1, prefix]);
                assert_eq!(
                    c.normals_in_pieces(n, parts),
                    want,
                    "seed {seed}, n {n}, {parts}"
                );
            }
            // The generator is left where the sequential draw leaves it.
            assert_eq!(a.normal(vec![1, 9]), b.normal(vec![1, 9]), "seed {seed}");
        }
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
