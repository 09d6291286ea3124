//! Streaming audio output for the engine thread: the smallest device buffer cpal allows,
//! rubato resampling, a lock-free ring to the callback, volume, pause/resume and flush with a
//! short fade, and position markers that fire when the callback hands out a given sample.
//!
//! The callback itself is in `callback.rs`; it runs inside cpal or, with no sound card, on
//! the timer thread of `clock.rs`.

use super::callback::{Callback, CueMsg, SETTLING_CALLBACKS, Shared};
use super::clock::{CLOCK_CHANNELS, CLOCK_RATE, ClockDriver};
use super::resample::StreamResampler;
use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use cpal::{FromSample, SizedSample};
use hark_engine::output::{
    AudioError, AudioSink, Clip, CuePort, MarkFn, OpenSink, Output, Transport,
};
use ringbuf::traits::Observer;
use ringbuf::traits::{Consumer, Producer, Split};
use ringbuf::{HeapCons, HeapProd, HeapRb};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Requested device buffer (the callback period) unless the caller asks for another.
pub const DEFAULT_BUFFER_MS: u32 = 10;
/// The largest buffer the device is reopened with when the sound server plays a smaller one
/// dry before each refill. PipeWire runs its graph in cycles ("quanta") that it may lengthen
/// up to 2048 frames (43 ms at 48 kHz; a user's `clock.min-quantum` or `force-quantum`, or
/// another program, can ask for that), and a client buffer shorter than a cycle then plays
/// silence in place of speech, or speech twice: at 1024 frames, Hark's 10 ms buffer gave
/// 745 gaps in 4 s of speech; a 40 ms one gave none.
pub const MAX_BUFFER_MS: u32 = 100;
/// How much larger the buffer gets each time: a buffer that drains is no longer than the
/// server's cycle, and twice the cycle still lost whole cycles at 512 frames (20 ms against
/// 40 ms, stop 35), so the next size is four times the last: 10, 40, 100 ms.
const GROWTH: u32 = 4;
/// How long a new stream is watched for a buffer played dry, at most (four of PipeWire's
/// longest cycles), and for how many callbacks past the first ones; if at least two, and half,
/// of those drained, the buffer is too small. A healthy stream sees its callbacks within
/// about 20 ms and none drained.
const START_PROBE: Duration = Duration::from_millis(200);
const START_PROBE_CALLBACKS: u64 = 6;
/// Whole-buffer refills in an open stream before it counts as too small.
const DRAINED_MIN: u64 = 8;
/// What the tap's ring holds; the notifier thread empties it every `NOTIFY_POLL`.
const TAP_SECONDS: usize = 4;
/// Fade applied when pausing, resuming or flushing, so nothing clicks.
const FADE_MS: f32 = 4.0;
/// Audio the ring can hold.
const RING_SECONDS: f32 = 8.0;
/// Pending markers (segment starts, onsets, ends); more than this and extra ones are dropped.
const MARK_SLOTS: usize = 512;
/// Clips waiting for the callback, and clips it is done with (freed by the notifier).
const CUE_SLOTS: usize = 64;
/// Resampled clips an output keeps (a module's key cache is a few hundred).
const CUE_CACHE: usize = 2048;
/// How often marker hits are turned into notifications.
const NOTIFY_POLL: Duration = Duration::from_millis(2);
/// A device that has not called back this long after it started is not playing.
const FIRST_CALLBACK_TIMEOUT: Duration = Duration::from_secs(2);
/// Stream errors in a row, with no data callback between them, that mean the device is gone.
const ERROR_FLOOD: u64 = 200;
/// No callback for this long while audio waits (and not paused): the device is gone.
const STALL: Duration = Duration::from_secs(3);

/// The default output device.
pub struct DeviceSink {
    _driver: Driver,
    producer: HeapProd<f32>,
    marks: HeapProd<(u64, u64, u64)>,
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
    _notifier: Notifier,
    cues: Arc<Cues>,
    /// The device buffer in frames, when a fixed size was granted.
    pub buffer_frames: Option<u32>,
}

/// Clips straight to the callback (`CuePort`), resampled to the device's rate once each.
struct Cues {
    tx: Mutex<HeapProd<CueMsg>>,
    source_rate: u32,
    device_rate: u32,
    resampled: Mutex<HashMap<u64, Arc<[f32]>>>,
}

impl Cues {
    fn at_device_rate(&self, clip: &Clip) -> Result<Arc<[f32]>, AudioError> {
        let lock = || self.resampled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = lock().get(&clip.id) {
            return Ok(Arc::clone(s));
        }
        let samples: Arc<[f32]> = if self.source_rate == self.device_rate {
            Arc::clone(&clip.samples)
        } else {
            let mut rs = StreamResampler::new(self.source_rate, self.device_rate)
                .map_err(AudioError::Resample)?;
            let mut out =
                Vec::with_capacity((clip.samples.len() as f64 * rs.ratio()) as usize + 2048);
            rs.process(&clip.samples, &mut out)
                .and_then(|()| rs.drain(&mut out))
                .map_err(AudioError::Resample)?;
            // The drain pads to whole chunks: keep the clip's own length.
            out.truncate((clip.samples.len() as f64 * rs.ratio()).ceil() as usize);
            out.into()
        };
        let mut cache = lock();
        if cache.len() >= CUE_CACHE {
            cache.clear();
        }
        cache.insert(clip.id, Arc::clone(&samples));
        Ok(samples)
    }
}

impl CuePort for Cues {
    fn prepare(&self, clip: &Clip) {
        if let Err(e) = self.at_device_rate(clip) {
            tracing::warn!("clip not prepared: {e}");
        }
    }

    fn play(&self, stop: u64, clip: &Clip, start_tag: u64, end_tag: u64) -> Result<(), AudioError> {
        let samples = self.at_device_rate(clip)?;
        let msg = CueMsg {
            stop,
            samples,
            start_tag,
            end_tag,
        };
        self.tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .try_push(msg)
            .map_err(|_| AudioError::Stream("too many clips waiting for the device".into()))
    }
}

impl DeviceSink {
    /// Opens the default output device for mono audio at `source_rate`, with a buffer of
    /// about `buffer_ms`, or a larger one where the sound server drains that size before
    /// each refill (see [`MAX_BUFFER_MS`]).
    pub fn open(
        source_rate: u32,
        on_mark: MarkFn,
        transport: Arc<Transport>,
        buffer_ms: u32,
        tap: Option<&Path>,
    ) -> Result<Self, AudioError> {
        let mut ms = buffer_ms.max(1);
        loop {
            let sink = Self::open_near(source_rate, Arc::clone(&on_mark), &transport, ms, tap)?;
            let Some(frames) = sink.buffer_frames else {
                return Ok(sink);
            };
            if ms >= MAX_BUFFER_MS || !sink.drains_at_start() {
                return Ok(sink);
            }
            let next = (ms * GROWTH).min(MAX_BUFFER_MS);
            tracing::info!(
                "the sound server plays a {frames}-frame buffer dry before each refill (its \
                 cycle is longer): reopening with {next} ms"
            );
            // The old stream closes before the next opens.
            drop(sink);
            ms = next;
        }
    }

    /// Opens the device with a buffer near `buffer_ms`.
    fn open_near(
        source_rate: u32,
        on_mark: MarkFn,
        transport: &Arc<Transport>,
        buffer_ms: u32,
        tap: Option<&Path>,
    ) -> Result<Self, AudioError> {
        // ALSA without a sound server panics inside cpal; turn that into an error.
        let (_, config, range) = std::panic::catch_unwind(probe)
            .map_err(|_| AudioError::Open("the audio backend crashed while probing".into()))??;
        // Some drivers reject sizes inside their advertised range: try the target, then
        // nearby powers of two, then the device default.
        let want = config.sample_rate().0 * buffer_ms / 1000;
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
            match Self::open_with(source_rate, Arc::clone(&on_mark), transport, Some(n), tap) {
                Ok(s) => return Ok(s),
                // Not a matter of the size: no point trying others.
                Err(AudioError::NotPlaying) => return Err(AudioError::NotPlaying),
                Err(e) => tracing::debug!("buffer of {n} frames refused: {e}"),
            }
        }
        Self::open_with(source_rate, on_mark, transport, None, tap)
    }

    /// Watches the first callbacks of a new stream: true if the device kept asking for its
    /// whole buffer, that is, it had played all of it before each refill.
    fn drains_at_start(&self) -> bool {
        let sh = &self.shared;
        let deadline = Instant::now() + START_PROBE;
        while sh.calls.load(Ordering::Acquire) < SETTLING_CALLBACKS + START_PROBE_CALLBACKS
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        let drained = sh.drained.load(Ordering::Acquire);
        let watched = sh
            .calls
            .load(Ordering::Acquire)
            .saturating_sub(SETTLING_CALLBACKS);
        tracing::debug!("audio out: {drained} of {watched} refills took the whole buffer");
        drained >= 2 && drained * 2 >= watched
    }

    fn open_with(
        source_rate: u32,
        on_mark: MarkFn,
        transport: &Arc<Transport>,
        fixed: Option<u32>,
        tap: Option<&Path>,
    ) -> Result<Self, AudioError> {
        let (device, config, _) = std::panic::catch_unwind(probe)
            .map_err(|_| AudioError::Open("the audio backend crashed while probing".into()))??;
        let device_rate = config.sample_rate().0;
        let channels = config.channels() as usize;
        let (cb, parts) = Parts::new(source_rate, device_rate, channels, on_mark, transport, tap)?;
        let shared = Arc::clone(&cb.shared);
        let mut stream_config = config.config();
        if let Some(frames) = fixed {
            stream_config.buffer_size = cpal::BufferSize::Fixed(frames);
            shared.buffer_frames.store(frames, Ordering::Relaxed);
        }
        let stream = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            build_stream(&device, &stream_config, config.sample_format(), cb, &shared)
        }))
        .map_err(|_| AudioError::Open("the audio backend crashed while opening".into()))??;
        stream.play().map_err(|e| AudioError::Open(e.to_string()))?;
        // A stream can open on a server whose output has gone (PipeWire with no sink left):
        // it never calls back. Count that as no device, so the engine reports it.
        let deadline = Instant::now() + FIRST_CALLBACK_TIMEOUT;
        while shared.last_callback_ns.load(Ordering::Acquire) == 0 {
            if Instant::now() > deadline {
                return Err(AudioError::NotPlaying);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        tracing::info!("audio out: {device_rate} Hz, {channels} ch, buffer {fixed:?}");
        Ok(parts.into_sink(Driver::Cpal(stream), fixed))
    }

    /// No sound card: the callback runs on a timer thread every `period_ms` at 48 kHz
    /// stereo, and its samples are dropped. For measuring the streaming path where there is
    /// no device. `speed` > 1 runs the clock that many times faster than real time.
    pub fn simulated(
        source_rate: u32,
        on_mark: MarkFn,
        transport: Arc<Transport>,
        period_ms: u32,
        speed: f64,
    ) -> Result<Self, AudioError> {
        let frames = CLOCK_RATE * period_ms / 1000;
        let (cb, parts) = Parts::new(
            source_rate,
            CLOCK_RATE,
            CLOCK_CHANNELS,
            on_mark,
            &transport,
            None,
        )?;
        let clock =
            ClockDriver::start(cb, frames, speed).map_err(|e| AudioError::Open(e.to_string()))?;
        Ok(parts.into_sink(Driver::Clock(clock), Some(frames)))
    }

    pub fn device_rate(&self) -> u32 {
        self.device_rate
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

/// What plays the callback: cpal, or the timer of a simulated device.
enum Driver {
    Cpal(#[allow(dead_code)] cpal::Stream),
    Clock(#[allow(dead_code)] ClockDriver),
    /// A test calls the callback itself.
    #[cfg(test)]
    Manual,
}

/// Everything of a sink but its driver.
struct Parts {
    producer: HeapProd<f32>,
    cues: Arc<Cues>,
    marks: HeapProd<(u64, u64, u64)>,
    resampler: StreamResampler,
    shared: Arc<Shared>,
    device_rate: u32,
    notifier: Notifier,
}

/// The thread that turns marker hits into notifications; stopped when dropped (also when
/// opening the device fails after it started, so it never outlives its sink).
struct Notifier {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}

/// Appends what the tap's ring holds to its file (f32, little-endian); a write error or a
/// full ring is logged, since the file no longer holds every sample.
fn write_tap(rx: &mut HeapCons<f32>, file: &mut impl std::io::Write, shared: &Shared) {
    let mut bytes = Vec::with_capacity(rx.occupied_len() * 4);
    while let Some(v) = rx.try_pop() {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    if let Err(e) = file.write_all(&bytes).and_then(|()| file.flush()) {
        tracing::error!("audio tap: {e}");
    }
    if shared.tap_overflow.swap(false, Ordering::Relaxed) {
        tracing::error!("audio tap: its ring was full, so the file misses samples");
    }
}

impl Parts {
    /// The rings, the callback that drains them, the resampler and the thread that turns
    /// marker hits into notifications.
    fn new(
        source_rate: u32,
        device_rate: u32,
        channels: usize,
        on_mark: MarkFn,
        transport: &Arc<Transport>,
        tap: Option<&Path>,
    ) -> Result<(Callback, Self), AudioError> {
        let capacity = (device_rate as f32 * RING_SECONDS) as usize;
        let (producer, consumer) = HeapRb::<f32>::new(capacity).split();
        let (cue_tx, cue_rx) = HeapRb::<CueMsg>::new(CUE_SLOTS).split();
        let (garbage, mut garbage_rx) = HeapRb::<Arc<[f32]>>::new(CUE_SLOTS * 2).split();
        let (marks, marks_cons) = HeapRb::<(u64, u64, u64)>::new(MARK_SLOTS).split();
        let (hits, mut hits_cons) = HeapRb::<(u64, u64)>::new(MARK_SLOTS).split();
        let shared = Arc::new(Shared::new(Arc::clone(transport)));
        let mut cb = Callback::new(
            consumer,
            cue_rx,
            garbage,
            marks_cons,
            hits,
            Arc::clone(&shared),
            channels,
            device_rate,
            FADE_MS,
        );
        let mut tapped = match tap {
            Some(path) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| AudioError::Open(format!("tap {}: {e}", path.display())))?;
                let (tx, rx) = HeapRb::<f32>::new(device_rate as usize * TAP_SECONDS).split();
                cb.set_tap(tx);
                Some((rx, std::io::BufWriter::new(file)))
            }
            None => None,
        };
        let resampler =
            StreamResampler::new(source_rate, device_rate).map_err(AudioError::Resample)?;
        let notifier_stop = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&notifier_stop);
        let base = shared.base;
        let tap_shared = Arc::clone(&shared);
        let notifier = std::thread::Builder::new()
            .name("hark-audio-marks".into())
            .spawn(move || {
                loop {
                    // Read before the last drain, so what the callback gave last is written.
                    let stopping = stop.load(Ordering::Acquire);
                    while let Some((tag, ns)) = hits_cons.try_pop() {
                        on_mark(tag, base + Duration::from_nanos(ns));
                    }
                    // Clips the callback is done with are freed here.
                    while garbage_rx.try_pop().is_some() {}
                    if let Some((rx, file)) = tapped.as_mut() {
                        write_tap(rx, file, &tap_shared);
                    }
                    if stopping {
                        break;
                    }
                    std::thread::sleep(NOTIFY_POLL);
                }
            })
            .map_err(|e| AudioError::Open(e.to_string()))?;
        let cues = Arc::new(Cues {
            tx: Mutex::new(cue_tx),
            source_rate,
            device_rate,
            resampled: Mutex::new(HashMap::new()),
        });
        let parts = Self {
            producer,
            cues,
            marks,
            resampler,
            shared,
            device_rate,
            notifier: Notifier {
                stop: notifier_stop,
                thread: Some(notifier),
            },
        };
        Ok((cb, parts))
    }

    fn into_sink(self, driver: Driver, buffer_frames: Option<u32>) -> DeviceSink {
        DeviceSink {
            _driver: driver,
            producer: self.producer,
            marks: self.marks,
            resampler: self.resampler,
            scratch: Vec::new(),
            shared: self.shared,
            device_rate: self.device_rate,
            write_pos: 0,
            src_written: 0,
            run_src: 0,
            run_dev: 0,
            _notifier: self.notifier,
            cues: self.cues,
            buffer_frames,
        }
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
    let config = at_server_rate(&device, config);
    let range = match config.buffer_size() {
        cpal::SupportedBufferSize::Range { min, max } if *max >= *min => Some((*min, *max)),
        _ => None,
    };
    Ok((device, config, range))
}

/// cpal's default is 44.1 kHz wherever it is in range, but PipeWire's graph and nearly all
/// sound cards run at 48 kHz: a 44.1 kHz stream is resampled a second time in the server
/// (Hark already resamples from the voice's rate). On a busy 2-core machine that path lost
/// speech (stop 34, pause test beside three busy loops: 76 to 101 ms missing from the sink
/// in the 3 attempts analysed, while the callback, tapped, had handed over every sample; at
/// 48 kHz 0 to 4 ms in 5 of 5). The same format at 48 kHz when the device offers it; else cpal's choice.
fn at_server_rate(
    device: &cpal::Device,
    default: cpal::SupportedStreamConfig,
) -> cpal::SupportedStreamConfig {
    const SERVER_RATE: cpal::SampleRate = cpal::SampleRate(48_000);
    if default.sample_rate() == SERVER_RATE {
        return default;
    }
    let Ok(mut configs) = device.supported_output_configs() else {
        return default;
    };
    configs
        .find(|c| {
            c.channels() == default.channels()
                && c.sample_format() == default.sample_format()
                && c.min_sample_rate() <= SERVER_RATE
                && SERVER_RATE <= c.max_sample_rate()
        })
        .map(|c| c.with_sample_rate(SERVER_RATE))
        .unwrap_or(default)
}

impl AudioSink for DeviceSink {
    fn write(&mut self, samples: &[f32]) -> Result<(), AudioError> {
        // No waiting for a flush to fade out: the callback drops only what came before it.
        self.health()?;
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
        // The resampler's delay is dropped at the start of each run, so no offset here.
        let dev = self.run_dev + (rel * self.resampler.ratio()).round() as u64;
        let generation = self.shared.flush_req.load(Ordering::Acquire);
        if self.marks.try_push((dev, tag, generation)).is_err() {
            tracing::warn!("too many pending audio markers; one was dropped");
        }
    }

    fn buffered_ms(&self) -> f64 {
        let sh = &self.shared;
        let mut read = sh.read_pos.load(Ordering::Acquire);
        if sh.flush_ack.load(Ordering::Acquire) != sh.flush_req.load(Ordering::Acquire) {
            // Audio before a pending flush will not play.
            read = read.max(sh.flush_upto.load(Ordering::Acquire));
        }
        let dev = self.write_pos.saturating_sub(read) as f64 / self.device_rate as f64;
        let src =
            self.resampler.pending() as f64 / self.device_rate as f64 * self.resampler.ratio();
        (dev + src) * 1000.0
    }

    fn drain(&mut self) -> Result<(), AudioError> {
        if self.resampler.pending() == 0 && self.src_written == self.run_src {
            return Ok(());
        }
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
        // Everything up to here goes; set before the request the callback acts on.
        self.shared
            .flush_upto
            .store(self.write_pos, Ordering::Release);
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

    fn cue_port(&self) -> Option<Arc<dyn CuePort>> {
        Some(Arc::clone(&self.cues) as Arc<dyn CuePort>)
    }

    fn underruns(&self) -> u64 {
        self.shared.underruns.load(Ordering::Relaxed)
    }

    /// The device keeps playing its buffer dry (see [`Shared::drained`]): refills of the
    /// whole buffer are at least 1 in 20 and not a one-off.
    fn buffer_too_small(&self) -> bool {
        let drained = self.shared.drained.load(Ordering::Relaxed);
        let calls = self.shared.calls.load(Ordering::Relaxed);
        self.buffer_frames.is_some() && drained >= DRAINED_MIN && drained * 20 >= calls
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
            && now.saturating_sub(last) > STALL.as_nanos() as u64
        {
            return Err(AudioError::Stream(
                "the audio device stopped responding".into(),
            ));
        }
        Ok(())
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
                    // Runs outside the data callback, so a lock is fine here. A lost device
                    // is fatal, and so is a flood of errors with no audio asked for in
                    // between (ALSA polling a dead server); other errors (an xrun) are
                    // logged once per burst, and stalls are caught by `health`.
                    let burst = err_shared
                        .errors_since_callback
                        .fetch_add(1, Ordering::AcqRel);
                    if burst == 0 {
                        tracing::warn!("audio device error: {err}");
                    }
                    let lost = matches!(err, cpal::StreamError::DeviceNotAvailable);
                    if lost || burst + 1 == ERROR_FLOOD {
                        err_shared.fail(err.to_string());
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

/// The default output device, asking for a callback period of `buffer_ms`.
struct Device {
    /// What the next open asks for: the caller's size, or larger once the device has
    /// played a smaller one dry.
    buffer_ms: AtomicU32,
    tap: Option<PathBuf>,
}

impl OpenSink for Device {
    fn open(
        &self,
        source_rate: u32,
        on_mark: MarkFn,
        transport: Arc<Transport>,
    ) -> Result<Box<dyn AudioSink>, AudioError> {
        let asked = self.buffer_ms.load(Ordering::Relaxed);
        let sink = DeviceSink::open(source_rate, on_mark, transport, asked, self.tap.as_deref())?;
        if let Some(frames) = sink.buffer_frames {
            // The size the start-up check settled on, so a reopen does not try again.
            let ms = (frames as u64 * 1000 / sink.device_rate.max(1) as u64) as u32;
            self.buffer_ms
                .fetch_max(ms.min(MAX_BUFFER_MS), Ordering::Relaxed);
        }
        Ok(Box::new(sink))
    }

    fn grow_buffer(&self) -> bool {
        let ms = self.buffer_ms.load(Ordering::Relaxed);
        if ms >= MAX_BUFFER_MS {
            return false;
        }
        let next = (ms * GROWTH).min(MAX_BUFFER_MS);
        tracing::info!("the device played its {ms} ms buffer dry again and again: {next} ms next");
        self.buffer_ms.store(next, Ordering::Relaxed);
        true
    }
}

/// A stand-in for a sound card: the same callback on a timer thread.
struct Simulated {
    period_ms: u32,
    speed: f64,
}

impl OpenSink for Simulated {
    fn open(
        &self,
        source_rate: u32,
        on_mark: MarkFn,
        transport: Arc<Transport>,
    ) -> Result<Box<dyn AudioSink>, AudioError> {
        let sink =
            DeviceSink::simulated(source_rate, on_mark, transport, self.period_ms, self.speed)?;
        Ok(Box::new(sink))
    }
}

/// The engine's output on the default device; `buffer_ms` asks for that callback period
/// (default 10 ms; the smallest the device grants near it is used).
/// `HARK_AUDIO_TAP=FILE` taps it (see [`device_tapped`]).
pub fn device(buffer_ms: Option<u32>) -> Output {
    device_tapped(
        buffer_ms,
        std::env::var_os("HARK_AUDIO_TAP").map(PathBuf::from),
    )
}

/// [`device`], also appending every sample the callback hands the device to `tap` (mono f32,
/// little-endian, at the device's rate): what left Hark, so that a test can tell a sample Hark
/// lost from one that the sound server or a recorder dropped after it.
pub fn device_tapped(buffer_ms: Option<u32>, tap: Option<PathBuf>) -> Output {
    let buffer_ms = buffer_ms.unwrap_or(DEFAULT_BUFFER_MS);
    Output::Sink(Arc::new(Device {
        buffer_ms: AtomicU32::new(buffer_ms),
        tap,
    }))
}

/// A simulated device (no sound card needed): a timer thread runs the real audio callback
/// every `period_ms` (default 10 ms, as asked of real devices) at 48 kHz and drops its
/// samples. Everything up to the callback is the device path, so onset, stop and underruns
/// mean the same as on a device; for benchmarks and tests on machines without audio.
pub fn simulated(period_ms: Option<u32>) -> Output {
    simulated_at(period_ms, 1.0)
}

/// [`simulated`], with a clock `speed` times faster than real time (the callback still
/// hands out one device period of audio each time, only sooner): for soak runs that push
/// thousands of utterances through the real streaming path.
pub fn simulated_at(period_ms: Option<u32>, speed: f64) -> Output {
    let period_ms = period_ms.unwrap_or(DEFAULT_BUFFER_MS);
    let speed = if speed.is_finite() && speed > 0.0 {
        speed
    } else {
        1.0
    };
    Output::Sink(Arc::new(Simulated { period_ms, speed }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    const RATE: u32 = 22_050;

    /// Markers that fired: (tag, when).
    type Hits = Arc<Mutex<Vec<(u64, Instant)>>>;

    /// A simulated device (5 ms callbacks) recording which markers fired and when.
    fn sink() -> (DeviceSink, Arc<Transport>, Hits) {
        let hits: Hits = Arc::default();
        let seen = Arc::clone(&hits);
        let on_mark: MarkFn = Arc::new(move |tag, at| seen.lock().unwrap().push((tag, at)));
        let transport: Arc<Transport> = Arc::default();
        let s = DeviceSink::simulated(RATE, on_mark, Arc::clone(&transport), 5, 1.0).unwrap();
        (s, transport, hits)
    }

    fn wait_for(hits: &Mutex<Vec<(u64, Instant)>>, tag: u64) -> Option<Instant> {
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Some(&(_, at)) = hits.lock().unwrap().iter().find(|h| h.0 == tag) {
                return Some(at);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        None
    }

    #[test]
    fn audio_written_right_after_a_flush_plays_and_its_markers_fire() {
        let (mut s, _, hits) = sink();
        // Two seconds of old audio, with a marker at its very end.
        s.write(&vec![0.5; 2 * RATE as usize]).unwrap();
        s.mark(s.written() - 1, 1);
        std::thread::sleep(Duration::from_millis(50));
        // Flush, and at once (before the callback has faded out) queue new audio.
        s.flush();
        let flushed = Instant::now();
        s.mark(s.written(), 2);
        s.write(&vec![0.25; RATE as usize / 10]).unwrap();
        assert!(
            s.buffered_ms() < 150.0,
            "old audio still counted: {}",
            s.buffered_ms()
        );
        let new_start = wait_for(&hits, 2).expect("the new audio's marker never fired");
        // The new audio came right after the fade, not after the old two seconds.
        assert!(new_start.duration_since(flushed) < Duration::from_secs(1));
        assert!(
            hits.lock().unwrap().iter().all(|h| h.0 != 1),
            "a marker of the flushed audio fired"
        );
    }

    #[test]
    fn a_pause_at_a_mark_holds_there_and_reports_nothing_after_it() {
        use hark_engine::output::NAMED_MARK;
        let (mut s, transport, hits) = sink();
        transport.pause_at_mark.store(true, Ordering::Release);
        // 0.3 s, a plain marker, then two SSML marks at one sample (speech-dispatcher's
        // `__spd_0` and the client's own), then more audio with a marker in it.
        s.write(&vec![0.5; RATE as usize * 3 / 10]).unwrap();
        let at = s.written();
        s.mark(at, 1);
        s.mark(at, 2 | NAMED_MARK);
        s.mark(at, 3 | NAMED_MARK);
        s.write(&vec![0.5; RATE as usize]).unwrap();
        s.mark(s.written() - 100, 4);
        s.write(&vec![0.5; 40 * 512]).unwrap();
        let held = wait_for(&hits, 2 | NAMED_MARK).expect("the first mark never fired");
        assert!(transport.paused.load(Ordering::Acquire), "not paused");
        assert!(!transport.pause_at_mark.load(Ordering::Acquire));
        std::thread::sleep(Duration::from_millis(300));
        let fired: Vec<u64> = hits.lock().unwrap().iter().map(|h| h.0).collect();
        assert_eq!(fired, [1, 2 | NAMED_MARK], "held at the first mark only");
        // Resumed, it goes on from there: the second mark, then the rest.
        transport.paused.store(false, Ordering::Release);
        let later = wait_for(&hits, 4).expect("the audio after the hold never played");
        assert!(later.duration_since(held) > Duration::from_millis(900));
        let fired: Vec<u64> = hits.lock().unwrap().iter().map(|h| h.0).collect();
        assert_eq!(fired, [1, 2 | NAMED_MARK, 3 | NAMED_MARK, 4]);
    }

    #[test]
    fn a_stop_fades_out_and_reports_when() {
        let (mut s, transport, _) = sink();
        // Whole resampler chunks, so nothing is held back outside the ring.
        s.write(&vec![0.5; 40 * 512]).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let asked = Instant::now();
        let stop = transport.stop.fetch_add(1, Ordering::AcqRel) + 1;
        let deadline = Instant::now() + Duration::from_secs(3);
        let faded = loop {
            if let Some(t) = transport.stop_faded_at(stop) {
                break t;
            }
            assert!(Instant::now() < deadline, "the stop never completed");
            std::thread::sleep(Duration::from_millis(1));
        };
        assert!(faded >= asked);
        // Everything queued was dropped.
        std::thread::sleep(Duration::from_millis(30));
        assert!(s.buffered_ms() < 1.0, "{} ms still queued", s.buffered_ms());
        assert!(transport.period().is_some());
    }

    /// A callback that must refill the whole device buffer every time (the server's cycle is
    /// as long as the buffer) is what `buffer_too_small` reports; one that refills part of it
    /// is not.
    #[test]
    fn a_buffer_refilled_whole_every_callback_is_too_small() {
        for (whole, too_small) in [(1, true), (2, false)] {
            let (s, _, _) = sink();
            // The simulated device asks for 5 ms a callback: call that the whole buffer, or
            // half of it.
            let period = CLOCK_RATE * 5 / 1000;
            s.shared
                .buffer_frames
                .store(period * whole, Ordering::Relaxed);
            let deadline = Instant::now() + Duration::from_secs(2);
            while s.shared.calls.load(Ordering::Relaxed) < 30 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            assert!(
                s.shared.calls.load(Ordering::Relaxed) >= 30,
                "the clock did not run"
            );
            assert_eq!(s.buffer_too_small(), too_small, "buffer of {whole} periods");
        }
    }

    /// The tap holds what the callback handed out, sample for sample, once the sink is gone.
    #[test]
    fn the_tap_writes_every_sample_the_callback_hands_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tap.f32");
        let transport: Arc<Transport> = Arc::default();
        let on_mark: MarkFn = Arc::new(|_, _| {});
        let (mut cb, parts) =
            Parts::new(CLOCK_RATE, CLOCK_RATE, 1, on_mark, &transport, Some(&path)).unwrap();
        let mut sink = parts.into_sink(Driver::Manual, None);
        let speech: Vec<f32> = (0..4800)
            .map(|i| ((i % 97) as f32 - 48.0) / 100.0)
            .collect();
        sink.write(&speech).unwrap();
        sink.drain().unwrap();
        let mut out = vec![0f32; 256];
        let mut handed = Vec::new();
        for _ in 0..30 {
            cb.fill(&mut out);
            handed.extend_from_slice(&out);
        }
        drop(cb);
        drop(sink);
        let bytes = std::fs::read(&path).unwrap();
        let tapped: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(tapped, handed);
        assert!(
            handed.iter().any(|&v| v != 0.0),
            "nothing but silence was handed out"
        );
    }
}
