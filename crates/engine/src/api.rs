//! The streaming engine's public API: a handle whose methods never block (they send to the
//! engine's threads), and a stream of [`Event`]s on a tokio channel.
//!
//! ```text
//!  speak/append ──► phonemiser thread ──► phoneme queue (bounded) ──► engine thread ──► audio ring ──► callback
//!  stop/pause/…  ─────────────────────────────────────────────────────►  (backend)        (cpal)
//!                                                         events ◄── engine thread, marker thread
//! ```

use super::navigate::Nav;
use super::phonemise::Input;
use super::producer::{self, Job, JobInput};
use super::queue::BoundedQueue;
use super::steps::StepMode;
use super::worker::{self, Cmd, Item, Mark, SharedMarks};
use super::{BackendChoice, EngineError, GpuEngine, GpuOptions};
use crate::output::{Clip, CuePort, Output};
use crate::timing::SentenceTiming;
use hark_text::normalize::PunctuationVerbosity;
use hark_voice::Scales;
use hark_voice::Voice;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Identifies one utterance: the text of one `speak` call plus anything appended to it.
pub type UtteranceId = u64;

/// What `speak` does with speech already playing or queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Stop everything (with a short fade) and speak this now.
    Interrupt,
    /// Speak this after everything already queued.
    Queue,
}

/// Settings that can change while speaking; they apply from the next segment (scales, seed)
/// or the next step (steps), or at once (volume, speed, pitch).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub scales: Scales,
    /// Output gain, 0–2 (1 is unchanged).
    pub volume: f32,
    pub steps: StepMode,
    /// Noise seed; segment `k` of an utterance uses `seed + k`, like `hark speak --out`.
    pub seed: u64,
    /// Speed as a multiple of normal speed (the audio is `1/speed` as long as at 1×, pauses
    /// included), 0.5–6: the length scale does what it does cleanly, sonic the rest
    /// ([`crate::tempo::split`]). A change applies at once: sonic takes over the difference
    /// until the next segment, whose length scale is chosen afresh.
    #[serde(default = "one")]
    pub speed: f32,
    /// Pitch shift in semitones, −12 to +12 (sonic), at once.
    #[serde(default)]
    pub pitch: f32,
}

fn one() -> f32 {
    1.0
}

impl Settings {
    /// The voice's own defaults, full volume, adaptive steps, normal speed and pitch.
    pub fn for_voice(voice: &Voice) -> Self {
        Self {
            scales: voice.config.inference,
            volume: 1.0,
            steps: StepMode::Auto,
            seed: 0,
            speed: 1.0,
            pitch: 0.0,
        }
    }
}

/// How to start an engine.
pub struct EngineConfig {
    pub voice: Arc<Voice>,
    pub backend: BackendChoice,
    /// How the CUDA backend runs: graphs, the persistent kernel, or Auto (the engine that
    /// measured faster for onset on this GPU, else graphs).
    pub gpu_engine: GpuEngine,
    /// The CUDA backend's switches (binaries: from the `HARK_*` overrides).
    pub gpu: GpuOptions,
    /// Where the audio goes (default: nowhere; `hark_audio::device` plays it).
    pub output: Output,
    pub settings: Settings,
    /// Send `Event::Chunk` with the samples of every step.
    pub emit_chunks: bool,
    /// Segments the phoneme queue holds before the phonemiser waits.
    pub queue_capacity: usize,
    /// How text is cut: normalised (numbers, abbreviations, …; the default) or raw, the
    /// normaliser's options, segment lengths and the short first segment.
    pub segmenter: hark_text::segment::Segmenter,
    /// Skip the inaudible start (below −60 dBFS, at most 250 ms) of an utterance that starts
    /// into silence, so sound starts as soon as the voice does. Only what is played changes:
    /// `Event::Chunk` and `hark speak --out` keep every sample.
    pub trim_lead_in: bool,
    /// Warm the backend and the phonemiser up before `start` returns (≈ 0.1 s on a CPU), so
    /// the first utterance starts as fast as the rest. Off for a one-shot `hark speak`, whose
    /// first utterance comes at once (binaries turn it off everywhere for `HARK_WARMUP=0`).
    pub warm_up: bool,
    /// How much of the recent audio (at normal speed) the engine keeps, so that stepping
    /// back ([`Engine::previous_sentence`], [`Engine::skip`]) replays it from memory: at
    /// most this many seconds of samples at the voice's rate, whatever the input's length.
    pub keep_audio: Duration,
}

/// What [`EngineConfig::keep_audio`] is unless set: about a minute back.
pub const KEEP_AUDIO: Duration = Duration::from_secs(60);

impl EngineConfig {
    pub fn new(voice: Arc<Voice>) -> Self {
        let settings = Settings::for_voice(&voice);
        Self {
            voice,
            backend: BackendChoice::Auto,
            gpu_engine: GpuEngine::Auto,
            gpu: GpuOptions::default(),
            output: Output::None,
            settings,
            emit_chunks: false,
            queue_capacity: 16,
            segmenter: Default::default(),
            trim_lead_in: true,
            warm_up: true,
            keep_audio: KEEP_AUDIO,
        }
    }

    /// Applies the `HARK_*` overrides a binary read at start.
    pub fn with_overrides(mut self, o: &crate::Overrides) -> Self {
        self.warm_up &= o.warm_up;
        self.gpu = o.gpu;
        self
    }
}

/// Per-utterance figures, sent just before its `Finished`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    pub id: UtteranceId,
    /// From the `speak`/`append` call to the first non-silent sample handed to the audio
    /// callback (headless: to when it was synthesised). `None` if stopped before any sound.
    pub onset_ms: Option<f64>,
    /// Synthesis time / audio duration for this utterance.
    pub rtf: f64,
    /// Segments waiting in the phoneme queue when the utterance's synthesis ended.
    pub queue_depth: usize,
    pub backend: String,
    /// Times playback ran dry while this utterance had more audio coming.
    pub underruns: u64,
    /// Frames of the first decode step.
    pub first_step: usize,
    /// Where the time to the first audio went: from the `speak`/`append` call to the engine
    /// taking the first segment (phonemiser and hand-off), that segment's front half
    /// (encoder, durations, prior), and the first decode step; ms. The rest of the onset is
    /// the way through the ring to the callback.
    pub first_audio_path_ms: [Option<f64>; 3],
}

/// What the engine reports. Every id returned by `speak`/`append` gets exactly one
/// `Finished`; `Started` and `Progress` come when the audio reaches the device callback.
/// Serialises as `{"event": "finished", "id": 1, "stopped": false}` (chunk samples omitted).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Started {
        id: UtteranceId,
    },
    /// Audio as it will play (after the speed stage), as synthesised (ahead of playback), at
    /// the voice's rate, mono; only with `emit_chunks`.
    Chunk {
        id: UtteranceId,
        #[serde(skip_serializing)]
        samples: Vec<f32>,
    },
    /// The text now being spoken: a byte range of the utterance's text (its appended pieces
    /// concatenated): a sentence, or a clause of a long one.
    Progress {
        id: UtteranceId,
        char_range: Range<usize>,
    },
    /// An SSML `<mark>` of a document: the audio before it has reached the callback.
    Mark {
        id: UtteranceId,
        name: String,
    },
    /// A word starts: its first sample has reached the audio callback (headless: it has been
    /// synthesised). `char_range` is a byte range of the utterance's text, as for
    /// `Progress`, and lies within the latest `Progress` range. Every word of every sentence
    /// played gets one, in order; a stop drops those not yet heard.
    Word {
        id: UtteranceId,
        char_range: Range<usize>,
    },
    /// `stopped` when cut short by `stop` or an interrupting `speak`.
    Finished {
        id: UtteranceId,
        stopped: bool,
    },
    /// Something went wrong; the engine carries on. Never contains the user's text.
    Error {
        id: Option<UtteranceId>,
        message: String,
    },
    Stats(Stats),
}

pub type Events = tokio::sync::mpsc::UnboundedReceiver<Event>;

/// State shared by the handle and the engine's threads.
pub(crate) struct Control {
    /// `stop` is bumped by every stop (work tagged with an older epoch is dropped) and, with
    /// `paused`, read by the audio callback itself.
    pub transport: Arc<crate::output::Transport>,
    pub shutdown: AtomicBool,
    pub queue: BoundedQueue<Item>,
    pub book: Mutex<Book>,
    /// The latest `stop`: the transport's stop value it set, and when it was asked for.
    pub last_stop: Mutex<Option<(u64, Instant)>>,
    /// The latest utterance whose first audio has been written to the output.
    pub first_audio: AtomicU64,
    /// Events waiting for their sample to reach the callback.
    pub marks: SharedMarks,
    /// The output's way to play clips past the engine thread (set when it opens).
    pub cue: Mutex<Option<Arc<dyn CuePort>>>,
    /// The latest sentences synthesised, with where their words are ([`Engine::timeline`]).
    pub timeline: Mutex<std::collections::VecDeque<(UtteranceId, SentenceTiming)>>,
    /// Sentences the backend has begun to synthesise ([`Engine::sentences_synthesised`]).
    pub sentences_begun: AtomicU64,
    /// Samples kept for replay ([`Engine::kept_audio_samples`]).
    pub kept_samples: AtomicU64,
    /// The backend speaking now ([`Engine::backend`]): it changes when the GPU's kernels are
    /// ready after a CPU start, or when the GPU fails.
    pub backend_name: Mutex<String>,
}

/// Which utterances still have text on its way (jobs not yet fully queued).
#[derive(Default)]
pub(crate) struct Book {
    pub open: HashMap<UtteranceId, usize>,
    /// The utterance `append` continues, and its text length so far.
    pub last: Option<(UtteranceId, usize)>,
    /// Ids dropped by a stop, for the engine to finish.
    pub stopped: Vec<UtteranceId>,
}

impl Control {
    pub fn set_backend_name(&self, name: &str) {
        *self.backend_name.lock().unwrap_or_else(|e| e.into_inner()) = name.to_string();
    }

    pub fn epoch(&self) -> u64 {
        self.transport.stop.load(Ordering::Acquire)
    }

    pub fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_cue_port(&self, port: Option<Arc<dyn CuePort>>) {
        *self.cue.lock().unwrap_or_else(|e| e.into_inner()) = port;
    }

    fn cue_port(&self) -> Option<Arc<dyn CuePort>> {
        self.cue.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A running engine. Dropping it stops speech and joins its threads.
pub struct Engine {
    control: Arc<Control>,
    next_id: AtomicU64,
    jobs: Mutex<Option<mpsc::Sender<producer::ToProducer>>>,
    cmds: mpsc::Sender<Cmd>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// Sentences [`Engine::timeline`] keeps.
pub const TIMELINE_SENTENCES: usize = 256;

/// How long `start` waits for the engine thread to build the backend and open the device.
const START_TIMEOUT: Duration = Duration::from_secs(120);

impl Engine {
    /// Starts the phonemiser and engine threads. The backend and the audio device are created
    /// on the engine thread (a CUDA context must live there); this waits until they are ready.
    /// Blocking: from async code call it inside `spawn_blocking`.
    pub fn start(config: EngineConfig) -> Result<(Engine, Events), EngineError> {
        let (events, rx) = tokio::sync::mpsc::unbounded_channel();
        let control = Arc::new(Control {
            transport: Arc::default(),
            shutdown: AtomicBool::new(false),
            queue: BoundedQueue::new(config.queue_capacity),
            book: Mutex::new(Book::default()),
            last_stop: Mutex::new(None),
            first_audio: AtomicU64::new(0),
            marks: Arc::default(),
            cue: Mutex::new(None),
            timeline: Mutex::default(),
            sentences_begun: AtomicU64::new(0),
            kept_samples: AtomicU64::new(0),
            backend_name: Mutex::default(),
        });
        let (cmd_tx, cmd_rx) = mpsc::channel();
        let (job_tx, job_rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let warm_up = config.warm_up;
        let rate = config.voice.config.sample_rate as f64;
        let keep_samples = (config.keep_audio.as_secs_f64() * rate) as usize;
        let engine_thread = worker::spawn(
            worker::WorkerInit {
                voice: Arc::clone(&config.voice),
                backend: config.backend,
                engine: config.gpu_engine,
                gpu: config.gpu,
                output: config.output,
                settings: config.settings,
                emit_chunks: config.emit_chunks,
                trim_lead_in: config.trim_lead_in,
                warm_up,
                keep_samples,
                control: Arc::clone(&control),
                events: events.clone(),
                ready: ready_tx,
            },
            cmd_rx,
        )?;
        let mut segmenter = config.segmenter;
        // Dates are read in the voice's order unless the caller chose a locale or an order.
        let v = &config.voice.config;
        segmenter
            .options
            .normalize
            .default_voice_locale(&v.espeak_voice, &v.name);
        // The phonemiser's warm-up here, while the engine thread warms the backend up.
        if warm_up {
            producer::warm_up(&config.voice, &segmenter);
        }
        match ready_rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                let _ = engine_thread.join();
                return Err(e);
            }
            Err(_) => {
                control.shutdown.store(true, Ordering::Release);
                return Err(EngineError::Sink("the engine thread did not start".into()));
            }
        }
        let producer_thread = producer::spawn(
            Arc::clone(&config.voice),
            segmenter,
            Arc::clone(&control),
            job_rx,
            cmd_tx.clone(),
            events,
        )?;
        Ok((
            Engine {
                control,
                next_id: AtomicU64::new(1),
                jobs: Mutex::new(Some(job_tx)),
                cmds: cmd_tx,
                threads: vec![engine_thread, producer_thread],
            },
            rx,
        ))
    }

    /// The name of the backend speaking now, e.g. "cpu (2 threads)". It can change: an
    /// `Auto` start on a GPU whose kernels are still compiling speaks on the CPU until they
    /// are ready, and a GPU that fails hands over to the CPU.
    pub fn backend(&self) -> String {
        self.control
            .backend_name
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How long the device takes to play a sample after the callback handed it out (0 if the
    /// driver does not say). `Finished` fires at the callback, so a program that exits after it
    /// should wait this long for the sound to finish.
    pub fn output_latency(&self) -> Duration {
        Duration::from_micros(self.control.transport.latency_us.load(Ordering::Relaxed))
    }

    /// The device's callback period (how often it asks for audio), once it has asked.
    pub fn output_period(&self) -> Option<Duration> {
        self.control.transport.period()
    }

    /// The device's sample rate, once its callback has run.
    pub fn output_rate(&self) -> Option<u32> {
        let rate = self.control.transport.device_rate.load(Ordering::Relaxed);
        (rate > 0).then_some(rate)
    }

    /// How long the latest `stop` (or interrupting `speak`) took to silence the output: from
    /// the call to the last faded-out sample leaving the audio callback. `None` until that
    /// has happened, and without a device (`Output::None`).
    pub fn last_stop_latency(&self) -> Option<Duration> {
        let (stop, asked) = (*self
            .control
            .last_stop
            .lock()
            .unwrap_or_else(|e| e.into_inner()))?;
        let faded = self.control.transport.stop_faded_at(stop)?;
        Some(faded.saturating_duration_since(asked))
    }

    /// Speaks `text` (of any length: the phonemiser reads it as it goes), either now
    /// (`Interrupt`) or after what is queued (`Queue`).
    pub fn speak(&self, text: &str, mode: Mode) -> UtteranceId {
        self.speak_input(Input::Text(text), mode)
    }

    /// Speaks text or phoneme ids, as [`Engine::speak`]. An utterance of ids cannot be
    /// continued with `append`.
    pub fn speak_input(&self, input: Input<'_>, mode: Mode) -> UtteranceId {
        let requested = Instant::now();
        let input = match input {
            Input::Text(text) => JobInput::Text(text.to_string()),
            Input::Ids(ids) => JobInput::Ids(ids.to_vec()),
            Input::Document(doc) => JobInput::Document(doc.clone()),
        };
        self.speak_job(input, mode, requested)
    }

    /// [`Engine::speak`] of text the caller hands over: not copied, so a 10 MB clipboard is
    /// held once by the engine rather than twice.
    pub fn speak_owned(&self, text: String, mode: Mode) -> UtteranceId {
        self.speak_job(JobInput::Text(text), mode, Instant::now())
    }

    fn speak_job(&self, input: JobInput, mode: Mode, requested: Instant) -> UtteranceId {
        if mode == Mode::Interrupt {
            self.stop();
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut book = self.control.book();
            book.open.insert(id, 1);
            book.last = match &input {
                JobInput::Text(text) => Some((id, text.len())),
                JobInput::Ids(_) | JobInput::Document(_) => None,
            };
        }
        self.send(Job {
            id,
            epoch: self.control.epoch(),
            input,
            base: 0,
            whole: true,
            first: true,
            requested,
        });
        id
    }

    /// Adds `text` to the end of the latest utterance, as a continuation of its text (pieces
    /// may end mid-sentence, even mid-word: text after the last clause boundary is held back
    /// briefly for what follows). If that utterance has finished, starts a new one, queued.
    pub fn append(&self, text: &str) -> UtteranceId {
        let requested = Instant::now();
        let (id, base, first) = {
            let mut book = self.control.book();
            match book.last {
                Some((id, len)) if book.open.contains_key(&id) => {
                    *book.open.entry(id).or_insert(0) += 1;
                    book.last = Some((id, len + text.len()));
                    (id, len, false)
                }
                _ => {
                    let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                    book.open.insert(id, 1);
                    book.last = Some((id, text.len()));
                    (id, 0, true)
                }
            }
        };
        self.send(Job {
            id,
            epoch: self.control.epoch(),
            input: JobInput::Text(text.to_string()),
            base,
            whole: false,
            first,
            requested,
        });
        id
    }

    /// Stops all speech, fading out within one device period, and drops what is queued.
    pub fn stop(&self) {
        self.control
            .transport
            .pause_at_mark
            .store(false, Ordering::Release);
        {
            let asked = Instant::now();
            let mut book = self.control.book();
            let stop = self.control.transport.stop.fetch_add(1, Ordering::AcqRel) + 1;
            *self
                .control
                .last_stop
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some((stop, asked));
            let dropped: Vec<UtteranceId> = book.open.drain().map(|(id, _)| id).collect();
            book.stopped.extend(dropped);
            book.last = None;
        }
        self.control.queue.retain(|_| false);
        let _ = self.cmds.send(Cmd::Wake);
    }

    /// Plays `clip` at once, interrupting everything (like an interrupting `speak`): on a
    /// device it goes straight to the audio callback, which hands it out as soon as what was
    /// playing has faded out, without waiting for the engine thread (a key's sound while a
    /// long sentence is being synthesised). Events as for `speak`: `Started` at its first
    /// sample, `Finished` after its last; `Stats` (backend "clip") with the onset.
    pub fn play(&self, clip: &Clip) -> UtteranceId {
        let requested = Instant::now();
        self.stop();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let stop = self.control.epoch();
        if let Some(port) = self.control.cue_port() {
            let stats = Stats {
                id,
                onset_ms: None,
                rtf: 0.0,
                queue_depth: 0,
                backend: "clip".into(),
                underruns: 0,
                first_step: 0,
                first_audio_path_ms: [None; 3],
            };
            let (start, end) = {
                let mut m = worker::lock(&self.control.marks);
                (
                    m.add(stop, Mark::ClipStarted(id, requested)),
                    m.add(stop, Mark::Finished(stats)),
                )
            };
            match port.play(stop, clip, start, end) {
                Ok(()) => return id,
                Err(e) => {
                    let mut m = worker::lock(&self.control.marks);
                    m.pending.remove(&start);
                    m.pending.remove(&end);
                    tracing::debug!("clip through the engine thread: {e}");
                }
            }
        }
        let _ = self.cmds.send(Cmd::Clip {
            id,
            epoch: stop,
            clip: clip.clone(),
            requested,
        });
        id
    }

    /// Gets `clip` ready for [`Engine::play`] on the current output (resampled to the
    /// device's rate), so its first play costs no more than the next.
    pub fn prepare(&self, clip: &Clip) {
        if let Some(port) = self.control.cue_port() {
            port.prepare(clip);
        }
    }

    /// How much punctuation the normaliser speaks, from the next `speak` on.
    pub fn set_punctuation(&self, verbosity: PunctuationVerbosity) {
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = jobs.as_ref() {
            let _ = tx.send(producer::ToProducer::Verbosity(verbosity));
        }
    }

    /// Pauses playback at the next SSML mark of what plays, exactly at its sample (the
    /// callback holds there, as [`Engine::pause`] does), and reports the mark; `false`
    /// cancels the request. A stop cancels it too. speech-dispatcher's PAUSE.
    pub fn pause_at_next_mark(&self, on: bool) {
        self.control
            .transport
            .pause_at_mark
            .store(on, Ordering::Release);
    }

    /// Pauses playback at the current sample (with a short fade); nothing is lost.
    pub fn pause(&self) {
        self.control.transport.paused.store(true, Ordering::Release);
        let _ = self.cmds.send(Cmd::Pause);
    }

    /// Resumes playback exactly where `pause` left it.
    pub fn resume(&self) {
        self.control
            .transport
            .paused
            .store(false, Ordering::Release);
        let _ = self.cmds.send(Cmd::Resume);
    }

    pub fn set_settings(&self, settings: Settings) {
        let _ = self.cmds.send(Cmd::Settings(settings));
    }

    /// The latest sentences synthesised (at most [`TIMELINE_SENTENCES`], oldest first), each
    /// with its utterance, text range, samples and words; samples count from the
    /// utterance's first played sample, after the speed stage. A sentence appears once it
    /// has been synthesised in full (ahead of playback; a stopped one never does). For
    /// stepping back and forth by sentence, and "where did it stop".
    pub fn timeline(&self) -> Vec<(UtteranceId, SentenceTiming)> {
        let t = self
            .control
            .timeline
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        t.iter().cloned().collect()
    }

    /// Plays the sentence before the one being heard (the same one at the utterance's first),
    /// from its kept audio: at once, without synthesising again. What follows plays again
    /// too, then synthesis goes on. `Progress` and `Word` fire again for what is replayed, in
    /// order; `Started` does not, and `Finished` comes once, at the end. Nothing happens when
    /// nothing is being heard or the sentence is no longer kept
    /// ([`EngineConfig::keep_audio`]).
    pub fn previous_sentence(&self) {
        self.navigate(Nav::Sentence(-1));
    }

    /// Plays the sentence being heard again from its start, as [`Engine::previous_sentence`].
    pub fn repeat_sentence(&self) {
        self.navigate(Nav::Sentence(0));
    }

    /// Goes on at the next sentence: from its audio if it is synthesised, else its synthesis
    /// starts now (the rest of the one in synthesis is dropped).
    pub fn next_sentence(&self) {
        self.navigate(Nav::Sentence(1));
    }

    /// Steps `seconds` of speech (counted at normal speed) back (< 0) or forward from the
    /// word being heard, to the start of the word it lands in: back within the utterance and
    /// the audio kept, replayed as [`Engine::previous_sentence`] does; forward past what is
    /// synthesised, to the next sentence as [`Engine::next_sentence`] does.
    pub fn skip(&self, seconds: f32) {
        if seconds.is_finite() && seconds != 0.0 {
            self.navigate(Nav::Skip(seconds));
        }
    }

    /// Sentences synthesised so far (begun by the backend). Replays do not count: stepping
    /// back leaves it as it was.
    pub fn sentences_synthesised(&self) -> u64 {
        self.control.sentences_begun.load(Ordering::Relaxed)
    }

    /// Samples of audio kept for replay now (at most [`EngineConfig::keep_audio`]'s worth).
    pub fn kept_audio_samples(&self) -> u64 {
        self.control.kept_samples.load(Ordering::Relaxed)
    }

    fn navigate(&self, nav: Nav) {
        let _ = self.cmds.send(Cmd::Navigate(nav));
    }

    fn send(&self, job: Job) {
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = jobs.as_ref() {
            let _ = tx.send(producer::ToProducer::Job(job));
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop();
        self.control.shutdown.store(true, Ordering::Release);
        self.jobs.lock().unwrap_or_else(|e| e.into_inner()).take();
        let _ = self.cmds.send(Cmd::Wake);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
