//! Streaming resampling of the engine's mono audio to the device rate (rubato), with the
//! bookkeeping that maps a source sample to the device frame where it will be heard.

use rubato::{FftFixedIn, Resampler};

/// Input frames per resampler call: ~23 ms at 22.05 kHz. Engine steps are multiples of a
/// 256-sample hop, so even steps leave nothing waiting.
const CHUNK: usize = 512;

pub struct StreamResampler {
    inner: Option<FftFixedIn<f32>>,
    pending: Vec<f32>,
    ratio: f64,
    /// Input taken and output made since the last reset.
    run_in: u64,
    run_out: u64,
    /// Output frames still to drop at the start of this run: the resampler's own delay, so
    /// that output frame 0 is input sample 0 and playback starts without added latency.
    skip: usize,
}

impl StreamResampler {
    pub fn new(from: u32, to: u32) -> Result<Self, String> {
        let inner = if from == to {
            None
        } else {
            Some(
                FftFixedIn::<f32>::new(from as usize, to as usize, CHUNK, 2, 1)
                    .map_err(|e| e.to_string())?,
            )
        };
        let skip = inner.as_ref().map_or(0, |r| r.output_delay());
        Ok(Self {
            inner,
            pending: Vec::with_capacity(CHUNK * 2),
            ratio: to as f64 / from as f64,
            run_in: 0,
            run_out: 0,
            skip,
        })
    }

    /// Output frames per input frame.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// The filter delay that is dropped at the start of each run (device frames): what the
    /// output would otherwise lag behind the input.
    pub fn compensated_delay(&self) -> usize {
        self.inner.as_ref().map_or(0, |r| r.output_delay())
    }

    /// Source samples held back until a whole chunk is available.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Resamples what full chunks of `input` allow; the rest waits for more input or `drain`.
    pub fn process(&mut self, input: &[f32], out: &mut Vec<f32>) -> Result<(), String> {
        let Some(rs) = self.inner.as_mut() else {
            out.extend_from_slice(input);
            return Ok(());
        };
        self.pending.extend_from_slice(input);
        self.run_in += input.len() as u64;
        let mut at = 0;
        while self.pending.len() - at >= CHUNK {
            let res = rs
                .process(&[&self.pending[at..at + CHUNK]], None)
                .map_err(|e| e.to_string())?;
            self.run_out += res[0].len() as u64;
            let drop = self.skip.min(res[0].len());
            self.skip -= drop;
            out.extend_from_slice(&res[0][drop..]);
            at += CHUNK;
        }
        self.pending.drain(..at);
        Ok(())
    }

    /// Pushes everything out (padding with silence, delay included) and starts afresh.
    pub fn drain(&mut self, out: &mut Vec<f32>) -> Result<(), String> {
        let Some(rs) = self.inner.as_mut() else {
            return Ok(());
        };
        // Pad the held-back samples to whole chunks of silence until the delayed output of
        // every real sample is out.
        let needed = self.run_in as f64 * self.ratio + rs.output_delay() as f64;
        let mut flushed = self.run_out as f64;
        while flushed < needed {
            self.pending.resize(CHUNK, 0.0);
            let res = rs
                .process(&[&self.pending[..]], None)
                .map_err(|e| e.to_string())?;
            flushed += res[0].len() as f64;
            let drop = self.skip.min(res[0].len());
            self.skip -= drop;
            out.extend_from_slice(&res[0][drop..]);
            self.pending.clear();
        }
        self.reset();
        Ok(())
    }

    /// Drops what is waiting and starts afresh (after a stop).
    pub fn reset(&mut self) {
        self.pending.clear();
        self.run_in = 0;
        self.run_out = 0;
        if let Some(rs) = self.inner.as_mut() {
            rs.reset();
        }
        self.skip = self.compensated_delay();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_click_lands_where_its_input_was_with_the_delay_removed() {
        let mut rs = StreamResampler::new(22_050, 48_000).expect("resampler");
        // A click at source sample 700, fed in uneven pieces.
        let mut x = vec![0.0f32; 3000];
        x[700] = 1.0;
        let mut out = Vec::new();
        for piece in x.chunks(333) {
            rs.process(piece, &mut out).expect("process");
        }
        rs.drain(&mut out).expect("drain");
        assert!(
            rs.compensated_delay() > 0,
            "nothing to compensate: a vacuous test"
        );
        assert!(out.len() as f64 >= 3000.0 * rs.ratio());
        let peak = out
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
            .map(|(i, _)| i)
            .expect("peak");
        let expected = 700.0 * rs.ratio();
        assert!(
            (peak as f64 - expected).abs() <= 2.0,
            "peak at {peak}, expected {expected}"
        );
        // A second run after the drain lands the same way.
        let mut again = Vec::new();
        rs.process(&x, &mut again).expect("process");
        rs.drain(&mut again).expect("drain");
        let peak2 = again
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
            .map(|(i, _)| i)
            .expect("peak");
        assert_eq!(peak2, peak);
    }
}
