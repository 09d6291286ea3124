//! The engine thread: owns the backend (created here, so a CUDA context lives on this
//! thread) and the audio output; turns queued segments into audio in adaptive steps.

use super::api::{Control, Event, Settings, Stats, TIMELINE_SENTENCES, UtteranceId};
use super::failover::carry_frame;
use super::gpu_later;
use super::navigate::{Heard, Kept, Landing, Nav, Span, land};
use super::phonemise::WordIds;
use super::steps::{StepInput, StepPolicy, next_step};
use super::tempo::{self, Tempo};
use super::timing::{SentenceTiming, SpokenWord, place_words};
use super::{BackendChoice, EngineError, GpuEngine, GpuOptions, cuda_backend, make_backend};
use crate::output::Output;
use crate::output::{AudioError, AudioSink, Clip, MarkFn, NullSink};
use hark_model::backend::{Backend, BackendError, CpuBackend, UtteranceInfo};
use hark_model::gpu::device::unavailable_reason;
use hark_model::gpu::prepare_kernels;
use hark_text::ssml::Prosody;
use hark_voice::Scales;
use hark_voice::Voice;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Stop synthesising ahead once this much audio is buffered.
const MAX_AHEAD_MS: f64 = 2500.0;
/// Push out the resampler's held-back tail once playback is this close to running dry.
const DRAIN_BELOW_MS: f64 = 40.0;
/// A sample above this magnitude (−60 dBFS) counts as sound for the onset.
const ONSET_THRESHOLD: f32 = 1e-3;
/// Idle wake-up interval; commands and new segments wake the thread sooner.
const IDLE_WAIT: Duration = Duration::from_millis(100);
/// The most of an utterance's inaudible start that `trim_lead_in` skips.
const MAX_LEAD_TRIM_MS: f64 = 250.0;
/// Kept before the first audible sample when the lead-in is skipped (the attack's start).
const LEAD_PREROLL_MS: f64 = 1.0;
/// The warm-up's chunks: the adaptive schedule's first steps after silence.
const WARM_UP_STEPS: [usize; 2] = [16, 32];
/// Kept audio written per step of a replay (93 ms at 22.05 kHz: the first sound comes soon).
const REPLAY_CHUNK: usize = 2048;

pub(crate) enum Cmd {
    /// Something changed (new segment, stop, shutdown): look again.
    Wake,
    Pause,
    Resume,
    Settings(Settings),
    /// Step through the utterance being heard.
    Navigate(Nav),
    /// Play a clip through the engine's own ring (an output without a cue port).
    Clip {
        id: UtteranceId,
        epoch: u64,
        clip: Clip,
        requested: Instant,
    },
}

/// One entry of the phoneme queue.
pub(crate) enum Item {
    Segment {
        id: UtteranceId,
        epoch: u64,
        /// Byte range in the utterance's text.
        range: Range<usize>,
        ids: Vec<i64>,
        /// Its words, with byte ranges in the utterance's text.
        words: Vec<WordIds>,
        /// Segment number within the utterance (seed offset).
        index: usize,
        requested: Instant,
        /// How it is said (SSML prosody; neutral for plain text).
        prosody: Prosody,
    },
    /// Silence (an SSML break).
    Silence {
        id: UtteranceId,
        epoch: u64,
        ms: u32,
        requested: Instant,
    },
    /// An SSML mark: reported when the audio before it has played.
    Mark {
        id: UtteranceId,
        epoch: u64,
        name: String,
        requested: Instant,
    },
    /// `jobs` of this utterance's text jobs are fully queued.
    JobEnd {
        id: UtteranceId,
        epoch: u64,
        jobs: usize,
    },
}

impl Item {
    pub fn epoch(&self) -> u64 {
        match self {
            Item::Segment { epoch, .. }
            | Item::JobEnd { epoch, .. }
            | Item::Silence { epoch, .. }
            | Item::Mark { epoch, .. } => *epoch,
        }
    }
}

pub(crate) struct WorkerInit {
    pub voice: Arc<Voice>,
    pub backend: BackendChoice,
    pub engine: GpuEngine,
    pub gpu: GpuOptions,
    pub output: Output,
    pub settings: Settings,
    pub emit_chunks: bool,
    pub trim_lead_in: bool,
    /// Warm the backend up before reporting ready.
    pub warm_up: bool,
    /// Audio kept for replay by navigation, in samples at the voice's rate.
    pub keep_samples: usize,
    pub control: Arc<Control>,
    pub events: tokio::sync::mpsc::UnboundedSender<Event>,
    pub ready: mpsc::SyncSender<Result<String, EngineError>>,
}

/// Events waiting for their sample to reach the device.
#[derive(Clone)]
pub(crate) enum Mark {
    Started(UtteranceId),
    Progress(UtteranceId, Range<usize>),
    Word(UtteranceId, Range<usize>),
    Onset(UtteranceId, Instant),
    Finished(Stats),
    /// An SSML mark.
    Named(UtteranceId, String),
    /// The first sample of a clip: `Started`, and the onset.
    ClipStarted(UtteranceId, Instant),
}

#[derive(Default)]
pub(crate) struct Marks {
    next_tag: u64,
    /// By tag: the stop epoch the mark was made in, and the mark. A stop drops the marks of
    /// the epochs before it (a clip's marks, made by the caller's thread after its stop,
    /// stay).
    pub pending: HashMap<u64, (u64, Mark)>,
    onsets: HashMap<UtteranceId, f64>,
    /// What is being heard, for navigation.
    heard: Option<Heard>,
}

impl Marks {
    pub fn add(&mut self, epoch: u64, mark: Mark) -> u64 {
        self.next_tag += 1;
        let tag = match mark {
            Mark::Named(..) => self.next_tag | crate::output::NAMED_MARK,
            _ => self.next_tag,
        };
        self.pending.insert(tag, (epoch, mark));
        tag
    }
}

pub(crate) type SharedMarks = Arc<Mutex<Marks>>;

pub(crate) fn lock(m: &SharedMarks) -> std::sync::MutexGuard<'_, Marks> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An utterance with audio on its way.
struct Utt {
    synth_ms: f64,
    samples: u64,
    onset_marked: bool,
    underruns_at_start: u64,
    first_step: usize,
    requested: Instant,
    /// Still skipping the inaudible start (samples skipped so far).
    lead_in: Option<usize>,
    /// The path to the first audio: (speak → first segment taken, its front half, its
    /// first step), in ms.
    path: [Option<f64>; 3],
    /// The sink position of its first sample (timeline samples count from here).
    base: u64,
}

/// The sentence being synthesised, or replayed from its kept audio.
#[derive(Clone)]
struct Current {
    id: UtteranceId,
    frames: usize,
    pos: usize,
    /// The run's gain (SSML volume).
    gain: f32,
    /// A break: `frames` of silence, no backend.
    silence: bool,
    /// The sink position of its first output sample.
    out_base: u64,
    /// Samples of its inaudible start skipped (all before its first played sample).
    skipped: u64,
    /// How much faster its length scale made it (sonic does the rest of the speed).
    length_speed: f32,
    /// Its words in the model's output.
    words: Vec<SpokenWord>,
    /// Words not yet marked (an index into `words`).
    next_word: usize,
    index: usize,
    range: Range<usize>,
    /// How the run is said (SSML prosody; neutral for plain text).
    prosody: Prosody,
    /// What it was begun with, to begin it again on another backend (`failover.rs`).
    again: Again,
    /// The backend's frame for frame `pos`: `pos + shift` (non-zero after a failover to a
    /// backend that placed the phonemes differently).
    shift: isize,
    /// Its audio so far as it went into the speed stage (after the lead-in cut), kept for
    /// replay.
    pcm: Arc<Vec<f32>>,
    /// Samples of `pcm` fed to the speed stage since it started playing, and where in `pcm`
    /// it started (a replay from mid-sentence). While `fed < pcm.len()` it replays.
    fed: usize,
    fed_from: usize,
    /// A replay of a kept sentence (already in the timeline and the kept audio).
    replayed: bool,
    /// Marks to add at its first sample and after its last (moved there by navigation).
    before: Vec<Mark>,
    after: Vec<Mark>,
}

/// A sentence's backend input, and the durations the backend gave it.
#[derive(Clone)]
struct Again {
    ids: Vec<i64>,
    scales: Scales,
    seed: u64,
    words: Vec<WordIds>,
    durations: Vec<usize>,
}

impl Again {
    /// For what no backend makes (a break's silence, a replay from the kept audio).
    fn none(scales: Scales) -> Self {
        Self {
            ids: Vec::new(),
            scales,
            seed: 0,
            words: Vec::new(),
            durations: Vec::new(),
        }
    }
}

impl Current {
    fn span(&self) -> Span<'_> {
        Span {
            id: self.id,
            range: &self.range,
            words: &self.words,
            skipped: self.skipped,
            len: self.pcm.len(),
            length_speed: self.length_speed,
        }
    }

    /// A sentence of `frames` (silence: a break) from the start.
    #[allow(clippy::too_many_arguments)]
    fn new(
        id: UtteranceId,
        frames: usize,
        out_base: u64,
        length_speed: f32,
        words: Vec<SpokenWord>,
        index: usize,
        range: Range<usize>,
        prosody: Prosody,
        again: Again,
    ) -> Self {
        Self {
            id,
            frames,
            pos: 0,
            gain: prosody.volume,
            silence: false,
            out_base,
            skipped: 0,
            length_speed,
            words,
            next_word: 0,
            index,
            range,
            prosody,
            again,
            shift: 0,
            pcm: Arc::default(),
            fed: 0,
            fed_from: 0,
            replayed: false,
            before: Vec::new(),
            after: Vec::new(),
        }
    }

    /// Plays again from sample `offset` of its kept audio, whose first word is `word`.
    fn rewind(&mut self, offset: usize, word: usize) {
        self.fed = offset.min(self.pcm.len());
        self.fed_from = self.fed;
        self.next_word = word;
        self.before.clear();
        self.after.clear();
    }
}

struct Worker {
    voice: Arc<Voice>,
    output: Output,
    settings: Settings,
    policy: StepPolicy,
    emit_chunks: bool,
    trim_lead_in: bool,
    control: Arc<Control>,
    events: tokio::sync::mpsc::UnboundedSender<Event>,
    backend: Box<dyn Backend>,
    backend_name: String,
    /// The GPU's kernels still compiling while the CPU speaks (`gpu_later.rs`).
    gpu_later: Option<gpu_later::Pending>,
    engine: GpuEngine,
    gpu: GpuOptions,
    warm_up: bool,
    /// The device failed and the CPU speaks (`failover.rs`).
    on_cpu_fallback: bool,
    sink: Box<dyn AudioSink>,
    /// The device was lost and could not be reopened; try again at the next utterance.
    sink_fallback: bool,
    on_mark: MarkFn,
    seen_epoch: u64,
    paused: bool,
    current: Option<Current>,
    utts: HashMap<UtteranceId, Utt>,
    last_step: Option<(usize, f64)>,
    /// What C libraries freed was handed back since everything was last said.
    c_heap_released: bool,
    /// When everything was last said and drained, until the heaps are collected.
    idle_since: Option<Instant>,
    /// Speed and pitch on the PCM (bypassed at 1× and 0 semitones).
    tempo: Tempo,
    /// Its output for the current step.
    stretched: Vec<f32>,
    /// The sentences to play after `current`: replays, then the one in synthesis.
    ahead: VecDeque<Current>,
    /// The latest finished sentences' audio, for replay.
    kept: Kept<Current>,
}

pub(crate) fn spawn(
    init: WorkerInit,
    cmds: mpsc::Receiver<Cmd>,
) -> Result<std::thread::JoinHandle<()>, EngineError> {
    std::thread::Builder::new()
        .name("hark-engine".into())
        .spawn(move || {
            let ready = init.ready.clone();
            match Worker::new(init) {
                Ok(mut w) => {
                    let _ = ready.send(Ok(w.backend_name.clone()));
                    w.run(cmds);
                }
                Err(e) => {
                    let _ = ready.send(Err(e));
                }
            }
        })
        .map_err(|e| EngineError::Sink(format!("cannot start the engine thread: {e}")))
}

/// Which samples of a chunk to play while an utterance's inaudible start is being skipped:
/// from just before the first audible sample (`audible`), nothing if there is none yet, or
/// everything once `skipped` samples would exceed the most that may be skipped.
fn lead_in_cut(audible: Option<usize>, len: usize, skipped: usize, rate: f64) -> Range<usize> {
    let limit = (MAX_LEAD_TRIM_MS * rate / 1e3) as usize;
    let preroll = (LEAD_PREROLL_MS * rate / 1e3) as usize;
    let room = limit.saturating_sub(skipped);
    let from = match audible {
        Some(i) => i.saturating_sub(preroll),
        None => len,
    };
    from.min(room)..len
}

fn mark_fn(marks: SharedMarks, events: tokio::sync::mpsc::UnboundedSender<Event>) -> MarkFn {
    Arc::new(move |tag, at| {
        let mut m = lock(&marks);
        let Some((_, mark)) = m.pending.remove(&tag) else {
            return; // flushed by a stop
        };
        let ev = match mark {
            Mark::Started(id) => Event::Started { id },
            Mark::Named(id, name) => Event::Mark { id, name },
            Mark::ClipStarted(id, requested) => {
                let ms = at.saturating_duration_since(requested).as_secs_f64() * 1e3;
                m.onsets.insert(id, ms);
                Event::Started { id }
            }
            Mark::Progress(id, char_range) => {
                m.heard = Some(Heard {
                    id,
                    sentence: char_range.clone(),
                    word: None,
                });
                Event::Progress { id, char_range }
            }
            Mark::Word(id, char_range) => {
                if let Some(h) = m.heard.as_mut().filter(|h| h.id == id) {
                    h.word = Some(char_range.clone());
                }
                Event::Word { id, char_range }
            }
            Mark::Onset(id, requested) => {
                let ms = at.saturating_duration_since(requested).as_secs_f64() * 1e3;
                m.onsets.insert(id, ms);
                return;
            }
            Mark::Finished(mut stats) => {
                stats.onset_ms = m.onsets.remove(&stats.id);
                if m.heard.as_ref().is_some_and(|h| h.id == stats.id) {
                    m.heard = None;
                }
                let id = stats.id;
                let _ = events.send(Event::Stats(stats));
                Event::Finished { id, stopped: false }
            }
        };
        let _ = events.send(ev);
    })
}

fn open_sink(
    output: &Output,
    rate: u32,
    on_mark: &MarkFn,
    control: &Control,
) -> Result<Box<dyn AudioSink>, AudioError> {
    match output {
        Output::None => Ok(Box::new(NullSink::new(Arc::clone(on_mark)))),
        Output::Sink(open) => open.open(rate, Arc::clone(on_mark), Arc::clone(&control.transport)),
    }
}

/// The backend a new engine starts on: `make_backend`'s, except that `Auto` on a GPU whose
/// kernels are not compiled yet starts on the CPU and leaves the compile running
/// (`gpu_later.rs`); everything else (`Cuda` asked for by name, a cold cache switched off,
/// no GPU, a multi-speaker voice) is as before.
fn first_backend(
    init: &WorkerInit,
) -> Result<(Box<dyn Backend>, Option<gpu_later::Pending>), EngineError> {
    let may_defer = init.backend == BackendChoice::Auto
        && init.gpu.kernel_cache
        && !init.voice.config.is_multi_speaker()
        && unavailable_reason().is_none();
    if may_defer {
        let (dims, gpu, engine) = (init.voice.config.dims.clone(), init.gpu, init.engine);
        let prepare = move || {
            prepare_kernels(&dims, &gpu, engine)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        match gpu_later::start(prepare, init.gpu.compile_wait) {
            gpu_later::Start::Pending(p) => {
                tracing::info!(
                    "compiling the CUDA kernels for this GPU (first start); speaking on the \
                     CPU until they are ready"
                );
                let cpu: Box<dyn Backend> = Box::new(CpuBackend::new(Arc::clone(&init.voice)));
                return Ok((cpu, Some(p)));
            }
            // make_backend below says why again, and takes the CPU.
            gpu_later::Start::Done(Err(e)) => tracing::debug!("CUDA kernels not prepared: {e}"),
            // Cached already (a later start): make_backend reads them.
            gpu_later::Start::Done(Ok(())) => {}
        }
    }
    let backend = make_backend(init.backend, init.engine, &init.voice, &init.gpu)?;
    Ok((backend, None))
}

/// `backend` as the engine uses it: with the injected faults of a test build, warmed up
/// unless `warm_up` is off.
fn ready_backend(backend: Box<dyn Backend>, warm_up: bool) -> Box<dyn Backend> {
    #[cfg(feature = "fault-inject")]
    let backend = hark_model::fault::wrap(backend);
    let mut backend = backend;
    if warm_up {
        let t0 = Instant::now();
        match hark_model::backend::warm_up(backend.as_mut(), &WARM_UP_STEPS) {
            Ok(()) => tracing::debug!(
                "backend warmed up in {:.0} ms",
                t0.elapsed().as_secs_f64() * 1e3
            ),
            // Not fatal: a real utterance reports its own error.
            Err(e) => tracing::warn!("backend warm-up failed: {e}"),
        }
    }
    backend
}

impl Worker {
    fn new(init: WorkerInit) -> Result<Self, EngineError> {
        let (backend, gpu_later) = first_backend(&init)?;
        let backend = ready_backend(backend, init.warm_up);
        let backend_name = backend.name();
        init.control.set_backend_name(&backend_name);
        let on_mark = mark_fn(Arc::clone(&init.control.marks), init.events.clone());
        let mut sink = open_sink(
            &init.output,
            init.voice.config.sample_rate,
            &on_mark,
            &init.control,
        )
        .map_err(|e| EngineError::Sink(e.to_string()))?;
        sink.set_volume(init.settings.volume);
        init.control.set_cue_port(sink.cue_port());
        let tempo = Tempo::new(init.voice.config.sample_rate);
        Ok(Self {
            tempo,
            stretched: Vec::new(),
            ahead: VecDeque::new(),
            kept: Kept::new(init.keep_samples),
            seen_epoch: init.control.epoch(),
            voice: init.voice,
            output: init.output,
            settings: init.settings,
            policy: StepPolicy::default(),
            emit_chunks: init.emit_chunks,
            trim_lead_in: init.trim_lead_in,
            control: init.control,
            events: init.events,
            backend,
            backend_name,
            gpu_later,
            engine: init.engine,
            gpu: init.gpu,
            warm_up: init.warm_up,
            on_cpu_fallback: false,
            sink,
            sink_fallback: false,
            on_mark,
            paused: false,
            current: None,
            utts: HashMap::new(),
            last_step: None,
            c_heap_released: true,
            idle_since: None,
        })
    }

    fn emit(&self, e: Event) {
        let _ = self.events.send(e);
    }

    fn error(&self, id: Option<UtteranceId>, message: String) {
        tracing::warn!("{message}");
        self.emit(Event::Error { id, message });
    }

    fn run(&mut self, cmds: mpsc::Receiver<Cmd>) {
        loop {
            if self.control.shutdown.load(Ordering::Acquire) {
                return;
            }
            loop {
                match cmds.try_recv() {
                    Ok(c) => self.command(c),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return,
                }
            }
            let epoch = self.control.epoch();
            if epoch != self.seen_epoch {
                self.stopped(epoch);
            }
            if let Err(e) = self.sink.health() {
                self.sink_lost(e);
                continue;
            }
            let wait = if self.current.is_some() {
                let headless_pause = self.paused && matches!(self.output, Output::None);
                if headless_pause || self.sink.buffered_ms() > MAX_AHEAD_MS {
                    Some(Duration::from_millis(10))
                } else {
                    self.step();
                    None
                }
            } else if let Some(item) = self.control.queue.try_pop() {
                self.take(item);
                None
            } else {
                self.move_to_gpu_when_ready();
                Some(self.idle())
            };
            if let Some(d) = wait {
                match cmds.recv_timeout(d) {
                    Ok(c) => self.command(c),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        }
    }

    fn command(&mut self, c: Cmd) {
        match c {
            Cmd::Wake => {}
            Cmd::Pause => {
                self.paused = true;
                self.sink.set_paused(true);
            }
            Cmd::Resume => {
                self.paused = false;
                self.sink.set_paused(false);
            }
            Cmd::Settings(s) => {
                self.settings = s;
                self.sink.set_volume(s.volume);
                // Speed and pitch at once: sonic makes up the difference from the length
                // scale the current sentence was made with.
                if let Some(cur) = &self.current {
                    let (speed, pitch) = tempo::for_run(s.speed, s.pitch, &cur.prosody);
                    self.tempo.aim(speed, pitch, cur.length_speed);
                }
            }
            Cmd::Navigate(nav) => self.navigate(nav),
            Cmd::Clip {
                id,
                epoch,
                clip,
                requested,
            } => self.play_clip(id, epoch, &clip, requested),
        }
    }

    /// A clip through the ring (no cue port): after the stop that came with it, at once.
    fn play_clip(&mut self, id: UtteranceId, epoch: u64, clip: &Clip, requested: Instant) {
        let now = self.control.epoch();
        if now != self.seen_epoch {
            self.stopped(now);
        }
        if epoch != self.seen_epoch {
            // A later stop already cancelled it.
            self.emit(Event::Stats(self.stats(id, None)));
            self.emit(Event::Finished { id, stopped: true });
            return;
        }
        self.open_utt(id, requested);
        if let Some(u) = self.utts.get_mut(&id) {
            u.samples = clip.samples.len() as u64;
            u.onset_marked = true;
        }
        let at = self.sink.written();
        self.add_mark(at, Mark::Onset(id, requested));
        if let Err(e) = self.sink.write(&clip.samples) {
            self.sink_lost(e);
            return;
        }
        self.control.first_audio.fetch_max(id, Ordering::AcqRel);
        self.sink.set_expecting(true);
        if self.emit_chunks {
            self.emit(Event::Chunk {
                id,
                samples: clip.samples.to_vec(),
            });
        }
        self.complete(id);
    }

    /// Between utterances: once the GPU's kernels are compiled (`gpu_later.rs`), makes the
    /// CUDA backend (from the cache now, milliseconds) and speaks on it from the next
    /// utterance; if they failed, stays on the CPU.
    fn move_to_gpu_when_ready(&mut self) {
        let Some(result) = self.gpu_later.as_ref().and_then(|p| p.poll()) else {
            return;
        };
        let waited = self
            .gpu_later
            .take()
            .map_or(0.0, |p| p.elapsed().as_secs_f64());
        let made = result.and_then(|()| {
            cuda_backend(&self.voice, self.engine, &self.gpu).map_err(|e| e.to_string())
        });
        match made {
            Ok(b) => {
                let t0 = Instant::now();
                self.backend = ready_backend(b, self.warm_up);
                self.backend_name = self.backend.name();
                self.control.set_backend_name(&self.backend_name);
                tracing::info!(
                    "CUDA kernels ready after {waited:.1} s; speaking on {} from now on \
                     (made in {:.0} ms)",
                    self.backend_name,
                    t0.elapsed().as_secs_f64() * 1e3
                );
            }
            Err(e) => tracing::info!("{e}; staying on the CPU backend"),
        }
    }

    /// Nothing to synthesise right now; returns how long to wait for work.
    fn idle(&mut self) -> Duration {
        let open = !self.control.book().open.is_empty();
        if !open {
            // Everything is said: the ring running dry now is the end, not an underrun.
            self.sink.set_expecting(false);
        }
        let buffered = self.sink.buffered_ms();
        if buffered < DRAIN_BELOW_MS {
            if let Err(e) = self.sink.drain() {
                self.sink_lost(e);
                return Duration::ZERO;
            }
            self.last_step = None;
            self.sink.set_expecting(open);
            if !open && !self.c_heap_released {
                // Everything is said and drained: the moment the user is listening to nothing,
                // so the time it takes delays no audio.
                hark_alloc::release_c_heap();
                self.c_heap_released = true;
                self.idle_since = Some(Instant::now());
            }
            // Not at once: a forced collection unmaps what the next sentence would reuse.
            if let Some(since) = self.idle_since
                && since.elapsed() >= hark_alloc::COLLECT_AFTER_IDLE
            {
                hark_alloc::collect_heaps();
                self.idle_since = None;
                // Everything has played for a second: a reopen cuts nothing.
                self.grow_buffer_if_played_dry();
            }
            return IDLE_WAIT;
        }
        // Wake in time to push out the resampler's tail before playback reaches it.
        Duration::from_secs_f64((buffered - DRAIN_BELOW_MS) / 1e3)
            .clamp(Duration::from_millis(2), IDLE_WAIT)
    }

    fn take(&mut self, item: Item) {
        self.c_heap_released = false;
        self.idle_since = None;
        if item.epoch() > self.seen_epoch {
            self.stopped(item.epoch());
        }
        if item.epoch() < self.seen_epoch {
            return;
        }
        match item {
            Item::Segment {
                id,
                range,
                ids,
                words,
                index,
                requested,
                prosody,
                ..
            } => self.begin(id, range, &ids, words, index, requested, prosody),
            Item::Silence {
                id, ms, requested, ..
            } => {
                self.open_utt(id, requested);
                let hop = self.voice.config.hop_length.max(1);
                let frames = (ms as usize * self.voice.config.sample_rate as usize / 1000) / hop;
                if frames > 0 {
                    let at = self.sink.written();
                    let again = Again::none(self.settings.scales);
                    let mut cur = Current::new(
                        id,
                        frames,
                        at,
                        1.0,
                        Vec::new(),
                        0,
                        0..0,
                        Prosody::NEUTRAL,
                        again,
                    );
                    (cur.gain, cur.silence) = (0.0, true);
                    self.current = Some(cur);
                }
            }
            Item::Mark {
                id,
                name,
                requested,
                ..
            } => {
                self.open_utt(id, requested);
                // With the last sample before it: that is when the audio before it has
                // played, even when nothing follows it.
                let at = self.sink.written().saturating_sub(1);
                self.add_mark(at, Mark::Named(id, name));
            }
            Item::JobEnd { id, jobs, .. } => {
                let done = {
                    let mut book = self.control.book();
                    match book.open.get_mut(&id) {
                        Some(n) if *n > jobs => {
                            *n -= jobs;
                            false
                        }
                        Some(_) => {
                            book.open.remove(&id);
                            true
                        }
                        None => false,
                    }
                };
                if done {
                    self.complete(id);
                }
            }
        }
    }

    fn add_mark(&mut self, pos: u64, mark: Mark) {
        let tag = lock(&self.control.marks).add(self.seen_epoch, mark);
        // Outside the lock: a headless sink fires the mark at once.
        self.sink.mark(pos, tag);
    }

    /// Starts utterance `id`'s bookkeeping (and its `Started` mark) if this is its first
    /// piece.
    fn open_utt(&mut self, id: UtteranceId, requested: Instant) {
        if !self.utts.contains_key(&id) {
            if self.sink_fallback {
                self.try_reopen();
            }
            self.utts.insert(
                id,
                Utt {
                    synth_ms: 0.0,
                    samples: 0,
                    onset_marked: false,
                    underruns_at_start: self.sink.underruns(),
                    first_step: 0,
                    requested,
                    lead_in: None,
                    path: [None; 3],
                    base: self.sink.written(),
                },
            );
            self.add_mark(self.sink.written(), Mark::Started(id));
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn begin(
        &mut self,
        id: UtteranceId,
        range: Range<usize>,
        ids: &[i64],
        words: Vec<WordIds>,
        index: usize,
        requested: Instant,
        prosody: Prosody,
    ) {
        self.open_utt(id, requested);
        self.add_mark(self.sink.written(), Mark::Progress(id, range.clone()));
        let t = Instant::now();
        let seed = self.settings.seed.wrapping_add(index as u64);
        // The speed: the length scale's part now, sonic's from the first sample; the run's
        // own (SSML prosody) with the settings'.
        let (speed, pitch) = tempo::for_run(self.settings.speed, self.settings.pitch, &prosody);
        let split = tempo::split(speed);
        let mut scales = self.settings.scales;
        scales.length_scale *= split.length_factor;
        let begun = match self.backend.begin(ids, &scales, seed) {
            Err(BackendError::Device(e)) => self.fail_over(Some(id), &e, ids, &scales, seed),
            r => r,
        };
        self.control.sentences_begun.fetch_add(1, Ordering::Relaxed);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if let Some(u) = self.utts.get_mut(&id) {
            u.synth_ms += ms;
            if u.path[0].is_none() {
                let waited = t.saturating_duration_since(u.requested);
                u.path[..2].copy_from_slice(&[Some(waited.as_secs_f64() * 1e3), Some(ms)]);
            }
        }
        match begun {
            Ok(info) if info.frames > 0 => {
                let hop = self.voice.config.hop_length;
                let placed = place_words(&info.durations, &words, hop);
                let length_speed =
                    tempo::length_speed_of(&split, &info, self.settings.scales.length_scale);
                self.tempo.restart();
                self.tempo.aim(speed, pitch, length_speed);
                self.current = Some(Current::new(
                    id,
                    info.frames,
                    self.sink.written(),
                    length_speed,
                    placed,
                    index,
                    range,
                    prosody,
                    Again {
                        ids: ids.to_vec(),
                        scales,
                        seed,
                        words,
                        durations: info.durations,
                    },
                ));
            }
            // Nothing to play: the phonemiser need not wait for this utterance's audio.
            Ok(_) => {
                self.control.first_audio.fetch_max(id, Ordering::AcqRel);
            }
            Err(e) => {
                self.control.first_audio.fetch_max(id, Ordering::AcqRel);
                self.error(Some(id), format!("synthesis failed: {e}"));
            }
        }
    }

    /// The backend's device failed (`why`) beginning a sentence: begins it again on the same
    /// backend once (it may have fallen back inside), else on the CPU from now on, with one
    /// notice to the user.
    fn fail_over(
        &mut self,
        id: Option<UtteranceId>,
        why: &str,
        ids: &[i64],
        scales: &Scales,
        seed: u64,
    ) -> Result<UtteranceInfo, BackendError> {
        match self.backend.begin(ids, scales, seed) {
            Err(BackendError::Device(e)) if !self.on_cpu_fallback => {
                self.backend = Box::new(CpuBackend::new(Arc::clone(&self.voice)));
                self.backend_name = self.backend.name();
                self.control.set_backend_name(&self.backend_name);
                self.on_cpu_fallback = true;
                self.error(
                    id,
                    format!("the GPU failed ({why}; then {e}); speaking on the CPU from now on"),
                );
                self.backend.begin(ids, scales, seed)
            }
            r => {
                // It may have changed how it runs (persistent kernel → CUDA graphs).
                self.backend_name = self.backend.name();
                self.control.set_backend_name(&self.backend_name);
                r
            }
        }
    }

    /// The device failed (`why`) decoding `cur` at frame `start`: begins it again elsewhere
    /// ([`Self::fail_over`]) and makes `cur` go on from the same place there. `false` if it
    /// cannot.
    fn resume_elsewhere(&mut self, cur: &mut Current, start: usize, why: &str) -> bool {
        let a = &cur.again;
        let (ids, scales, seed) = (a.ids.clone(), a.scales, a.seed);
        let info = match self.fail_over(Some(cur.id), why, &ids, &scales, seed) {
            Ok(info) => info,
            Err(e) => {
                self.error(Some(cur.id), format!("synthesis failed: {e}"));
                return false;
            }
        };
        let old_at = start.saturating_add_signed(cur.shift);
        // A frame was still to come: keep at least one (rounding at the last id may reach
        // the end).
        let new_at = carry_frame(&cur.again.durations, &info.durations, old_at)
            .min(info.frames.saturating_sub(1));
        cur.shift = new_at as isize - start as isize;
        cur.frames = start + info.frames.saturating_sub(new_at);
        cur.pos = start;
        if info.durations != cur.again.durations {
            // The words not yet marked, where the new backend put them (in played samples).
            let hop = self.voice.config.hop_length;
            let moved = cur.shift * hop as isize;
            let placed = place_words(&info.durations, &cur.again.words, hop);
            let unmarked = cur.words.iter_mut().zip(placed).skip(cur.next_word);
            for (w, p) in unmarked {
                let back = |x: u64| (x as i64 - moved as i64).max(0) as u64;
                w.model = back(p.model.start)..back(p.model.end);
            }
            cur.again.durations = info.durations;
        }
        true
    }

    fn step(&mut self) {
        let Some(mut cur) = self.current.take() else {
            return;
        };
        if cur.fed < cur.pcm.len() || cur.pos >= cur.frames {
            // A replay: the kept audio instead of the backend.
            let pcm = Arc::clone(&cur.pcm);
            let chunk = &pcm[cur.fed..pcm.len().min(cur.fed + REPLAY_CHUNK)];
            let last = cur.fed + chunk.len() >= pcm.len() && cur.pos >= cur.frames;
            self.play_out(cur, chunk, last, None, None);
            return;
        }
        let input = StepInput {
            queue_depth: self.control.queue.len(),
            buffered_ms: self.sink.buffered_ms(),
            last: self.last_step,
        };
        let n = next_step(self.settings.steps, &self.policy, &input).min(cur.frames - cur.pos);
        let (id, start) = (cur.id, cur.pos);
        cur.pos += n;
        let last = cur.pos >= cur.frames;
        if cur.silence {
            let samples = vec![0.0; n * self.voice.config.hop_length.max(1)];
            if let Err(e) = self.sink.write(&samples) {
                self.sink_lost(e);
                return;
            }
            if self.emit_chunks {
                self.emit(Event::Chunk { id, samples });
            }
            if last {
                self.next_sentence();
            } else {
                self.current = Some(cur);
            }
            return;
        }
        let t = Instant::now();
        let (control, seen) = (&self.control, self.seen_epoch);
        // A stop abandons the step between its stages instead of waiting for all of it.
        let stopped = || control.epoch() != seen;
        let at = start.saturating_add_signed(cur.shift);
        let mut samples = match self.backend.decode_cancellable(at, at + n, &stopped) {
            Ok(Some(s)) => s,
            Ok(None) => {
                // Stopped while decoding: this audio must not play (the stop drops the rest).
                self.current = Some(cur);
                return;
            }
            Err(BackendError::Device(e)) if self.resume_elsewhere(&mut cur, start, &e) => {
                self.current = Some(cur);
                return;
            }
            Err(e) => {
                self.tempo.reset();
                self.error(Some(id), format!("synthesis failed: {e}"));
                return;
            }
        };
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if self.control.epoch() != self.seen_epoch {
            self.current = Some(cur);
            return; // stopped while decoding: this audio must not play
        }
        self.last_step = Some((n, ms));
        if cur.gain != 1.0 {
            samples.iter_mut().for_each(|s| *s *= cur.gain);
        }
        let written = self.sink.written();
        let nothing_playing = self.sink.buffered_ms() < 1.0;
        let rate = self.voice.config.sample_rate as f64;
        let mut play = 0..samples.len();
        let mut onset_wanted = None;
        let mut utt_base = written;
        if let Some(u) = self.utts.get_mut(&id) {
            if u.samples == 0 && self.trim_lead_in && nothing_playing {
                u.lead_in = Some(0);
            }
            u.synth_ms += ms;
            u.samples += samples.len() as u64;
            if u.first_step == 0 {
                u.first_step = n;
                u.path[2] = Some(ms);
            }
            if let Some(skipped) = u.lead_in {
                let audible = samples.iter().position(|s| s.abs() > ONSET_THRESHOLD);
                play = lead_in_cut(audible, samples.len(), skipped, rate);
                u.lead_in =
                    (play.is_empty() && audible.is_none()).then_some(skipped + samples.len());
            }
            if !u.onset_marked {
                onset_wanted = Some(u.requested);
            }
            utt_base = u.base;
        }
        cur.skipped += play.start as u64;
        Arc::make_mut(&mut cur.pcm).extend_from_slice(&samples[play.clone()]);
        self.play_out(cur, &samples[play], last, onset_wanted, Some(utt_base));
    }

    /// Plays `input`, the sentence's next audio (decoded or kept), through the speed stage,
    /// with the marks of the words that start in it; at the sentence's end (`last`) keeps
    /// it (a synthesised one: in the timeline from `utt_base`, and its audio) and moves on.
    fn play_out(
        &mut self,
        mut cur: Current,
        input: &[f32],
        last: bool,
        onset_wanted: Option<Instant>,
        utt_base: Option<u64>,
    ) {
        let id = cur.id;
        let written = self.sink.written();
        cur.fed += input.len();
        // The speed stage (a copy when bypassed), and at the sentence's end what it holds.
        let mut out = std::mem::take(&mut self.stretched);
        out.clear();
        self.tempo.process(input, &mut out);
        if last {
            self.tempo.finish(&mut out);
        }
        // Marks for this stretch of output, in the order of their samples: the onset, and
        // each word whose first sample is now written.
        let end = written + out.len() as u64;
        let mut marks: Vec<(u64, Mark)> = Vec::new();
        if let Some(requested) = onset_wanted
            && let Some(i) = out.iter().position(|s| s.abs() > ONSET_THRESHOLD)
        {
            if let Some(u) = self.utts.get_mut(&id) {
                u.onset_marked = true;
            }
            marks.push((written + i as u64, Mark::Onset(id, requested)));
        }
        // Model samples decoded so far; the speed stage counts from where it started.
        let decoded = cur.skipped + cur.fed as u64;
        let origin = cur.skipped + cur.fed_from as u64;
        while let Some(w) = cur.words.get(cur.next_word) {
            let p = w.model.start.saturating_sub(origin);
            if !last && (w.model.start >= decoded || !self.tempo.has_output(p)) {
                break;
            }
            let at = cur.out_base + self.tempo.output_at(p);
            let at = at.clamp(written, end.saturating_sub(1).max(written));
            marks.push((at, Mark::Word(id, w.text.clone())));
            cur.next_word += 1;
        }
        marks.sort_by_key(|m| m.0);
        for (pos, mark) in marks {
            self.add_mark(pos, mark);
        }
        let wrote = self.sink.write(&out);
        let out_len = out.len() as u64;
        self.stretched = out;
        if let Err(e) = wrote {
            self.sink_lost(e);
            return;
        }
        self.control.first_audio.fetch_max(id, Ordering::AcqRel);
        // Only now: an empty ring before the first audio of a run is a start, not an underrun.
        self.sink.set_expecting(true);
        if last {
            if !cur.replayed {
                if let Some(base) = utt_base.filter(|_| cur.fed_from == 0) {
                    self.record(&cur, base, cur.out_base..written + out_len);
                }
                self.keep(&cur);
            }
            let end = (written + out_len).saturating_sub(1);
            for mark in std::mem::take(&mut cur.after) {
                self.add_mark(end, mark);
            }
            self.tempo.restart();
            self.next_sentence();
        } else {
            self.current = Some(cur);
        }
        if self.emit_chunks {
            // What plays: after the lead-in cut and the speed stage.
            let samples = self.stretched.clone();
            self.emit(Event::Chunk { id, samples });
        }
    }

    /// Keeps a finished sentence's audio for replay.
    fn keep(&mut self, cur: &Current) {
        let mut kept = cur.clone();
        kept.replayed = true;
        self.kept.push(kept, cur.pcm.len());
        let samples = self.kept.samples() as u64;
        self.control.kept_samples.store(samples, Ordering::Relaxed);
    }

    /// The sentence after the one that ended: the next replay (or the one in synthesis
    /// again) if navigation queued any, else the queue's next.
    fn next_sentence(&mut self) {
        self.current = self.ahead.pop_front();
        let at = self.sink.written();
        let Some(cur) = self.current.as_mut() else {
            return;
        };
        cur.out_base = at;
        let mut marks = std::mem::take(&mut cur.before);
        if !cur.silence {
            marks.push(Mark::Progress(cur.id, cur.range.clone()));
        }
        let (speed, pitch) = tempo::for_run(self.settings.speed, self.settings.pitch, &cur.prosody);
        let length_speed = cur.length_speed;
        self.tempo.restart();
        self.tempo.aim(speed, pitch, length_speed);
        for mark in marks {
            self.add_mark(at, mark);
        }
    }

    /// Steps through the utterance being heard: drops what is queued at the output and plays
    /// from where `nav` lands, from the kept audio where it can (the sentence in synthesis
    /// goes on after the replays), else from the next sentence to synthesise. The marks of the
    /// dropped audio go with it: `Started` and `Finished` move to the replayed sentences,
    /// words and sentences are reported again as they are replayed, SSML marks are not.
    fn navigate(&mut self, nav: Nav) {
        let Some(heard) = lock(&self.control.marks).heard.clone() else {
            return;
        };
        let in_synthesis = |c: &&Current| !c.replayed;
        let landing = {
            let unfinished = self.current.iter().chain(&self.ahead).find(in_synthesis);
            let spans: Vec<Span> = self
                .kept
                .iter()
                .chain(unfinished)
                .map(Current::span)
                .collect();
            land(&spans, &heard, nav, self.voice.config.sample_rate as f64)
        };
        if landing == Landing::Nowhere {
            return;
        }
        let mut unfinished = None;
        for c in self.current.take().into_iter().chain(self.ahead.drain(..)) {
            if !c.replayed {
                unfinished = Some(c);
            }
        }
        let mut list: VecDeque<Current> = match landing {
            Landing::Nowhere | Landing::NextBoundary => VecDeque::new(),
            Landing::Replay { from, offset, word } => {
                let mut list: VecDeque<Current> = self.kept.iter().skip(from).cloned().collect();
                list.extend(unfinished);
                for (k, c) in list.iter_mut().enumerate() {
                    if k == 0 {
                        c.rewind(offset, word);
                    } else {
                        c.rewind(0, 0);
                    }
                }
                list
            }
        };
        self.sink.flush();
        self.tempo.reset();
        self.last_step = None;
        let moved = {
            let mut m = lock(&self.control.marks);
            let epoch = self.seen_epoch;
            let tags: Vec<u64> = m
                .pending
                .iter()
                .filter(|(_, (e, _))| *e == epoch)
                .map(|(&tag, _)| tag)
                .collect();
            m.heard = list.front().map(|c| Heard {
                id: c.id,
                sentence: c.range.clone(),
                word: c.words.get(c.next_word).map(|w| w.text.clone()),
            });
            let mut moved: Vec<Mark> = Vec::new();
            for tag in tags {
                if let Some((_, mark @ (Mark::Started(_) | Mark::Onset(..) | Mark::Finished(_)))) =
                    m.pending.remove(&tag)
                {
                    moved.push(mark);
                }
            }
            moved
        };
        let at = self.sink.written();
        let mut homeless = false;
        for mark in moved {
            let (id, finish) = match &mark {
                Mark::Started(id) | Mark::Onset(id, _) => (*id, false),
                Mark::Finished(s) => (s.id, true),
                _ => continue,
            };
            let mut of_id = list.iter_mut().filter(|c| c.id == id);
            let home = if finish { of_id.last() } else { of_id.next() };
            match (home, finish) {
                (Some(c), true) => c.after.push(mark),
                (Some(c), false) => c.before.push(mark),
                (None, _) => {
                    self.add_mark(at, mark);
                    homeless = true;
                }
            }
        }
        if homeless {
            // Its sample was flushed: a moment of silence for the marks to play at.
            let silence = vec![0.0; self.voice.config.sample_rate as usize / 100];
            if let Err(e) = self.sink.write(&silence) {
                return self.sink_lost(e);
            }
        }
        self.ahead = list;
        self.next_sentence();
    }

    /// Keeps a finished sentence's timing in the timeline: samples from the utterance's
    /// first, through the speed stage's final map (before it restarts).
    fn record(&self, cur: &Current, utt_base: u64, written: Range<u64>) {
        let rel = |pos: u64| pos.saturating_sub(utt_base);
        let timing = SentenceTiming::new(
            cur.index,
            cur.range.clone(),
            rel(written.start)..rel(written.end),
            &cur.words,
            |model| self.tempo.output_at(model.saturating_sub(cur.skipped)),
        );
        let mut t = self
            .control
            .timeline
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if t.len() >= TIMELINE_SENTENCES {
            t.pop_front();
        }
        t.push_back((cur.id, timing));
    }

    /// All of `id`'s text has been synthesised: finish it when its last sample plays.
    fn complete(&mut self, id: UtteranceId) {
        let Some(u) = self.utts.remove(&id) else {
            // Nothing speakable in it.
            self.emit(Event::Stats(self.stats(id, None)));
            self.emit(Event::Finished { id, stopped: false });
            return;
        };
        let stats = self.stats(id, Some(&u));
        let end = self.sink.written().saturating_sub(1);
        self.add_mark(end, Mark::Finished(stats));
    }

    fn stats(&self, id: UtteranceId, u: Option<&Utt>) -> Stats {
        let rate = self.voice.config.sample_rate as f64;
        Stats {
            id,
            onset_ms: None,
            rtf: u.map_or(0.0, |u| {
                if u.samples == 0 {
                    0.0
                } else {
                    u.synth_ms / 1e3 / (u.samples as f64 / rate)
                }
            }),
            queue_depth: self.control.queue.len(),
            backend: self.backend_name.clone(),
            underruns: u.map_or(0, |u| {
                self.sink.underruns().saturating_sub(u.underruns_at_start)
            }),
            first_step: u.map_or(0, |u| u.first_step),
            first_audio_path_ms: u.map_or([None; 3], |u| u.path),
        }
    }

    /// A stop (epoch change): flush audio, finish every utterance in flight as stopped.
    fn stopped(&mut self, epoch: u64) {
        self.seen_epoch = epoch;
        self.sink.flush();
        self.current = None;
        self.ahead.clear();
        self.kept.clear();
        self.control.kept_samples.store(0, Ordering::Relaxed);
        self.tempo.reset();
        self.last_step = None;
        let mut ids = BTreeSet::new();
        let mut finished = Vec::new();
        let onsets: HashMap<UtteranceId, f64>;
        {
            let mut m = lock(&self.control.marks);
            let stale: Vec<u64> = m
                .pending
                .iter()
                .filter(|(_, (e, _))| *e < epoch)
                .map(|(&tag, _)| tag)
                .collect();
            for tag in stale {
                if let Some((_, Mark::Finished(s))) = m.pending.remove(&tag) {
                    ids.insert(s.id);
                    finished.push(s);
                }
            }
            onsets = std::mem::take(&mut m.onsets);
            m.heard = None;
        }
        let utts: Vec<(UtteranceId, Utt)> = self.utts.drain().collect();
        for (id, u) in &utts {
            ids.insert(*id);
            finished.push(self.stats(*id, Some(u)));
        }
        for id in std::mem::take(&mut self.control.book().stopped) {
            if ids.insert(id) {
                finished.push(self.stats(id, None));
            }
        }
        finished.sort_by_key(|s| s.id);
        for mut s in finished {
            s.onset_ms = onsets.get(&s.id).copied();
            let id = s.id;
            self.emit(Event::Stats(s));
            self.emit(Event::Finished { id, stopped: true });
        }
        self.sink.set_expecting(false);
    }

    /// The device failed: drop what was in flight, reopen, or carry on without audio.
    fn sink_lost(&mut self, e: AudioError) {
        self.error(
            None,
            format!("audio output failed: {e}; speech in progress was dropped"),
        );
        // As if the user pressed stop, so queued text for the lost audio is not half-spoken.
        {
            let mut book = self.control.book();
            let dropped: Vec<UtteranceId> = book.open.drain().map(|(id, _)| id).collect();
            book.stopped.extend(dropped);
            book.last = None;
            self.control.transport.stop.fetch_add(1, Ordering::AcqRel);
        }
        self.control.queue.retain(|_| false);
        let epoch = self.control.epoch();
        self.stopped(epoch);
        // Close the failed stream first: a dead one may keep its driver thread busy.
        self.sink = Box::new(NullSink::new(Arc::clone(&self.on_mark)));
        self.try_reopen();
    }

    /// Reopens the device with a larger buffer if it kept playing this one dry.
    fn grow_buffer_if_played_dry(&mut self) {
        if let Output::Sink(open) = &self.output
            && self.sink.buffer_too_small()
            && open.grow_buffer()
        {
            self.sink = Box::new(NullSink::new(Arc::clone(&self.on_mark)));
            self.try_reopen();
        }
    }

    fn try_reopen(&mut self) {
        if matches!(self.output, Output::None) {
            return;
        }
        let rate = self.voice.config.sample_rate;
        for attempt in 0..3u64 {
            std::thread::sleep(Duration::from_millis(100 * attempt));
            match open_sink(&self.output, rate, &self.on_mark, &self.control) {
                Ok(mut s) => {
                    s.set_volume(self.settings.volume);
                    s.set_paused(self.paused);
                    self.sink = s;
                    if self.sink_fallback {
                        tracing::info!("audio device is back");
                    }
                    self.sink_fallback = false;
                    return;
                }
                // A device that opens but does not play will not start within 300 ms.
                Err(e) if attempt == 2 || matches!(e, AudioError::NotPlaying) => {
                    if !self.sink_fallback {
                        self.error(
                            None,
                            format!("no audio device: {e}; will retry at the next utterance"),
                        );
                    }
                    break;
                }
                Err(_) => {}
            }
        }
        self.sink = Box::new(NullSink::new(Arc::clone(&self.on_mark)));
        self.sink_fallback = true;
    }
}

#[cfg(test)]
mod tests {
    use super::lead_in_cut;

    const RATE: f64 = 22_050.0;

    #[test]
    fn lead_in_is_skipped_up_to_just_before_the_voice() {
        // 1 ms (22 samples) of pre-roll is kept.
        assert_eq!(lead_in_cut(Some(905), 4096, 0, RATE), 883..4096);
        assert_eq!(lead_in_cut(Some(10), 4096, 0, RATE), 0..4096);
        // Nothing audible yet: skip the whole chunk and keep looking.
        assert_eq!(lead_in_cut(None, 4096, 0, RATE), 4096..4096);
    }

    #[test]
    fn no_more_than_250_ms_is_skipped() {
        let limit = (0.25 * RATE) as usize;
        assert_eq!(lead_in_cut(None, 4096, limit - 100, RATE), 100..4096);
        assert_eq!(lead_in_cut(Some(3000), 4096, limit - 100, RATE), 100..4096);
        assert_eq!(lead_in_cut(None, 4096, limit, RATE), 0..4096);
    }
}
