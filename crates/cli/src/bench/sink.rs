//! What the sound server plays, recorded from a sink's monitor with `parec` (PulseAudio's,
//! or PipeWire's pipewire-pulse), each sample placed on the monotonic clock: where both
//! speech-dispatcher modules' sound ends up, measured the same way.
//!
//! parec hands the samples over in pieces. A piece arrives once its last sample is in, or
//! later (a busy machine), never sooner, and the sink produces samples at a steady rate
//! while it runs; so sample k was at the latest `arrival_j − (total_j − k) / RATE` for any
//! later piece j, and the smallest of those bounds is its time. Only later pieces count: a
//! sink that pauses while idle would make earlier pieces place k too soon.

use anyhow::Context;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const RATE: u32 = 48_000;
/// Above this peak (−34 dBFS) a millisecond counts as sound.
pub const LOUD: f32 = 0.02;
const PIECE_MS: u32 = 10;

type Pieces = Arc<Mutex<Vec<(Instant, Vec<i16>)>>>;

pub struct SinkRecorder {
    child: Child,
    pieces: Pieces,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// A millisecond of the recording: when it was at the sink, and its peak.
#[derive(Clone, Copy, Debug)]
pub struct Ms {
    pub at: Instant,
    pub peak: f32,
}

impl SinkRecorder {
    /// Records `monitor` (`@DEFAULT_MONITOR@`: the default sink's).
    pub fn start(monitor: &str) -> anyhow::Result<Self> {
        let mut child = Command::new("parec")
            .arg(format!("--device={monitor}"))
            .args([
                "--rate",
                &RATE.to_string(),
                "--channels=1",
                "--format=s16le",
            ])
            .args(["--latency-msec", &PIECE_MS.to_string(), "--raw"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot run parec (Debian: pulseaudio-utils) to record the sink")?;
        let mut out = child.stdout.take().context("parec's output")?;
        let pieces: Pieces = Arc::default();
        let sink = Arc::clone(&pieces);
        let reader = std::thread::Builder::new()
            .name("hark-bench-parec".into())
            .spawn(move || {
                let mut buf = vec![0u8; (RATE * PIECE_MS / 1000 * 2) as usize];
                loop {
                    let n = match out.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n & !1,
                    };
                    let at = Instant::now();
                    let s = buf[..n]
                        .chunks_exact(2)
                        .map(|b| i16::from_le_bytes([b[0], b[1]]))
                        .collect();
                    sink.lock().unwrap_or_else(|e| e.into_inner()).push((at, s));
                }
            })?;
        let rec = Self {
            child,
            pieces,
            reader: Some(reader),
        };
        // parec's first pieces: the stream is up.
        let deadline = Instant::now() + Duration::from_secs(5);
        while rec.pieces().is_empty() {
            anyhow::ensure!(
                Instant::now() < deadline,
                "parec records nothing from {monitor} (is a PulseAudio or PipeWire server running?)"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(rec)
    }

    fn pieces(&self) -> std::sync::MutexGuard<'_, Vec<(Instant, Vec<i16>)>> {
        self.pieces.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every millisecond recorded from about `from` on, on the monotonic clock (see the
    /// module's notes; a sample's time needs only the pieces after it).
    pub fn millis(&self, from: Instant) -> Vec<Ms> {
        let all = self.pieces();
        let early = from.checked_sub(Duration::from_secs(1)).unwrap_or(from);
        let first = all.partition_point(|p| p.0 < early);
        place(&all[first..])
    }

    /// True while the last `ms` recorded were all sound.
    pub fn sounding(&self, ms: usize) -> bool {
        let pieces = self.pieces();
        let per_ms = (RATE / 1000) as usize;
        let mut left = ms * per_ms;
        let mut tail: Vec<i16> = Vec::with_capacity(left);
        for (_, s) in pieces.iter().rev() {
            let take = left.min(s.len());
            tail.extend(s[s.len() - take..].iter().rev());
            left -= take;
            if left == 0 {
                break;
            }
        }
        let loud = (LOUD * 32768.0) as u16;
        left == 0
            && tail
                .chunks(per_ms)
                .all(|m| m.iter().any(|x| x.unsigned_abs() > loud))
    }
}

impl Drop for SinkRecorder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

/// Each millisecond of `pieces` (arrival, samples) on the monotonic clock: a piece arrives
/// once its last sample is in, or later, so the smallest bound that it and the pieces after
/// it give is each sample's time (the module's notes).
fn place(pieces: &[(Instant, Vec<i16>)]) -> Vec<Ms> {
    let Some(base) = pieces.first().map(|p| p.0) else {
        return Vec::new();
    };
    let rate = RATE as f64;
    // Per piece, the latest sample 0 of the recording can have been (s after `base`),
    // then the smallest over it and the pieces after it.
    let mut total = 0usize;
    let mut bounds: Vec<f64> = pieces
        .iter()
        .map(|(at, s)| {
            total += s.len();
            at.duration_since(base).as_secs_f64() - total as f64 / rate
        })
        .collect();
    for i in (0..bounds.len().saturating_sub(1)).rev() {
        bounds[i] = bounds[i].min(bounds[i + 1]);
    }
    let at = |secs: f64| {
        if secs >= 0.0 {
            base + Duration::from_secs_f64(secs)
        } else {
            base.checked_sub(Duration::from_secs_f64(-secs))
                .unwrap_or(base)
        }
    };
    let per_ms = (RATE / 1000) as usize;
    let mut out = Vec::with_capacity(total / per_ms + 1);
    let mut k = 0usize;
    for ((_, s), bound) in pieces.iter().zip(bounds) {
        for (j, ms) in s.chunks(per_ms).enumerate() {
            let peak = ms.iter().map(|x| x.unsigned_abs()).max().unwrap_or(0);
            out.push(Ms {
                at: at(bound + (k + j * per_ms) as f64 / rate),
                peak: peak as f32 / 32768.0,
            });
        }
        k += s.len();
    }
    out
}

/// The first sound at or after `t`.
pub fn first_sound(ms: &[Ms], t: Instant) -> Option<Instant> {
    ms.iter().find(|m| m.at >= t && m.peak > LOUD).map(|m| m.at)
}

/// The end of the last sound in `from..to`.
pub fn last_sound(ms: &[Ms], from: Instant, to: Instant) -> Option<Instant> {
    ms.iter()
        .filter(|m| m.at >= from && m.at < to && m.peak > LOUD)
        .map(|m| m.at + Duration::from_millis(1))
        .next_back()
}

/// The longest silence between the first and the last sound in `from..to`.
pub fn longest_silence(ms: &[Ms], from: Instant, to: Instant) -> Option<Duration> {
    let loud: Vec<Instant> = ms
        .iter()
        .filter(|m| m.at >= from && m.at < to && m.peak > LOUD)
        .map(|m| m.at)
        .collect();
    loud.windows(2)
        .map(|w| w[1].saturating_duration_since(w[0] + Duration::from_millis(1)))
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_pieces_and_a_paused_sink_do_not_move_samples() {
        let t0 = Instant::now();
        let piece = |ms: u64, loud: bool| {
            let v: i16 = if loud { 10_000 } else { 0 };
            (t0 + Duration::from_millis(ms), vec![v; 480])
        };
        // Pieces of 10 ms: on time at 10, 20; the next two late (together at 45), the next
        // on time again at 50; then the sink paused for 100 ms (no pieces) and went on at 160,
        // 170. The loud piece is the fourth, its samples from 30 to 40 ms.
        let pieces = vec![
            piece(10, false),
            piece(20, false),
            piece(45, false),
            piece(45, true),
            piece(50, false),
            piece(160, false),
            piece(170, false),
        ];
        let ms = place(&pieces);
        assert_eq!(ms.len(), 70);
        // The on-time piece after the late ones puts them back where they were.
        let first = first_sound(&ms, t0).unwrap();
        assert_eq!(first.duration_since(t0), Duration::from_millis(30));
        // After the pause the samples are placed by their own arrival, not 100 ms too soon.
        assert_eq!(ms[50].at.duration_since(t0), Duration::from_millis(150));
        let end = last_sound(&ms, t0, t0 + Duration::from_secs(1)).unwrap();
        assert_eq!(end.duration_since(t0), Duration::from_millis(40));
    }
}
