//! How a speed is shared between the model's length scale and sonic, and the units of the
//! settings (see the module above).

/// The length scale's factor and the time-stretch that together make one speed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Split {
    /// Multiplies the length scale.
    pub length_factor: f32,
    /// How much faster the length scale alone makes speech on average ([`LENGTH_CURVE`]);
    /// a sentence's own figure is [`length_speed_of`].
    pub length_speed: f32,
    /// The rest, done by sonic: `speed / length_speed` (1 when the length scale does it all).
    pub stretch: f32,
}

/// Speeds the engine accepts (multiples of normal speed).
pub const SPEED_MIN: f32 = 0.5;
pub const SPEED_MAX: f32 = 6.0;
/// Pitch shifts it accepts, in semitones.
pub const PITCH_MAX: f32 = 12.0;

/// The smallest length-scale factor used: faster than this, sonic does the rest (the
/// voice stays clean down to here; `docs/BENCHMARKS.md`, speed and intelligibility).
pub const LENGTH_FACTOR_MIN: f32 = 0.6;

/// Real speed (audio length at factor 1 over audio length at the factor) against the factor
/// of the length scale, for en_US-joe-medium with its own scales (noise_w 0.8), measured over
/// 30 everyday sentences (56 segments; pauses, which are phonemes too, included). It only
/// chooses the length scale for a speed: a sentence's own figure is [`length_speed_of`], and
/// sonic makes up the difference, so another voice's curve changes how the work is shared,
/// not the speed.
pub const LENGTH_CURVE: [(f32, f32); 41] = [
    (2.50, 0.469),
    (2.45, 0.477),
    (2.40, 0.486),
    (2.35, 0.494),
    (2.30, 0.505),
    (2.25, 0.514),
    (2.20, 0.524),
    (2.15, 0.536),
    (2.10, 0.547),
    (2.05, 0.560),
    (2.00, 0.571),
    (1.95, 0.585),
    (1.90, 0.598),
    (1.85, 0.612),
    (1.80, 0.628),
    (1.75, 0.643),
    (1.70, 0.659),
    (1.65, 0.675),
    (1.60, 0.693),
    (1.55, 0.713),
    (1.50, 0.733),
    (1.45, 0.756),
    (1.40, 0.779),
    (1.35, 0.807),
    (1.30, 0.835),
    (1.25, 0.867),
    (1.20, 0.899),
    (1.15, 0.930),
    (1.10, 0.956),
    (1.05, 0.982),
    (1.00, 1.000),
    (0.95, 1.019),
    (0.90, 1.047),
    (0.85, 1.088),
    (0.80, 1.139),
    (0.75, 1.209),
    (0.70, 1.290),
    (0.65, 1.377),
    (0.60, 1.462),
    (0.55, 1.523),
    (0.50, 1.576),
];

/// How much faster speech is at length-scale factor `f` (the curve, interpolated; clamped to
/// its ends).
pub fn length_speed(f: f32) -> f32 {
    let c = &LENGTH_CURVE;
    if f >= c[0].0 {
        return c[0].1;
    }
    for w in c.windows(2) {
        let ((f0, s0), (f1, s1)) = (w[0], w[1]);
        if f >= f1 {
            return s0 + (s1 - s0) * (f0 - f) / (f0 - f1);
        }
    }
    c[c.len() - 1].1
}

/// The length-scale factor whose real speed is `s` (the curve's inverse; clamped to it).
fn length_factor_for(s: f32) -> f32 {
    let c = &LENGTH_CURVE;
    if s <= c[0].1 {
        return c[0].0;
    }
    for w in c.windows(2) {
        let ((f0, s0), (f1, s1)) = (w[0], w[1]);
        if s <= s1 {
            return f0 + (f1 - f0) * (s - s0) / (s1 - s0);
        }
    }
    c[c.len() - 1].0
}

/// `speed` (clamped to [`SPEED_MIN`]–[`SPEED_MAX`]) as a length-scale factor and a stretch.
/// Exactly `{1, 1, 1}` at speed 1.
pub fn split(speed: f32) -> Split {
    let speed = clamp_speed(speed);
    if speed == 1.0 {
        return Split {
            length_factor: 1.0,
            length_speed: 1.0,
            stretch: 1.0,
        };
    }
    let top = length_speed(LENGTH_FACTOR_MIN);
    if speed <= top {
        let f = length_factor_for(speed);
        Split {
            length_factor: f,
            length_speed: speed,
            stretch: 1.0,
        }
    } else {
        Split {
            length_factor: LENGTH_FACTOR_MIN,
            length_speed: top,
            stretch: speed / top,
        }
    }
}

/// How much faster than at 1× the length-scale factor of `split` made one sentence: its
/// frames at 1× (its durations at the unscaled `length_scale`, from the model's `logw`) over
/// the frames it has. Exactly 1 at factor 1; the curve's average where the backend gives no
/// logw (the persistent CUDA kernel).
pub fn length_speed_of(
    split: &Split,
    info: &hark_model::backend::UtteranceInfo,
    length_scale: f32,
) -> f32 {
    if split.length_factor == 1.0 {
        return 1.0;
    }
    match &info.logw {
        Some(logw) if info.frames > 0 => {
            let unit: usize = hark_model::cpu::durations::durations(logw, length_scale)
                .iter()
                .sum();
            unit as f32 / info.frames as f32
        }
        _ => split.length_speed,
    }
}

/// A speed within the engine's range (1 for anything not a number).
pub fn clamp_speed(speed: f32) -> f32 {
    if speed.is_finite() {
        speed.clamp(SPEED_MIN, SPEED_MAX)
    } else {
        1.0
    }
}

/// Semitones as sonic's frequency factor (0 semitones is exactly 1).
pub fn pitch_factor(semitones: f32) -> f32 {
    if !semitones.is_finite() || semitones == 0.0 {
        return 1.0;
    }
    2f32.powf(semitones.clamp(-PITCH_MAX, PITCH_MAX) / 12.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_multiplies_to_the_speed() {
        for s in [0.5, 0.75, 1.2, 1.5, 2.0, 3.0, 4.5, 6.0] {
            let p = split(s);
            assert!((p.length_speed * p.stretch - s).abs() < 1e-4, "{s}: {p:?}");
            assert!(p.length_factor >= LENGTH_FACTOR_MIN && p.length_factor <= 2.5);
            // The curve's inverse is its inverse.
            assert!((length_speed(p.length_factor) - p.length_speed).abs() < 1e-3);
        }
        // Slower than 1× and up to the curve's top, the length scale alone.
        assert_eq!(split(0.5).stretch, 1.0);
        assert_eq!(split(1.3).stretch, 1.0);
        assert!(split(3.0).stretch > 1.9);
        assert_eq!(split(f32::NAN), split(1.0));
        assert_eq!(split(100.0), split(SPEED_MAX));
    }
}
