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

struct Job {
    id: UtteranceId,
    epoch: u64,
    text: Arc<str>,
    requested: Instant,
}

enum Cmd {
    Speak(Job),
    /// A stop happened: silence what is buffered.
    Wake,
    Shutdown,
}

struct Shared {
    epoch: AtomicU64,
    paused: AtomicBool,
    queued: AtomicUsize,
    settings: Mutex<Settings>,
}

pub struct Engine {
    cmds: mpsc::Sender<Cmd>,
    shared: Arc<Shared>,
    next_id: AtomicU64,
    backend: String,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Engine {
    /// Opens the audio device and readies the voice on the engine thread; blocks until then.
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
        let (cmd_tx, cmd_rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let backend = format!("cpu ({} threads)", std::thread::available_parallelism().map_or(1, |n| n.get()));
        let worker = Worker {
            synth,
            rate,
            player: None,
            shared: Arc::clone(&shared),
            events,
            backend: backend.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("hark-engine".into())
            .spawn(move || worker.run(cmd_rx, ready_tx))
            .map_err(|e| EngineError::Sink(format!("cannot start the engine thread: {e}")))?;
        match ready_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(())) => {}
            Ok(Err(msg)) => {
                let _ = thread.join();
                return Err(EngineError::Sink(msg));
            }
            Err(_) => return Err(EngineError::Sink("the engine thread did not start".into())),
        }
        Ok((
            Engine {
                cmds: cmd_tx,
                shared,
                next_id: AtomicU64::new(1),
                backend,
                thread: Some(thread),
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
        let _ = self.cmds.send(Cmd::Speak(Job {
            id,
            epoch: self.shared.epoch.load(Ordering::Acquire),
            text: Arc::from(text),
            requested,
        }));
        id
    }

    pub fn stop(&self) {
        self.shared.epoch.fetch_add(1, Ordering::AcqRel);
        self.shared.paused.store(false, Ordering::Release);
        let _ = self.cmds.send(Cmd::Wake);
    }

    pub fn pause(&self) {
        self.shared.paused.store(true, Ordering::Release);
    }

    pub fn resume(&self) {
        self.shared.paused.store(false, Ordering::Release);
    }

    pub fn set_settings(&self, settings: Settings) {
        *self.shared.settings.lock().unwrap_or_else(|e| e.into_inner()) = settings;
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop();
        let _ = self.cmds.send(Cmd::Shutdown);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Worker {
    synth: Synthesizer,
    rate: u32,
    player: Option<Player>,
    shared: Arc<Shared>,
    events: EventTx,
    backend: String,
}

impl Worker {
    fn run(mut self, cmds: mpsc::Receiver<Cmd>, ready: mpsc::SyncSender<Result<(), String>>) {
        match Player::open(self.rate) {
            Ok(p) => self.player = Some(p),
            Err(e) => {
                let _ = ready.send(Err(e.to_string()));
                return;
            }
        }
        let _ = ready.send(Ok(()));
        let mut heard_epoch = self.epoch();
        while let Ok(cmd) = cmds.recv() {
            match cmd {
                Cmd::Speak(job) => {
                    self.shared.queued.fetch_sub(1, Ordering::Relaxed);
                    self.job(job);
                }
                Cmd::Wake => {}
                Cmd::Shutdown => break,
            }
            if self.epoch() != heard_epoch {
                heard_epoch = self.epoch();
                self.silence();
            }
        }
    }

    fn epoch(&self) -> u64 {
        self.shared.epoch.load(Ordering::Acquire)
    }

    /// Drops what the device has buffered by reopening it.
    fn silence(&mut self) {
        self.player = None;
        match Player::open(self.rate) {
            Ok(p) => self.player = Some(p),
            Err(e) => self.send(Event::Error {
                id: None,
                message: e.to_string(),
            }),
        }
    }

    fn send(&self, ev: Event) {
        let _ = self.events.send(ev);
    }

    fn job(&mut self, job: Job) {
        let id = job.id;
        let mut onset = None;
        let mut audio_samples = 0usize;
        let mut synth_time = Duration::ZERO;
        let mut stopped = job.epoch != self.epoch();
        let mut base = 0;
        while !stopped && base < job.text.len() {
            let end = window_end(&job.text, base, WINDOW_BYTES);
            for r in hark::text::split_sentences(&job.text[base..end], 2000) {
                let range = base + r.start..base + r.end;
                let mut mark = Instant::now();
                let scales = self.settings().scales;
                self.synth.scales = scales;
                let mut first = true;
                let result = {
                    let Worker {
                        synth,
                        player,
                        shared,
                        events,
                        ..
                    } = self;
                    synth.speak_text(&job.text[range.clone()], |audio| {
                        synth_time += mark.elapsed();
                        if first {
                            first = false;
                            if onset.is_none() {
                                onset = Some(job.requested.elapsed().as_secs_f64() * 1e3);
                                let _ = events.send(Event::Started { id });
                            }
                            let _ = events.send(Event::Progress {
                                id,
                                char_range: range.clone(),
                            });
                        }
                        audio_samples += audio.len();
                        let played = play(player, shared, job.epoch, audio);
                        mark = Instant::now();
                        played
                    })
                };
                match result {
                    Ok(_) | Err(EngineError::EmptyText | EngineError::NothingSpeakable) => {}
                    Err(EngineError::Sink(m)) if m == STOPPED => {
                        stopped = true;
                        break;
                    }
                    Err(e) => self.send(Event::Error {
                        id: Some(id),
                        message: e.to_string(),
                    }),
                }
            }
            base = end;
        }
        let secs = audio_samples as f64 / self.rate as f64;
        self.send(Event::Stats(Stats {
            id,
            onset_ms: onset,
            rtf: if secs > 0.0 {
                synth_time.as_secs_f64() / secs
            } else {
                0.0
            },
            queue_depth: self.shared.queued.load(Ordering::Relaxed),
            backend: self.backend.clone(),
        }));
        self.send(Event::Finished { id, stopped });
    }

    fn settings(&self) -> Settings {
        *self
            .shared
            .settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

const STOPPED: &str = "stopped";

/// Writes in small slices so a stop or pause takes effect within one slice.
fn play(
    player: &mut Option<Player>,
    shared: &Shared,
    epoch: u64,
    audio: &[f32],
) -> Result<(), String> {
    let Some(player) = player.as_mut() else {
        return Err("no audio output device".into());
    };
    for slice in audio.chunks(WRITE_SLICE) {
        while shared.paused.load(Ordering::Acquire) && shared.epoch.load(Ordering::Acquire) == epoch
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        if shared.epoch.load(Ordering::Acquire) != epoch {
            return Err(STOPPED.into());
        }
        let gain = shared
            .settings
            .lock()
            .map_or(1.0, |s| s.volume);
        let scaled: Vec<f32> = slice.iter().map(|s| (s * gain).clamp(-1.0, 1.0)).collect();
        player.write(&scaled).map_err(|e| e.to_string())?;
    }
    Ok(())
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
