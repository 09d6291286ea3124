//! A simple pitch tracker for the pitch tests: normalised autocorrelation over 60 ms frames,
//! 10 ms apart. A shift is measured frame by frame against a reference with the same timing
//! (the median of the per-frame differences), so the tracker's own octave slips, which a
//! median of each track's fundamentals would feel, do not count.

/// Lowest and highest fundamental looked for (a low male voice an octave down, a high one an
/// octave up).
const F_MIN: f64 = 40.0;
const F_MAX: f64 = 500.0;
/// A frame is voiced when its best normalised autocorrelation reaches this.
const VOICED: f64 = 0.6;

/// The fundamental (Hz) of each frame of `x` (mono at `rate`), `None` where unvoiced or
/// quiet (below 0.3 of the whole signal's RMS).
pub fn f0_frames(x: &[f32], rate: u32) -> Vec<Option<f64>> {
    let rate = rate as f64;
    let (lag_min, lag_max) = ((rate / F_MAX) as usize, (rate / F_MIN) as usize);
    let win = (0.060 * rate) as usize;
    let hop = (0.010 * rate) as usize;
    let loud = rms(x) * 0.3;
    let mut out = Vec::new();
    let mut start = 0;
    while start + win + lag_max < x.len() {
        let a = &x[start..start + win];
        out.push(
            (rms(a) >= loud)
                .then(|| best_lag(x, start, win, lag_min, lag_max))
                .flatten()
                .map(|lag| rate / lag),
        );
        start += hop;
    }
    out
}

/// The lag (samples, interpolated) of the best normalised autocorrelation of the frame at
/// `start`, if it is voiced.
fn best_lag(x: &[f32], start: usize, win: usize, lag_min: usize, lag_max: usize) -> Option<f64> {
    let a = &x[start..start + win];
    let r: Vec<f64> = (lag_min - 1..=lag_max + 1)
        .map(|lag| correlation(a, &x[start + lag..start + lag + win]))
        .collect();
    let k = (1..r.len() - 1).max_by(|&i, &j| r[i].total_cmp(&r[j]))?;
    if r[k] < VOICED {
        return None;
    }
    let (l, c, h) = (r[k - 1], r[k], r[k + 1]);
    let d = 0.5 * (l - h) / (l - 2.0 * c + h);
    Some(
        (lag_min - 1 + k) as f64
            + if d.is_finite() {
                d.clamp(-0.5, 0.5)
            } else {
                0.0
            },
    )
}

/// The median fundamental of the voiced frames, or `None` if none is voiced.
pub fn median_f0(x: &[f32], rate: u32) -> Option<f64> {
    median(f0_frames(x, rate).into_iter().flatten().collect())
}

/// How many semitones `shifted` is above `reference` (the same speech, the same timing): the
/// median over the frames voiced in both.
pub fn shift_semitones(reference: &[f32], shifted: &[f32], rate: u32) -> Option<f64> {
    let (a, b) = (f0_frames(reference, rate), f0_frames(shifted, rate));
    median(
        a.iter()
            .zip(&b)
            .filter_map(|(x, y)| Some(semitones((*x)?, (*y)?)))
            .collect(),
    )
}

/// Semitones from `from` Hz to `to` Hz.
pub fn semitones(from: f64, to: f64) -> f64 {
    12.0 * (to / from).log2()
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

fn correlation(a: &[f32], b: &[f32]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (x as f64, y as f64);
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        0.0
    } else {
        ab / (aa * bb).sqrt()
    }
}

fn rms(x: &[f32]) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    (x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A harmonic tone whose fundamental glides from `f0` to 1.3 × `f0`.
    fn tone(f0: f64, secs: f64, rate: u32) -> Vec<f32> {
        let n = (secs * rate as f64) as usize;
        let mut phase = 0.0f64;
        (0..n)
            .map(|i| {
                let f = f0 * (1.0 + 0.3 * i as f64 / n as f64);
                phase += 2.0 * std::f64::consts::PI * f / rate as f64;
                (1..6)
                    .map(|h| (h as f64 * phase).sin() / h as f64)
                    .sum::<f64>() as f32
                    * 0.2
            })
            .collect()
    }

    #[test]
    fn finds_the_fundamental_and_the_shift_of_harmonic_tones() {
        let glide = 12.0 * 1.15f64.log2(); // the median frame's rise
        for f0 in [50.0, 110.0, 220.0, 300.0] {
            let got = median_f0(&tone(f0, 1.0, 22_050), 22_050).expect("voiced");
            assert!((semitones(f0, got) - glide).abs() < 0.2, "{f0} Hz: {got}");
        }
        let base = tone(100.0, 1.0, 22_050);
        for shift in [-12.0, -5.0, 3.0, 12.0] {
            let shifted = tone(100.0 * 2f64.powf(shift / 12.0), 1.0, 22_050);
            let got = shift_semitones(&base, &shifted, 22_050).expect("voiced");
            assert!((got - shift).abs() < 0.1, "{shift}: {got}");
        }
        assert!(median_f0(&vec![0.0; 22_050], 22_050).is_none());
    }
}
