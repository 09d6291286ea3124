//! A stand-in for the streaming engine (`hark::engine::Engine`, issue 4) with the same surface:
//! `start` → a handle whose methods never block plus a tokio channel of [`Event`]s.
//! It drives the synchronous `Synthesizer` and `Player` from one thread, a sentence at a time.
//! When the streaming engine lands, `managers/engine.rs` switches its imports to it and this
//! file goes.

use hark::audio::Player;
use hark::engine::{BackendChoice, EngineError, Synthesizer};
use hark::model::Scales;
use hark::voice::Voice;
use serde::Serialize;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

pub type UtteranceId = u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Interrupt,
    Queue,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    pub scales: Scales,
    pub volume: f32,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    pub id: UtteranceId,
    pub onset_ms: Option<f64>,
    pub rtf: f64,
    pub queue_depth: usize,
    pub backend: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Started {
        id: UtteranceId,
    },
    Progress {
        id: UtteranceId,
        char_range: Range<usize>,
    },
    Finished {
        id: UtteranceId,
        stopped: bool,
    },
    Error {
        id: Option<UtteranceId>,
        message: String,
    },
    Stats(Stats),
}

pub type Events = tokio::sync::mpsc::UnboundedReceiver<Event>;
type EventTx = tokio::sync::mpsc::UnboundedSender<Event>;

/// Text handed to the synthesiser per call: short enough that sentence splitting stays cheap
/// on a 10 MB clipboard.
const WINDOW_BYTES: usize = 16 * 1024;
/// Samples written to the device per step, so stop/pause are seen within ~50 ms.
const WRITE_SLICE: usize = 1024;
/// How far playback may run ahead of the clock: bounds how late a pause takes effect.
const LEAD_SECS: f64 = 0.25;
/// Sentences of audio waiting between the synthesis and playback threads.
const AUDIO_QUEUE: usize = 4;

struct Job {
    id: UtteranceId,
    epoch: u64,
    text: Arc<str>,
    requested: Instant,
}

/// Synthesis → playback.
enum Out {
    Audio {
        id: UtteranceId,
        epoch: u64,
        samples: Vec<f32>,
        /// Set on the first audio of each piece of text.
        progress: Option<Range<usize>>,
        requested: Instant,
    },
    Done {
        id: UtteranceId,
        synth_secs: f64,
        audio_secs: f64,
    },
    /// A stop happened: drop what the device has buffered.
    Wake,
}

struct Shared {
    epoch: AtomicU64,
    paused: AtomicBool,
    queued: AtomicUsize,
    settings: Mutex<Settings>,
}

impl Shared {
    fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    fn settings(&self) -> Settings {
        *self.settings.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running engine: a synthesis thread and a playback thread. Dropping it stops speech.
pub struct Engine {
    jobs: Option<mpsc::Sender<Job>>,
    wake: mpsc::SyncSender<Out>,
    shared: Arc<Shared>,
    next_id: AtomicU64,
    backend: String,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Engine {
    /// Opens the audio device and readies the voice; blocks until both are done.
    pub fn start(
        voice: Voice,
        backend: BackendChoice,
        settings: Settings,
    ) -> Result<(Engine, Events), EngineError> {
        let synth = Synthesizer::new(voice, backend)?;
        let rate = synth.voice.config.sample_rate;
        let (events, rx) = tokio::sync::mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            paused: AtomicBool::new(false),
            queued: AtomicUsize::new(0),
            settings: Mutex::new(settings),
        });
        let backend = format!(
            "cpu ({} threads)",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
        let (audio_tx, audio_rx) = mpsc::sync_channel(AUDIO_QUEUE);
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let spawn_err =
            |e: std::io::Error| EngineError::Sink(format!("cannot start a thread: {e}"));
        let player = Playback {
            rate,
            shared: Arc::clone(&shared),
            events: events.clone(),
            backend: backend.clone(),
        };
        let playback = std::thread::Builder::new()
            .name("hark-playback".into())
            .spawn(move || player.run(audio_rx, ready_tx))
            .map_err(spawn_err)?;
        match ready_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(())) => {}
            Ok(Err(msg)) => {
                let _ = playback.join();
                return Err(EngineError::Sink(msg));
            }
            Err(_) => return Err(EngineError::Sink("the audio thread did not start".into())),
        }
        let (job_tx, job_rx) = mpsc::channel();
        let sh = Arc::clone(&shared);
        let out = audio_tx.clone();
        let synthesis = std::thread::Builder::new()
            .name("hark-synth".into())
            .spawn(move || synthesize(synth, job_rx, out, sh, events))
            .map_err(spawn_err)?;
        Ok((
            Engine {
                jobs: Some(job_tx),
                wake: audio_tx,
                shared,
                next_id: AtomicU64::new(1),
                backend,
                threads: vec![synthesis, playback],
            },
            rx,
        ))
    }

    pub fn backend(&self) -> &str {
        &self.backend
    }

    pub fn speak(&self, text: &str, mode: Mode) -> UtteranceId {
        let requested = Instant::now();
        if mode == Mode::Interrupt {
            self.stop();
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.shared.queued.fetch_add(1, Ordering::Relaxed);
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job {
                id,
                epoch: self.shared.epoch(),
                text: Arc::from(text),
                requested,
            });
        }
        id
    }

    pub fn stop(&self) {
        self.shared.epoch.fetch_add(1, Ordering::AcqRel);
        self.shared.paused.store(false, Ordering::Release);
        // Never blocks: if the queue is full, playback is awake and sees the new epoch anyway.
        let _ = self.wake.try_send(Out::Wake);
    }

    pub fn pause(&self) {
        self.shared.paused.store(true, Ordering::Release);
    }

    pub fn resume(&self) {
        self.shared.paused.store(false, Ordering::Release);
    }

    pub fn set_settings(&self, settings: Settings) {
        *self
            .shared
            .settings
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = settings;
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop();
        // Closing the job channel ends synthesis, which closes the audio channel's last
        // other sender; playback ends when that and `wake` are gone.
        self.jobs.take();
        let (tx, _) = mpsc::sync_channel(1);
        drop(std::mem::replace(&mut self.wake, tx));
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The synthesis thread: text → sentences → audio, a sentence ahead of playback at most
/// `AUDIO_QUEUE` sentences.
fn synthesize(
    mut synth: Synthesizer,
    jobs: mpsc::Receiver<Job>,
    out: mpsc::SyncSender<Out>,
    shared: Arc<Shared>,
    events: EventTx,
) {
    while let Ok(job) = jobs.recv() {
        shared.queued.fetch_sub(1, Ordering::Relaxed);
        let id = job.id;
        let mut synth_secs = 0.0;
        let mut audio_secs = 0.0;
        let mut base = 0;
        let rate = synth.voice.config.sample_rate as f64;
        'job: while job.epoch == shared.epoch() && base < job.text.len() {
            let end = window_end(&job.text, base, WINDOW_BYTES);
            for r in hark::text::split_sentences(&job.text[base..end], 2000) {
                let range = base + r.start..base + r.end;
                synth.scales = shared.settings().scales;
                let mut mark = Instant::now();
                let mut progress = Some(range.clone());
                let result = synth.speak_text(&job.text[range.clone()], |audio| {
                    synth_secs += mark.elapsed().as_secs_f64();
                    audio_secs += audio.len() as f64 / rate;
                    if job.epoch != shared.epoch() {
                        return Err(STOPPED.into());
                    }
                    out.send(Out::Audio {
                        id,
                        epoch: job.epoch,
                        samples: audio.to_vec(),
                        progress: progress.take(),
                        requested: job.requested,
                    })
                    .map_err(|_| STOPPED.to_string())?;
                    mark = Instant::now();
                    Ok(())
                });
                match result {
                    Ok(_) | Err(EngineError::EmptyText | EngineError::NothingSpeakable) => {}
                    Err(EngineError::Sink(m)) if m == STOPPED => break 'job,
                    Err(e) => {
                        let _ = events.send(Event::Error {
                            id: Some(id),
                            message: e.to_string(),
                        });
                    }
                }
            }
            base = end;
        }
        if out
            .send(Out::Done {
                id,
                synth_secs,
                audio_secs,
            })
            .is_err()
        {
            return;
        }
    }
}

const STOPPED: &str = "stopped";

/// The playback thread: owns the device, paces writes a little ahead of the clock, and
/// drops everything buffered on a stop.
struct Playback {
    rate: u32,
    shared: Arc<Shared>,
    events: EventTx,
    backend: String,
}

/// The playback clock: how much audio went to the device since `start`.
struct Clock {
    start: Instant,
    written: f64,
}

impl Clock {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            written: 0.0,
        }
    }

    fn ahead(&mut self) -> f64 {
        let ahead = self.written - self.start.elapsed().as_secs_f64();
        if ahead < 0.0 {
            // Ran dry (or was idle): restart the clock from now.
            *self = Self::new();
            return 0.0;
        }
        ahead
    }
}

impl Playback {
    fn send(&self, ev: Event) {
        let _ = self.events.send(ev);
    }

    fn run(self, rx: mpsc::Receiver<Out>, ready: mpsc::SyncSender<Result<(), String>>) {
        let mut player = match Player::open(self.rate) {
            Ok(p) => Some(p),
            Err(e) => {
                let _ = ready.send(Err(e.to_string()));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        let mut epoch = self.shared.epoch();
        let mut clock = Clock::new();
        // (id, onset ms) of the utterance being played.
        let mut onset: Option<(UtteranceId, f64)> = None;
        loop {
            let msg = match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(m) => Some(m),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            };
            if self.shared.epoch() != epoch {
                epoch = self.shared.epoch();
                player = self.reopen(player);
                clock = Clock::new();
            }
            match msg {
                None | Some(Out::Wake) => {}
                Some(Out::Audio {
                    id,
                    epoch: e,
                    samples,
                    progress,
                    requested,
                }) => {
                    if e != epoch {
                        continue;
                    }
                    if onset.is_none_or(|(o, _)| o != id) {
                        onset = Some((id, requested.elapsed().as_secs_f64() * 1e3));
                        self.send(Event::Started { id });
                    }
                    if let Some(char_range) = progress {
                        self.send(Event::Progress { id, char_range });
                    }
                    if let Err(msg) = self.play(&mut player, &mut clock, epoch, &samples)
                        && msg != STOPPED
                    {
                        self.send(Event::Error {
                            id: Some(id),
                            message: msg,
                        });
                    }
                }
                Some(Out::Done {
                    id,
                    synth_secs,
                    audio_secs,
                }) => {
                    let stopped = self.shared.epoch() != epoch || audio_secs == 0.0;
                    self.send(Event::Stats(Stats {
                        id,
                        onset_ms: onset.filter(|(o, _)| *o == id).map(|(_, ms)| ms),
                        rtf: if audio_secs > 0.0 {
                            synth_secs / audio_secs
                        } else {
                            0.0
                        },
                        queue_depth: self.shared.queued.load(Ordering::Relaxed),
                        backend: self.backend.clone(),
                    }));
                    self.send(Event::Finished { id, stopped });
                }
            }
        }
    }

    /// Drops the device (silencing what it buffered) and opens it again.
    fn reopen(&self, old: Option<Player>) -> Option<Player> {
        drop(old);
        match Player::open(self.rate) {
            Ok(p) => Some(p),
            Err(e) => {
                self.send(Event::Error {
                    id: None,
                    message: e.to_string(),
                });
                None
            }
        }
    }

    /// Writes in small slices, never more than `LEAD_SECS` ahead, watching stop and pause.
    fn play(
        &self,
        player: &mut Option<Player>,
        clock: &mut Clock,
        epoch: u64,
        audio: &[f32],
    ) -> Result<(), String> {
        let Some(p) = player.as_mut() else {
            return Err("no audio output device".into());
        };
        for slice in audio.chunks(WRITE_SLICE) {
            while (self.shared.paused.load(Ordering::Acquire) || clock.ahead() > LEAD_SECS)
                && self.shared.epoch() == epoch
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            if self.shared.epoch() != epoch {
                return Err(STOPPED.into());
            }
            let gain = self.shared.settings().volume;
            let scaled: Vec<f32> = slice.iter().map(|s| (s * gain).clamp(-1.0, 1.0)).collect();
            p.write(&scaled).map_err(|e| e.to_string())?;
            clock.written += slice.len() as f64 / self.rate as f64;
        }
        Ok(())
    }
}

/// End of the next window of at most `max` bytes, cut after whitespace when there is some.
pub fn window_end(text: &str, start: usize, max: usize) -> usize {
    if text.len() - start <= max {
        return text.len();
    }
    let mut end = start + max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match text[start..end].rfind(char::is_whitespace) {
        Some(i) if i > 0 => {
            let ws = text[start + i..].chars().next().map_or(1, char::len_utf8);
            start + i + ws
        }
        _ => end,
    }
}

#[cfg(test)]
mod tests {
    use super::window_end;

    #[test]
    fn windows_cut_after_whitespace_and_on_char_boundaries() {
        let t = "aaaa bbbb cccc";
        assert_eq!(window_end(t, 0, 7), 5);
        assert_eq!(window_end(t, 5, 100), t.len());
        let u = "éééééééé";
        let e = window_end(u, 0, 5);
        assert!(u.is_char_boundary(e) && e <= 5 && e > 0);
    }
}
