//! The time-scale stage itself: PCM through libsonic chunk by chunk, held to the length asked
//! for, with a map from input to output samples for the word timing.

use super::sonic;
use super::{clamp_speed, pitch_factor};

/// Input sonic is fed at a time, so that the position map has a point every 23 ms.
const FEED: usize = 512;

/// The time-scale stage: PCM in, PCM out, chunk by chunk, at a tempo and pitch that may
/// change between chunks, and where each input sample went. Between [`Tempo::finish`]es
/// (one per sentence) positions count from the sentence's first sample.
///
/// Bypassed exactly (the input is the output, no sonic) while the tempo and pitch are 1 and
/// no sonic stream holds audio. Sonic keeps back up to 31 ms of input at 22.05 kHz until the
/// next chunk or the sentence's end.
///
/// Length: sonic does not reach exactly the speed asked for (it skips or repeats whole pitch
/// periods, rounded down: 1–3 % too fast at 2×–4×), so after each `FEED` (512) samples the
/// stage compares the output so far (with what sonic holds, at the speed asked for) with the
/// input so far at the speed asked for, and asks sonic for up to `HOLD_MAX` (5 %) more or
/// less; [`Tempo::finish`] then cuts the sentence to the sample.
///
/// Positions: sonic does not say which input it has consumed. So the map is measured, not
/// computed: after every `FEED` samples written, a point (input consumed, output produced),
/// where the input consumed is what was written less what sonic keeps back at that moment
/// (`HELD`, its mean: the held input varies between one pitch-finding step less than
/// 2 × 339 samples and 2 × 339 samples). Positions between points are interpolated;
/// positions not yet consumed are projected at the asked-for speed (only to say "not yet").
pub struct Tempo {
    rate: u32,
    speed: f32,
    pitch: f32,
    stream: Option<sonic::Stream>,
    /// Samples in and out since the last finish.
    input: u64,
    output: u64,
    /// The output the input since the last finish should make, at the speeds asked for.
    want: f64,
    /// (input consumed, output produced), both non-decreasing; starts at (0, 0).
    points: Vec<(f64, f64)>,
    /// Sonic failed (out of memory): pass audio through unchanged from now on.
    broken: bool,
}

/// What sonic keeps back of the input, on average, in samples at 22.05 kHz (scaled by rate):
/// measured by [`tests::positions_land_on_the_right_output_samples`].
const HELD: f64 = 520.0;

/// The most the stage corrects sonic's speed by, either way (a fraction).
const HOLD_MAX: f64 = 0.05;

/// Seconds of output that damp the correction at a sentence's start, where the held input
/// is a large part of the figures.
const HOLD_DAMP_S: f64 = 0.25;

impl Tempo {
    pub fn new(rate: u32) -> Self {
        Self {
            rate,
            speed: 1.0,
            pitch: 1.0,
            stream: None,
            input: 0,
            output: 0,
            want: 0.0,
            points: vec![(0.0, 0.0)],
            broken: false,
        }
    }

    /// The tempo (> 1 faster; sonic's speed) and pitch (a frequency factor) from now on.
    pub fn set(&mut self, speed: f32, pitch: f32) {
        let ok = |x: f32| if x.is_finite() && x > 0.0 { x } else { 1.0 };
        let (speed, pitch) = (ok(speed), ok(pitch));
        self.speed = speed;
        self.pitch = pitch;
        if let Some(s) = self.stream.as_mut() {
            s.set(speed, pitch);
        }
    }

    /// The engine's `speed` (a multiple of normal speed) and `pitch` (semitones) for a
    /// sentence whose length scale made it `length_speed` times as fast as at 1×
    /// ([`length_speed_of`](super::length_speed_of)): sonic does the rest of the speed.
    pub fn aim(&mut self, speed: f32, pitch: f32, length_speed: f32) {
        self.set(clamp_speed(speed) / length_speed, pitch_factor(pitch));
    }

    /// True while samples pass through unchanged.
    pub fn bypassed(&self) -> bool {
        self.stream.is_none() && ((self.speed, self.pitch) == (1.0, 1.0) || self.broken)
    }

    /// Stretches `input` and appends what is ready to `out`.
    pub fn process(&mut self, input: &[f32], out: &mut Vec<f32>) {
        if self.bypassed() {
            out.extend_from_slice(input);
            self.input += input.len() as u64;
            self.output += input.len() as u64;
            self.want += input.len() as f64;
            return;
        }
        if self.stream.is_none() {
            match sonic::Stream::new(self.rate) {
                Some(mut s) => {
                    s.set(self.speed, self.pitch);
                    self.stream = Some(s);
                    // Everything so far went through unchanged.
                    self.points.push((self.input as f64, self.output as f64));
                }
                None => return self.fail(input, out),
            }
        }
        let held = HELD * self.rate as f64 / 22_050.0;
        let damp = HOLD_DAMP_S * self.rate as f64;
        for piece in input.chunks(FEED) {
            let before = out.len();
            let speed = self.speed as f64;
            // Ahead of or behind the length asked for: a little faster or slower.
            let made = self.output as f64 + held.min(self.input as f64) / speed;
            let hold = ((made + damp) / (self.want + damp)).clamp(1.0 - HOLD_MAX, 1.0 + HOLD_MAX);
            self.want += piece.len() as f64 / speed;
            let s = self.stream.as_mut().expect("created above");
            s.set((speed * hold) as f32, self.pitch);
            if !s.write(piece, out) {
                return self.fail(piece, out);
            }
            self.input += piece.len() as u64;
            self.output += (out.len() - before) as u64;
            let &(last_in, last_out) = self.points.last().expect("the map has a point");
            let consumed = (self.input as f64 - held).clamp(last_in, self.input as f64);
            let produced = self.output as f64;
            if produced > last_out {
                self.points.push((consumed, produced));
            }
        }
    }

    /// The end of a sentence: pushes out what sonic holds, to the length asked for (the
    /// input at the speeds asked for, to the sample, unless sonic ran ahead of it). Positions
    /// stay as they are until [`Tempo::restart`].
    ///
    /// Sonic's own flush loses what its pitch stage holds (2 % at 4× and −9 semitones), so
    /// the stage pushes silence through instead and cuts the output where it should end (in
    /// the sentence's closing pause).
    pub fn finish(&mut self, out: &mut Vec<f32>) {
        if let Some(mut s) = self.stream.take() {
            let target = self.want.round() as u64;
            let before = out.len();
            let silence = [0.0f32; FEED];
            // Sonic holds at most a few pitch periods, also at the slowest speed and pitch.
            for _ in 0..64 {
                if self.output + (out.len() - before) as u64 >= target {
                    break;
                }
                if !s.write(&silence, out) {
                    break;
                }
            }
            let mut rest = Vec::new();
            s.flush(&mut rest);
            let made = (out.len() - before) as u64;
            out.truncate(before + target.saturating_sub(self.output).min(made) as usize);
            self.output += (out.len() - before) as u64;
            self.points.push((self.input as f64, self.output as f64));
            if (self.speed, self.pitch) != (1.0, 1.0) {
                // Kept for the next sentence (a new one would allocate).
                self.stream = Some(s);
            }
        }
    }

    /// Drops everything held (a stop), and starts positions afresh.
    pub fn reset(&mut self) {
        self.stream = None;
        self.restart();
    }

    /// Positions count from 0 again (the start of a sentence, after [`Tempo::finish`]).
    pub fn restart(&mut self) {
        self.input = 0;
        self.output = 0;
        self.want = 0.0;
        self.points.clear();
        self.points.push((0.0, 0.0));
    }

    fn fail(&mut self, input: &[f32], out: &mut Vec<f32>) {
        tracing::warn!("sonic failed (out of memory?); speed and pitch are off");
        self.broken = true;
        self.stream = None;
        out.extend_from_slice(input);
        self.input += input.len() as u64;
        self.output += input.len() as u64;
        self.want += input.len() as f64;
        self.points.push((self.input as f64, self.output as f64));
    }

    /// The output sample (since the last finish) that input sample `pos` became: exact when
    /// bypassed, else interpolated between the measured points (projected at the current
    /// speed past the last one).
    pub fn output_at(&self, pos: u64) -> u64 {
        if self.stream.is_none() && self.points.len() == 1 {
            return pos;
        }
        let p = pos as f64;
        let k = self.points.partition_point(|&(i, _)| i <= p);
        let o = if k >= self.points.len() {
            let (i, o) = self.points[self.points.len() - 1];
            let speed = if self.stream.is_some() {
                self.speed as f64
            } else {
                1.0
            };
            o + (p - i) / speed
        } else {
            let (i0, o0) = self.points[k - 1];
            let (i1, o1) = self.points[k];
            o0 + (o1 - o0) * (p - i0) / (i1 - i0)
        };
        o.round().max(0.0) as u64
    }

    /// True once input sample `pos` has come out (it is consumed and its output written).
    pub fn has_output(&self, pos: u64) -> bool {
        self.points.last().is_some_and(|&(i, _)| pos as f64 <= i)
            || (self.stream.is_none() && pos < self.input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tempo::{Split, split};

    const RATE: u32 = 22_050;

    /// A voice-like test signal: a 120 Hz pulse train with harmonics, gated on and off.
    fn voice(len: usize, f0: f32) -> Vec<f32> {
        (0..len)
            .map(|i| {
                let t = i as f32 / RATE as f32;
                let on = ((t * 3.0) as usize) % 3 != 2;
                if !on {
                    return 0.0;
                }
                (1..8)
                    .map(|h| (2.0 * std::f32::consts::PI * f0 * h as f32 * t).sin() / h as f32)
                    .sum::<f32>()
                    * 0.2
            })
            .collect()
    }

    #[test]
    fn speed_one_is_exact() {
        assert_eq!(
            split(1.0),
            Split {
                length_factor: 1.0,
                length_speed: 1.0,
                stretch: 1.0
            }
        );
        assert_eq!(pitch_factor(0.0), 1.0);
        let x = voice(5000, 120.0);
        let mut t = Tempo::new(RATE);
        let mut out = Vec::new();
        t.process(&x, &mut out);
        t.finish(&mut out);
        assert_eq!(out, x);
        assert!(t.bypassed());
        assert_eq!(t.output_at(1234), 1234);
    }

    #[test]
    fn streamed_output_has_the_length_asked_for_and_positions_track_it() {
        let cases = [
            (2.0f32, 1.0f32),
            (3.3, 1.0),
            (6.0, 1.0),
            (0.7, 1.0),
            (0.5, 1.0),
            (1.0, 1.5),
        ];
        for (speed, pitch) in cases
            .into_iter()
            .chain([(4.0, 0.6), (0.5, 2.0), (6.0, 0.5)])
        {
            let x = voice(RATE as usize * 3, 110.0);
            let mut t = Tempo::new(RATE);
            t.set(speed, pitch);
            let mut out = Vec::new();
            let mut fed = 0;
            for chunk in x.chunks(4096) {
                t.process(chunk, &mut out);
                fed += chunk.len();
                // What came out never runs ahead of the input.
                assert!((out.len() as f64) <= fed as f64 / speed as f64 + 1.0);
            }
            t.finish(&mut out);
            let want = x.len() as f64 / speed as f64;
            // Sonic alone lands 1–3 % off; held to the length, to the sample.
            assert!(
                (out.len() as f64 - want).abs() <= 1.0,
                "{speed}/{pitch}: {} samples, want {want}",
                out.len()
            );
        }
    }

    /// Tone bursts after silence at known input positions, and where they start in the
    /// output against where the map says: (mean, max |error|) in output samples.
    fn onset_errors(speed: f32, pitch: f32, chunk: usize) -> (f64, f64) {
        onset_errors_with(pitch, chunk, |_| speed)
    }

    /// [`onset_errors`] with the speed of each chunk from `speed_of(chunk number)`.
    fn onset_errors_with(pitch: f32, chunk: usize, speed_of: impl Fn(usize) -> f32) -> (f64, f64) {
        let speed = speed_of(0);
        let burst = voice(RATE as usize, 130.0);
        let mut x = vec![0.0f32; RATE as usize * 6];
        let mut starts = Vec::new();
        let mut at = 3000;
        let mut k = 0;
        while at + 4000 < x.len() {
            let len = 2500 + (k * 977) % 3000;
            x[at..at + len].copy_from_slice(&burst[..len]);
            starts.push(at);
            at += len + 3000 + (k * 1311) % 4000;
            k += 1;
        }
        let mut t = Tempo::new(RATE);
        let mut out = Vec::new();
        let mut fastest = speed;
        for (k, c) in x.chunks(chunk).enumerate() {
            t.set(speed_of(k), pitch);
            fastest = fastest.max(speed_of(k));
            t.process(c, &mut out);
        }
        t.finish(&mut out);
        // Onsets in the output: the first loud sample after 10 ms of quiet.
        let quiet = (RATE as f64 * 0.010 / fastest as f64) as usize;
        let mut found = Vec::new();
        let mut run = quiet;
        for (i, v) in out.iter().enumerate() {
            if v.abs() > 0.01 {
                if run >= quiet {
                    found.push(i);
                }
                run = 0;
            } else {
                run += 1;
            }
        }
        assert_eq!(found.len(), starts.len(), "{speed}/{pitch}");
        let errs: Vec<f64> = starts
            .iter()
            .zip(&found)
            .map(|(&s, &f)| f as f64 - t.output_at(s as u64) as f64)
            .collect();
        let mean = errs.iter().sum::<f64>() / errs.len() as f64;
        let max = errs.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        (mean, max)
    }

    #[test]
    fn positions_land_on_the_right_output_samples() {
        let cases = [
            (1.5f32, 1.0f32),
            (2.0, 1.0),
            (3.0, 1.0),
            (4.0, 1.0),
            (6.0, 1.0),
        ];
        let pitched = [(2.0, 1.5), (3.0, 0.7), (1.0, 2.0)];
        for (speed, pitch) in cases.into_iter().chain(pitched) {
            for chunk in [4096, 16384] {
                let (mean, max) = onset_errors(speed, pitch, chunk);
                // Within 8 ms, and 3 ms on average (the onset detector itself moves by up to
                // a pitch period where sonic overlaps two of them).
                assert!(
                    max <= 176.0 && mean.abs() <= 66.0,
                    "speed {speed} pitch {pitch} chunk {chunk}: mean {mean:.1} max {max:.1} samples"
                );
            }
        }
    }

    #[test]
    fn a_speed_change_mid_sentence_keeps_positions_right() {
        let (mean, max) = onset_errors_with(1.0, 4096, |k| [1.0, 2.5, 4.0, 1.5][(k / 8) % 4]);
        assert!(
            max <= 176.0 && mean.abs() <= 66.0,
            "mean {mean:.1} max {max:.1}"
        );
        // Bypassed to begin with, then stretched: the first part maps one to one.
        let x = voice(RATE as usize, 110.0);
        let mut t = Tempo::new(RATE);
        let mut out = Vec::new();
        t.process(&x[..10_000], &mut out);
        t.set(2.0, 1.0);
        t.process(&x[10_000..], &mut out);
        assert_eq!(t.output_at(5_000), 5_000);
        assert!(t.output_at(20_000) < 16_000);
        t.finish(&mut out);
        t.restart();
        assert!(!t.bypassed(), "a new sentence keeps the tempo");
    }
}
