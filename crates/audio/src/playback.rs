//! Playback on the default output device through cpal. The engine's 22.05 kHz mono samples are
//! resampled (rubato) to the device rate and handed to the callback through a lock-free ring,
//! so the callback never allocates or locks.

use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use cpal::{FromSample, SizedSample};
use hark_engine::output::AudioError;
use ringbuf::traits::{Consumer, Observer, Producer, Split};
use ringbuf::{HeapCons, HeapProd, HeapRb};
use rubato::{FftFixedIn, Resampler};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Input frames per resampler call: ~46 ms at 22.05 kHz, small enough for a quick start.
const RESAMPLE_CHUNK: usize = 1024;
/// Ring capacity in seconds of device audio.
const RING_SECONDS: f32 = 2.0;

struct Shared {
    /// Frames handed to the device (device rate).
    played: AtomicU64,
    underruns: AtomicU64,
    /// Set when the callback has run at least once.
    started: AtomicBool,
    error: Mutex<Option<String>>,
}

pub struct Player {
    _stream: cpal::Stream,
    producer: HeapProd<f32>,
    resampler: Option<FftFixedIn<f32>>,
    pending: Vec<f32>,
    channels: usize,
    device_rate: u32,
    source_rate: u32,
    queued_frames: u64,
    shared: Arc<Shared>,
}

impl Player {
    /// Opens the default output device for mono audio at `source_rate`.
    pub fn open(source_rate: u32) -> Result<Self, AudioError> {
        // ALSA without a sound server panics inside cpal; turn that into an error.
        let opened = std::panic::catch_unwind(|| {
            let host = cpal::default_host();
            let device = host.default_output_device().ok_or(AudioError::NoDevice)?;
            let config = device
                .default_output_config()
                .map_err(|e| AudioError::Open(e.to_string()))?;
            Ok::<_, AudioError>((device, config))
        });
        let (device, config) = match opened {
            Ok(r) => r?,
            Err(_) => {
                return Err(AudioError::Open(
                    "the audio backend crashed while probing".into(),
                ));
            }
        };
        let device_rate = config.sample_rate().0;
        let channels = config.channels() as usize;
        let capacity = (device_rate as f32 * RING_SECONDS) as usize * channels;
        let (producer, consumer) = HeapRb::<f32>::new(capacity).split();
        let shared = Arc::new(Shared {
            played: AtomicU64::new(0),
            underruns: AtomicU64::new(0),
            started: AtomicBool::new(false),
            error: Mutex::new(None),
        });
        let stream_config: cpal::StreamConfig = config.clone().into();
        let stream = match config.sample_format() {
            cpal::SampleFormat::F32 => build::<f32>(&device, &stream_config, consumer, &shared),
            cpal::SampleFormat::I16 => build::<i16>(&device, &stream_config, consumer, &shared),
            cpal::SampleFormat::U16 => build::<u16>(&device, &stream_config, consumer, &shared),
            cpal::SampleFormat::I32 => build::<i32>(&device, &stream_config, consumer, &shared),
            other => Err(AudioError::Open(format!(
                "unsupported sample format {other}"
            ))),
        }?;
        stream.play().map_err(|e| AudioError::Open(e.to_string()))?;
        let resampler = if device_rate == source_rate {
            None
        } else {
            Some(
                FftFixedIn::<f32>::new(
                    source_rate as usize,
                    device_rate as usize,
                    RESAMPLE_CHUNK,
                    2,
                    1,
                )
                .map_err(|e| AudioError::Resample(e.to_string()))?,
            )
        };
        Ok(Self {
            _stream: stream,
            producer,
            resampler,
            pending: Vec::new(),
            channels,
            device_rate,
            source_rate,
            queued_frames: 0,
            shared,
        })
    }

    pub fn device_rate(&self) -> u32 {
        self.device_rate
    }

    pub fn underruns(&self) -> u64 {
        self.shared.underruns.load(Ordering::Relaxed)
    }

    /// Queues mono samples at the source rate; blocks while the ring is full.
    pub fn write(&mut self, samples: &[f32]) -> Result<(), AudioError> {
        if self.resampler.is_none() {
            return self.push_frames(samples);
        }
        self.pending.extend_from_slice(samples);
        while self.pending.len() >= RESAMPLE_CHUNK {
            let chunk: Vec<f32> = self.pending.drain(..RESAMPLE_CHUNK).collect();
            let out = self.resample(&chunk, false)?;
            self.push_frames(&out)?;
        }
        Ok(())
    }

    /// Plays what is queued to the end and waits for it, with a timeout if the device stalls.
    pub fn finish(mut self) -> Result<(), AudioError> {
        if self.resampler.is_some() {
            let rest = std::mem::take(&mut self.pending);
            let out = self.resample(&rest, true)?;
            self.push_frames(&out)?;
        }
        // A little silence so the device's own buffer drains before the stream is dropped.
        let tail = vec![0.0; (self.device_rate / 10) as usize];
        self.push_device_frames(&tail)?;
        let deadline_for = |frames_left: u64| {
            Instant::now()
                + Duration::from_secs_f64(frames_left as f64 / self.device_rate as f64 + 2.0)
        };
        let mut last_played = self.shared.played.load(Ordering::Acquire);
        let mut deadline = deadline_for(self.queued_frames.saturating_sub(last_played));
        while self.shared.played.load(Ordering::Acquire) < self.queued_frames {
            self.check_error()?;
            let played = self.shared.played.load(Ordering::Acquire);
            if played != last_played {
                last_played = played;
                deadline = deadline_for(self.queued_frames - played);
            } else if Instant::now() > deadline {
                return Err(AudioError::Stream(
                    "the device stopped consuming audio".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    fn resample(&mut self, input: &[f32], last: bool) -> Result<Vec<f32>, AudioError> {
        let rs = self.resampler.as_mut().expect("resampler present");
        let out = if last {
            rs.process_partial(Some(&[input]), None)
        } else {
            rs.process(&[input], None)
        };
        out.map(|mut v| v.swap_remove(0))
            .map_err(|e| AudioError::Resample(e.to_string()))
    }

    fn push_frames(&mut self, mono: &[f32]) -> Result<(), AudioError> {
        self.push_device_frames(mono)
    }

    fn push_device_frames(&mut self, mono: &[f32]) -> Result<(), AudioError> {
        let mut frame = vec![0.0f32; self.channels];
        for &s in mono {
            frame.fill(s);
            let mut written = 0;
            let stall_deadline = Instant::now() + Duration::from_secs(5);
            while written < frame.len() {
                written += self.producer.push_slice(&frame[written..]);
                if written < frame.len() {
                    self.check_error()?;
                    if Instant::now() > stall_deadline {
                        return Err(AudioError::Stream(
                            "the device stopped consuming audio".into(),
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        }
        self.queued_frames += mono.len() as u64;
        Ok(())
    }

    fn check_error(&self) -> Result<(), AudioError> {
        match self.shared.error.lock().ok().and_then(|e| e.clone()) {
            Some(msg) => Err(AudioError::Stream(msg)),
            None => Ok(()),
        }
    }

    pub fn source_rate(&self) -> u32 {
        self.source_rate
    }
}

fn build<T>(
    device: &cpal::Device,
    config: &cpal::StreamConfig,
    mut consumer: HeapCons<f32>,
    shared: &Arc<Shared>,
) -> Result<cpal::Stream, AudioError>
where
    T: SizedSample + FromSample<f32>,
{
    let channels = config.channels as usize;
    let cb_shared = Arc::clone(shared);
    let err_shared = Arc::clone(shared);
    device
        .build_output_stream(
            config,
            move |out: &mut [T], _info: &cpal::OutputCallbackInfo| {
                cb_shared.started.store(true, Ordering::Relaxed);
                let mut filled = 0;
                for slot in out.iter_mut() {
                    match consumer.try_pop() {
                        Some(s) => {
                            *slot = T::from_sample(s);
                            filled += 1;
                        }
                        None => *slot = T::EQUILIBRIUM,
                    }
                }
                if filled < out.len() && consumer.is_empty() && filled > 0 {
                    cb_shared.underruns.fetch_add(1, Ordering::Relaxed);
                }
                cb_shared
                    .played
                    .fetch_add((filled / channels) as u64, Ordering::Release);
            },
            move |err| {
                if let Ok(mut slot) = err_shared.error.lock() {
                    *slot = Some(err.to_string());
                }
            },
            None,
        )
        .map_err(|e| AudioError::Open(e.to_string()))
}
