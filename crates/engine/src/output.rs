//! What the engine needs from an audio output, and the state it shares with the output's
//! callback. The engine defines this and the audio crate (above it in the data flow)
//! implements it for the sound card and a simulated device, so the engine never depends on
//! cpal. The engine opens its output on its own thread through an [`OpenSink`] it is given.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    #[error("no audio output device found (use --out FILE.wav to write a file instead)")]
    NoDevice,
    #[error(
        "the audio device could not be opened: {0} (use --out FILE.wav to write a file instead)"
    )]
    Open(String),
    #[error("the audio device stopped: {0}")]
    Stream(String),
    /// Opened, but it never asked for audio (e.g. PipeWire with no output left).
    #[error("the audio device is not playing: it was opened but never asked for audio")]
    NotPlaying,
    #[error("audio resampling failed: {0}")]
    Resample(String),
}

/// The bit of a marker's tag that makes it an SSML mark (where `pause_at_mark` stops).
pub const NAMED_MARK: u64 = 1 << 63;

/// Called (on a helper thread) with a marker's tag and the time its sample reached the callback.
pub type MarkFn = Arc<dyn Fn(u64, Instant) + Send + Sync>;

/// What the engine needs from an output: the device, or nothing (headless).
pub trait AudioSink {
    /// Queues mono samples at the source rate.
    fn write(&mut self, samples: &[f32]) -> Result<(), AudioError>;
    /// Source samples written so far (the position markers refer to).
    fn written(&self) -> u64;
    /// Calls the mark function with `tag` when source sample `pos` is handed to the device.
    fn mark(&mut self, pos: u64, tag: u64);
    /// Audio queued but not yet played, in ms.
    fn buffered_ms(&self) -> f64;
    /// No more audio for now: push out what the resampler holds back.
    fn drain(&mut self) -> Result<(), AudioError>;
    /// Drops everything queued, fading out what is playing.
    fn flush(&mut self);
    fn set_paused(&mut self, paused: bool);
    fn set_volume(&mut self, volume: f32);
    fn set_expecting(&mut self, more: bool);
    fn underruns(&self) -> u64;
    /// An error if the device has failed or stalled.
    fn health(&self) -> Result<(), AudioError>;
    /// The device keeps playing its buffer dry before it is refilled (a sound server that
    /// runs in longer cycles than the buffer): a larger one would stop the gaps.
    fn buffer_too_small(&self) -> bool {
        false
    }
    /// A way to play clips at once from any thread, past the engine thread (the device
    /// outputs have one; without it clips go through the engine thread).
    fn cue_port(&self) -> Option<Arc<dyn CuePort>> {
        None
    }
}

/// Pre-rendered mono audio at the voice's rate (a key's or a letter's sound), for
/// [`crate::Engine::play`]. Cloning shares the samples; each clip made by `new` has its own id,
/// so an output can keep its resampled copy.
#[derive(Clone, Debug)]
pub struct Clip {
    pub id: u64,
    pub samples: Arc<[f32]>,
}

impl Clip {
    pub fn new(samples: Vec<f32>) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            samples: samples.into(),
        }
    }

    pub fn duration(&self, rate: u32) -> Duration {
        Duration::from_secs_f64(self.samples.len() as f64 / rate.max(1) as f64)
    }
}

/// Plays clips straight into the audio callback, ahead of the engine's ring: the callback
/// fades out what plays for stop number `stop`, then hands out the clip, reporting
/// `start_tag` with its first sample and `end_tag` with its last through the mark function.
/// Any later stop silences it like the rest.
pub trait CuePort: Send + Sync {
    /// Resamples `clip` for the device ahead of time (so `play` costs nothing more).
    fn prepare(&self, clip: &Clip);
    fn play(&self, stop: u64, clip: &Clip, start_tag: u64, end_tag: u64) -> Result<(), AudioError>;
}

/// No device: markers fire as soon as their sample is written, nothing is ever buffered.
pub struct NullSink {
    written: u64,
    on_mark: MarkFn,
    marks: std::collections::VecDeque<(u64, u64)>,
}

impl NullSink {
    pub fn new(on_mark: MarkFn) -> Self {
        Self {
            written: 0,
            on_mark,
            marks: Default::default(),
        }
    }

    fn fire(&mut self) {
        while let Some(&(pos, tag)) = self.marks.front() {
            if pos >= self.written {
                break;
            }
            self.marks.pop_front();
            (self.on_mark)(tag, Instant::now());
        }
    }
}

impl AudioSink for NullSink {
    fn write(&mut self, samples: &[f32]) -> Result<(), AudioError> {
        self.written += samples.len() as u64;
        self.fire();
        Ok(())
    }
    fn written(&self) -> u64 {
        self.written
    }
    fn mark(&mut self, pos: u64, tag: u64) {
        self.marks.push_back((pos, tag));
        self.fire();
    }
    fn buffered_ms(&self) -> f64 {
        0.0
    }
    fn drain(&mut self) -> Result<(), AudioError> {
        Ok(())
    }
    fn flush(&mut self) {
        self.marks.clear();
    }
    fn set_paused(&mut self, _: bool) {}
    fn set_volume(&mut self, _: f32) {}
    fn set_expecting(&mut self, _: bool) {}
    fn underruns(&self) -> u64 {
        0
    }
    fn health(&self) -> Result<(), AudioError> {
        Ok(())
    }
}

/// Controls the callback obeys directly, so stop and pause take effect within one device
/// period even while the engine thread is busy synthesising; and what the callback reports.
pub struct Transport {
    pub paused: AtomicBool,
    /// Pause at the next SSML mark: the callback sets `paused` when it reaches a marker whose
    /// tag has [`NAMED_MARK`] set, exactly at its sample (and clears this).
    pub pause_at_mark: AtomicBool,
    /// Any change flushes the ring (with a fade); the engine bumps it on every stop.
    pub stop: AtomicU64,
    /// The device's latency as of the last callback (µs from handing a sample out to its
    /// playback), as far as the driver reports it.
    pub latency_us: AtomicU64,
    /// Frames the device asked for in the last callback, and its sample rate (0: not known).
    pub period_frames: AtomicU32,
    pub device_rate: AtomicU32,
    /// Callbacks so far and the frames they handed out (the average period).
    pub callbacks: AtomicU64,
    pub frames_out: AtomicU64,
    /// The latest `stop` value whose fade-out the callback has handed out in full, and when
    /// its last faded sample left the callback (µs after `base`).
    pub stop_faded: AtomicU64,
    pub stop_faded_us: AtomicU64,
    base: Instant,
}

impl Default for Transport {
    fn default() -> Self {
        Self {
            paused: AtomicBool::new(false),
            pause_at_mark: AtomicBool::new(false),
            stop: AtomicU64::new(0),
            latency_us: AtomicU64::new(0),
            period_frames: AtomicU32::new(0),
            device_rate: AtomicU32::new(0),
            callbacks: AtomicU64::new(0),
            frames_out: AtomicU64::new(0),
            stop_faded: AtomicU64::new(0),
            stop_faded_us: AtomicU64::new(0),
            base: Instant::now(),
        }
    }
}

impl Transport {
    /// When stop number `stop` had faded out at the callback, if it has.
    pub fn stop_faded_at(&self, stop: u64) -> Option<Instant> {
        // The callback writes the time before the stop value, so once the value is seen the
        // time is at least that stop's (a later stop's, if one finished meanwhile).
        if self.stop_faded.load(Ordering::Acquire) < stop {
            return None;
        }
        let us = self.stop_faded_us.load(Ordering::Acquire);
        Some(self.base + Duration::from_micros(us))
    }

    /// The average time between callbacks: frames per callback over the device rate.
    pub fn period(&self) -> Option<Duration> {
        let calls = self.callbacks.load(Ordering::Relaxed);
        let frames = self.frames_out.load(Ordering::Relaxed);
        let rate = self.device_rate.load(Ordering::Relaxed);
        (calls > 0 && frames > 0 && rate > 0)
            .then(|| Duration::from_secs_f64(frames as f64 / calls as f64 / rate as f64))
    }

    /// Microseconds since the transport was made (the clock of `stop_faded_us`).
    pub fn now_us(&self) -> u64 {
        self.base.elapsed().as_micros() as u64
    }
}

/// Opens an output on the engine thread (a device stream must live on the thread that
/// writes to it); called again to reopen a lost device.
pub trait OpenSink: Send + Sync {
    /// An output for mono audio at `source_rate`. `on_mark` is called when a marked sample
    /// reaches the callback; `transport` carries stop and pause to the callback.
    fn open(
        &self,
        source_rate: u32,
        on_mark: MarkFn,
        transport: Arc<Transport>,
    ) -> Result<Box<dyn AudioSink>, AudioError>;
    /// Asks for a larger device buffer at the next open; false if it can grow no more.
    fn grow_buffer(&self) -> bool {
        false
    }
}

/// Where the engine's audio goes.
#[derive(Clone, Default)]
pub enum Output {
    /// Nowhere: audio only reaches the caller through `Event::Chunk` (no pacing).
    #[default]
    None,
    /// An output the engine opens on its thread (the audio crate's device or simulated
    /// device); lost, it is reopened.
    Sink(Arc<dyn OpenSink>),
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Output::None => "Output::None",
            Output::Sink(_) => "Output::Sink",
        })
    }
}
