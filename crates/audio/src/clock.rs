//! A stand-in for the sound card on machines without one (benchmarks on the GPU host): a
//! timer thread calls the same audio callback every device period, as cpal would, and throws
//! the samples away. Everything before the callback (resampler, ring, markers) is the real
//! streaming path, so onset and stop are measured where they would be on a device.

use super::callback::{Callback, boost_current_thread};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The device the clock pretends to be: the common 48 kHz stereo.
pub const CLOCK_RATE: u32 = 48_000;
pub const CLOCK_CHANNELS: usize = 2;

pub(super) struct ClockDriver {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ClockDriver {
    /// Calls `cb` with `period_frames` frames every period, on an absolute schedule (a late
    /// wake-up does not shift the ones after it, like a sound card's clock). `speed` > 1
    /// plays faster than real time (the period is `speed` times shorter), for soak runs.
    pub fn start(mut cb: Callback, period_frames: u32, speed: f64) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let period = Duration::from_secs_f64(period_frames as f64 / CLOCK_RATE as f64 / speed);
        let thread = std::thread::Builder::new()
            .name("hark-audio-clock".into())
            .spawn(move || {
                boost_current_thread();
                let mut buf = vec![0.0f32; period_frames as usize * CLOCK_CHANNELS];
                let mut next = Instant::now();
                while !flag.load(Ordering::Relaxed) {
                    cb.fill(&mut buf);
                    next += period;
                    let now = Instant::now();
                    if next > now {
                        std::thread::sleep(next - now);
                    } else if now - next > period * 4 {
                        // Far behind (the machine stalled): resynchronise instead of bursting.
                        next = now;
                    }
                }
            })?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for ClockDriver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
