//! Streaming audio output for the engine thread: the smallest device buffer cpal allows,
//! rubato resampling, a lock-free ring to the callback, volume, pause/resume and flush with a
//! short fade, and position markers that fire when the callback hands out a given sample.
//!
//! The callback never allocates or locks: it talks to the engine only through atomics and
//! three SPSC rings (audio, markers in, marker hits out).

use super::AudioError;
use super::resample::StreamResampler;
use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use cpal::{FromSample, SizedSample};
use ringbuf::traits::{Consumer, Observer, Producer, Split};
use ringbuf::{HeapCons, HeapProd, HeapRb};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Requested device buffer (the callback period).
const TARGET_BUFFER_MS: u32 = 10;
/// Fade applied when pausing, resuming or flushing, so nothing clicks.
const FADE_MS: f32 = 4.0;
/// Audio the ring can hold.
const RING_SECONDS: f32 = 8.0;
/// Pending markers (segment starts, onsets, ends); more than this and extra ones are dropped.
const MARK_SLOTS: usize = 512;
/// How often marker hits are turned into notifications.
const NOTIFY_POLL: Duration = Duration::from_millis(2);
/// A flush not acknowledged within this time means the device has stalled.
const FLUSH_TIMEOUT: Duration = Duration::from_millis(500);

/// Called (on a helper thread) with a marker's tag and the time its sample reached the callback.
pub type MarkFn = Arc<dyn Fn(u64, Instant) + Send + Sync>;

/// Controls the callback obeys directly, so stop and pause take effect within one device
/// period even while the engine thread is busy synthesising.
#[derive(Default)]
pub struct Transport {
    pub paused: AtomicBool,
    /// Any change flushes the ring (with a fade); the engine bumps it on every stop.
    pub stop: AtomicU64,
    /// The device's latency as of the last callback (µs from handing a sample out to its
    /// playback), as far as the driver reports it.
    pub latency_us: AtomicU64,
}

struct Shared {
    base: Instant,
    volume: AtomicU32,
    transport: Arc<Transport>,
    flush_req: AtomicU64,
    flush_ack: AtomicU64,
    /// Device frames handed out or discarded so far.
    read_pos: AtomicU64,
    underruns: AtomicU64,
    /// The engine has more audio coming: an empty ring now is an underrun.
    expecting: AtomicBool,
    failed: AtomicBool,
    last_callback_ns: AtomicU64,
    error: Mutex<Option<String>>,
}

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

/// The default output device.
pub struct DeviceSink {
    _stream: cpal::Stream,
    producer: HeapProd<f32>,
    marks: HeapProd<(u64, u64)>,
    resampler: StreamResampler,
    scratch: Vec<f32>,
    shared: Arc<Shared>,
    device_rate: u32,
    /// Device frames written to the ring.
    write_pos: u64,
    /// Source samples written.
    src_written: u64,
    /// Start of the current continuous run (resets at drain and flush): source and device
    /// positions, for mapping markers.
    run_src: u64,
    run_dev: u64,
    notifier_stop: Arc<AtomicBool>,
    notifier: Option<std::thread::JoinHandle<()>>,
    /// The device buffer in frames, when a fixed size was granted.
    pub buffer_frames: Option<u32>,
}

impl DeviceSink {
    /// Opens the default output device for mono audio at `source_rate`.
    pub fn open(
        source_rate: u32,
        on_mark: MarkFn,
        transport: Arc<Transport>,
    ) -> Result<Self, AudioError> {
        // ALSA without a sound server panics inside cpal; turn that into an error.
        let (_, config, range) = std::panic::catch_unwind(probe)
            .map_err(|_| AudioError::Open("the audio backend crashed while probing".into()))??;
        // Some drivers reject sizes inside their advertised range: try the 10 ms target,
        // then nearby powers of two, then the device default.
        let want = config.sample_rate().0 * target_buffer_ms() / 1000;
        let mut sizes: Vec<u32> = Vec::new();
        if let Some((min, max)) = range {
            for n in [want, want.next_power_of_two(), want.next_power_of_two() * 2] {
                let n = n.clamp(min, max);
                if !sizes.contains(&n) {
                    sizes.push(n);
                }
            }
        }
        for n in sizes {
            match Self::open_with(source_rate, Arc::clone(&on_mark), &transport, Some(n)) {
                Ok(s) => return Ok(s),
                Err(e) => tracing::debug!("buffer of {n} frames refused: {e}"),
            }
        }
        Self::open_with(source_rate, on_mark, &transport, None)
    }

    fn open_with(
        source_rate: u32,
        on_mark: MarkFn,
        transport: &Arc<Transport>,
        fixed: Option<u32>,
    ) -> Result<Self, AudioError> {
        let (device, config, _) = std::panic::catch_unwind(probe)
            .map_err(|_| AudioError::Open("the audio backend crashed while probing".into()))??;
        let device_rate = config.sample_rate().0;
        let channels = config.channels() as usize;
        let capacity = (device_rate as f32 * RING_SECONDS) as usize;
        let (producer, consumer) = HeapRb::<f32>::new(capacity).split();
        let (marks, marks_cons) = HeapRb::<(u64, u64)>::new(MARK_SLOTS).split();
        let (hits, mut hits_cons) = HeapRb::<(u64, u64)>::new(MARK_SLOTS).split();
        let shared = Arc::new(Shared {
            base: Instant::now(),
            volume: AtomicU32::new(1.0f32.to_bits()),
            transport: Arc::clone(transport),
            flush_req: AtomicU64::new(0),
            flush_ack: AtomicU64::new(0),
            read_pos: AtomicU64::new(0),
            underruns: AtomicU64::new(0),
            expecting: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            last_callback_ns: AtomicU64::new(0),
            error: Mutex::new(None),
        });
        let fade_frames = (device_rate as f32 * FADE_MS / 1000.0).max(1.0);
        let cb = Callback {
            consumer,
            marks: marks_cons,
            hits,
            shared: Arc::clone(&shared),
            channels,
            gain: 1.0,
            fade_step: 1.0 / fade_frames,
            volume: 1.0,
            acked: 0,
            seen_stop: transport.stop.load(Ordering::Acquire),
            pos: 0,
            starving: false,
            boosted: false,
        };
        let try_build = |cfg: &cpal::StreamConfig, cb: Callback| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                build_stream(&device, cfg, config.sample_format(), cb, &shared)
            }))
            .map_err(|_| AudioError::Open("the audio backend crashed while opening".into()))?
        };
        let mut stream_config = config.config();
        let mut buffer_frames = None;
        if let Some(frames) = fixed {
            stream_config.buffer_size = cpal::BufferSize::Fixed(frames);
            buffer_frames = Some(frames);
        }
        let stream = try_build(&stream_config, cb)?;
        stream.play().map_err(|e| AudioError::Open(e.to_string()))?;
        let resampler =
            StreamResampler::new(source_rate, device_rate).map_err(AudioError::Resample)?;
        let notifier_stop = Arc::new(AtomicBool::new(false));
        let notifier = {
            let stop = Arc::clone(&notifier_stop);
            let base = shared.base;
            std::thread::Builder::new()
                .name("hark-audio-marks".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        while let Some((tag, ns)) = hits_cons.try_pop() {
                            on_mark(tag, base + Duration::from_nanos(ns));
                        }
                        std::thread::sleep(NOTIFY_POLL);
                    }
                })
                .map_err(|e| AudioError::Open(e.to_string()))?
        };
        tracing::info!(
            "audio out: {device_rate} Hz, {channels} ch, buffer {:?}",
            buffer_frames
        );
        Ok(Self {
            _stream: stream,
            producer,
            marks,
            resampler,
            scratch: Vec::new(),
            shared,
            device_rate,
            write_pos: 0,
            src_written: 0,
            run_src: 0,
            run_dev: 0,
            notifier_stop,
            notifier: Some(notifier),
            buffer_frames,
        })
    }

    pub fn device_rate(&self) -> u32 {
        self.device_rate
    }

    fn wait_flush_ack(&self) -> Result<(), AudioError> {
        let req = self.shared.flush_req.load(Ordering::Acquire);
        let deadline = Instant::now() + FLUSH_TIMEOUT;
        while self.shared.flush_ack.load(Ordering::Acquire) != req {
            self.health()?;
            if Instant::now() > deadline {
                return Err(AudioError::Stream(
                    "the device stopped consuming audio".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    fn push(&mut self) -> Result<(), AudioError> {
        let mut at = 0;
        let deadline = Instant::now() + Duration::from_secs(5);
        while at < self.scratch.len() {
            at += self.producer.push_slice(&self.scratch[at..]);
            if at < self.scratch.len() {
                // The engine paces itself, so a full ring means paused or a stalled device.
                self.health()?;
                if Instant::now() > deadline
                    && !self.shared.transport.paused.load(Ordering::Relaxed)
                {
                    return Err(AudioError::Stream(
                        "the device stopped consuming audio".into(),
                    ));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        self.write_pos += self.scratch.len() as u64;
        self.scratch.clear();
        Ok(())
    }

    fn start_run(&mut self) {
        self.run_src = self.src_written;
        self.run_dev = self.write_pos;
    }
}

type Probed = (
    cpal::Device,
    cpal::SupportedStreamConfig,
    Option<(u32, u32)>,
);

/// The default device, its default config and the buffer sizes it advertises.
fn probe() -> Result<Probed, AudioError> {
    let host = cpal::default_host();
    let device = host.default_output_device().ok_or(AudioError::NoDevice)?;
    let config = device
        .default_output_config()
        .map_err(|e| AudioError::Open(e.to_string()))?;
    let range = match config.buffer_size() {
        cpal::SupportedBufferSize::Range { min, max } if *max >= *min => Some((*min, *max)),
        _ => None,
    };
    Ok((device, config, range))
}

impl AudioSink for DeviceSink {
    fn write(&mut self, samples: &[f32]) -> Result<(), AudioError> {
        self.health()?;
        self.wait_flush_ack()?;
        let mut out = std::mem::take(&mut self.scratch);
        let r = self.resampler.process(samples, &mut out);
        self.scratch = out;
        r.map_err(AudioError::Resample)?;
        self.src_written += samples.len() as u64;
        self.push()
    }

    fn written(&self) -> u64 {
        self.src_written
    }

    fn mark(&mut self, pos: u64, tag: u64) {
        let rel = pos.saturating_sub(self.run_src) as f64;
        let dev = self.run_dev
            + self.resampler.delay() as u64
            + (rel * self.resampler.ratio()).round() as u64;
        if self.marks.try_push((dev, tag)).is_err() {
            tracing::warn!("too many pending audio markers; one was dropped");
        }
    }

    fn buffered_ms(&self) -> f64 {
        let read = self.shared.read_pos.load(Ordering::Acquire);
        let dev = self.write_pos.saturating_sub(read) as f64 / self.device_rate as f64;
        let src =
            self.resampler.pending() as f64 / self.device_rate as f64 * self.resampler.ratio();
        (dev + src) * 1000.0
    }

    fn drain(&mut self) -> Result<(), AudioError> {
        if self.resampler.pending() == 0 && self.src_written == self.run_src {
            return Ok(());
        }
        self.wait_flush_ack()?;
        let mut out = std::mem::take(&mut self.scratch);
        let r = self.resampler.drain(&mut out);
        self.scratch = out;
        r.map_err(AudioError::Resample)?;
        self.push()?;
        self.start_run();
        Ok(())
    }

    fn flush(&mut self) {
        self.resampler.reset();
        self.shared.flush_req.fetch_add(1, Ordering::AcqRel);
        // Everything written so far is discarded by the callback, so positions carry on.
        self.start_run();
    }

    fn set_paused(&mut self, paused: bool) {
        self.shared
            .transport
            .paused
            .store(paused, Ordering::Release);
    }

    fn set_volume(&mut self, volume: f32) {
        let v = if volume.is_finite() {
            volume.clamp(0.0, 2.0)
        } else {
            1.0
        };
        self.shared.volume.store(v.to_bits(), Ordering::Relaxed);
    }

    fn set_expecting(&mut self, more: bool) {
        self.shared.expecting.store(more, Ordering::Relaxed);
    }

    fn underruns(&self) -> u64 {
        self.shared.underruns.load(Ordering::Relaxed)
    }

    fn health(&self) -> Result<(), AudioError> {
        if self.shared.failed.load(Ordering::Acquire) {
            let msg = self
                .shared
                .error
                .lock()
                .ok()
                .and_then(|e| e.clone())
                .unwrap_or_else(|| "the audio device failed".into());
            return Err(AudioError::Stream(msg));
        }
        // Audio is queued but the callback has not run for a long time: the device is gone.
        let queued = self.write_pos > self.shared.read_pos.load(Ordering::Acquire);
        let last = self.shared.last_callback_ns.load(Ordering::Relaxed);
        let now = self.shared.base.elapsed().as_nanos() as u64;
        if queued
            && !self.shared.transport.paused.load(Ordering::Relaxed)
            && now.saturating_sub(last) > 3_000_000_000
        {
            return Err(AudioError::Stream(
                "the audio device stopped responding".into(),
            ));
        }
        Ok(())
    }
}

impl Drop for DeviceSink {
    fn drop(&mut self) {
        self.notifier_stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.notifier.take() {
            let _ = h.join();
        }
    }
}

/// State owned by the audio callback.
struct Callback {
    consumer: HeapCons<f32>,
    marks: HeapCons<(u64, u64)>,
    hits: HeapProd<(u64, u64)>,
    shared: Arc<Shared>,
    channels: usize,
    gain: f32,
    fade_step: f32,
    volume: f32,
    acked: u64,
    seen_stop: u64,
    pos: u64,
    starving: bool,
    boosted: bool,
}

impl Callback {
    fn fill<T: SizedSample + FromSample<f32>>(&mut self, out: &mut [T]) {
        if !self.boosted {
            self.boosted = true;
            boost_current_thread();
        }
        let sh = &self.shared;
        let now_ns = sh.base.elapsed().as_nanos() as u64;
        sh.last_callback_ns.store(now_ns, Ordering::Relaxed);
        let flush_req = sh.flush_req.load(Ordering::Acquire);
        let stop = sh.transport.stop.load(Ordering::Acquire);
        let flushing = flush_req != self.acked || stop != self.seen_stop;
        let paused = sh.transport.paused.load(Ordering::Acquire);
        let target = if flushing || paused { 0.0 } else { 1.0 };
        let expecting = sh.expecting.load(Ordering::Relaxed);
        let frames = out.len() / self.channels.max(1);
        let vol_target = f32::from_bits(sh.volume.load(Ordering::Relaxed));
        // Volume changes ramp over one buffer.
        let vol_step = (vol_target - self.volume) / frames.max(1) as f32;
        for frame in out.chunks_mut(self.channels.max(1)) {
            if self.gain < target {
                self.gain = (self.gain + self.fade_step).min(target);
            } else if self.gain > target {
                self.gain = (self.gain - self.fade_step).max(target);
            }
            // Fully faded out (paused or flushing): hold the audio where it is.
            let s = if target == 0.0 && self.gain == 0.0 {
                0.0
            } else {
                match self.consumer.try_pop() {
                    Some(s) => {
                        self.pos += 1;
                        self.starving = false;
                        s
                    }
                    None => {
                        if expecting && !self.starving {
                            sh.underruns.fetch_add(1, Ordering::Relaxed);
                            self.starving = true;
                        }
                        0.0
                    }
                }
            };
            self.volume += vol_step;
            let v = s * self.gain * self.volume;
            for slot in frame {
                *slot = T::from_sample(v);
            }
        }
        self.volume = vol_target;
        if flushing && self.gain == 0.0 {
            let n = self.consumer.occupied_len();
            self.pos += self.consumer.skip(n) as u64;
            self.marks.clear();
            self.acked = flush_req;
            self.seen_stop = stop;
            // The ring is empty because of the stop, not because the engine was late.
            self.starving = true;
            sh.flush_ack.store(flush_req, Ordering::Release);
            if !paused {
                self.gain = 1.0;
            }
        }
        // Markers whose sample has been handed out in this (or an earlier) callback.
        while let Some(&(at, tag)) = self.marks.try_peek() {
            if at >= self.pos {
                break;
            }
            self.marks.try_pop();
            let _ = self.hits.try_push((tag, now_ns));
        }
        sh.read_pos.store(self.pos, Ordering::Release);
    }
}

/// The device buffer to ask for: 10 ms, or `HARK_AUDIO_BUFFER_MS` (1–500) for a system whose
/// sound path cannot keep up with small periods.
fn target_buffer_ms() -> u32 {
    std::env::var("HARK_AUDIO_BUFFER_MS")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|ms| (1..=500).contains(ms))
        .unwrap_or(TARGET_BUFFER_MS)
}

/// Real-time scheduling for the callback thread where allowed (root, or an RT limit), so a
/// busy machine does not starve playback; silently keeps normal priority otherwise.
fn boost_current_thread() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain syscalls on the calling thread with a valid, initialised parameter.
    unsafe {
        let param = libc::sched_param { sched_priority: 10 };
        let _ = libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param);
    }
}

fn build_stream(
    device: &cpal::Device,
    config: &cpal::StreamConfig,
    format: cpal::SampleFormat,
    cb: Callback,
    shared: &Arc<Shared>,
) -> Result<cpal::Stream, AudioError> {
    fn with<T: SizedSample + FromSample<f32>>(
        device: &cpal::Device,
        config: &cpal::StreamConfig,
        mut cb: Callback,
        shared: &Arc<Shared>,
    ) -> Result<cpal::Stream, AudioError> {
        let err_shared = Arc::clone(shared);
        device
            .build_output_stream(
                config,
                move |out: &mut [T], info: &cpal::OutputCallbackInfo| {
                    let ts = info.timestamp();
                    if let Some(d) = ts.playback.duration_since(&ts.callback) {
                        cb.shared
                            .transport
                            .latency_us
                            .store(d.as_micros() as u64, Ordering::Relaxed);
                    }
                    cb.fill(out)
                },
                move |err| {
                    // Runs outside the data callback, so a lock is fine here. Only a lost
                    // device is fatal; other errors are logged and stalls caught by `health`.
                    let fatal = matches!(err, cpal::StreamError::DeviceNotAvailable);
                    tracing::warn!("audio device error: {err}");
                    if fatal {
                        if let Ok(mut slot) = err_shared.error.lock() {
                            *slot = Some(err.to_string());
                        }
                        err_shared.failed.store(true, Ordering::Release);
                    }
                },
                None,
            )
            .map_err(|e| AudioError::Open(e.to_string()))
    }
    match format {
        cpal::SampleFormat::F32 => with::<f32>(device, config, cb, shared),
        cpal::SampleFormat::I16 => with::<i16>(device, config, cb, shared),
        cpal::SampleFormat::U16 => with::<u16>(device, config, cb, shared),
        cpal::SampleFormat::I32 => with::<i32>(device, config, cb, shared),
        other => Err(AudioError::Open(format!(
            "unsupported sample format {other}"
        ))),
    }
}
