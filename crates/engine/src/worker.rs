//! The engine thread: owns the backend (created here, so a CUDA context lives on this
//! thread) and the audio output; turns queued segments into audio in adaptive steps.

use super::api::{Control, Event, Settings, Stats, TIMELINE_SENTENCES, UtteranceId};
use super::phonemise::WordIds;
use super::steps::{StepInput, StepPolicy, next_step};
use super::tempo::{self, Tempo};
use super::timing::{SentenceTiming, SpokenWord, place_words};
use super::{BackendChoice, EngineError, GpuEngine, GpuOptions, make_backend};
use crate::output::Output;
use crate::output::{AudioError, AudioSink, MarkFn, NullSink};
use hark_model::backend::Backend;
use hark_voice::Voice;
use std::collections::{BTreeSet, HashMap};
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

pub(crate) enum Cmd {
    /// Something changed (new segment, stop, shutdown): look again.
    Wake,
    Pause,
    Resume,
    Settings(Settings),
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
            Item::Segment { epoch, .. } | Item::JobEnd { epoch, .. } => *epoch,
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
    pub control: Arc<Control>,
    pub events: tokio::sync::mpsc::UnboundedSender<Event>,
    pub ready: mpsc::SyncSender<Result<String, EngineError>>,
}

/// Events waiting for their sample to reach the device.
enum Mark {
    Started(UtteranceId),
    Progress(UtteranceId, Range<usize>),
    Word(UtteranceId, Range<usize>),
    Onset(UtteranceId, Instant),
    Finished(Stats),
}

#[derive(Default)]
struct Marks {
    next_tag: u64,
    pending: HashMap<u64, Mark>,
    onsets: HashMap<UtteranceId, f64>,
}

type SharedMarks = Arc<Mutex<Marks>>;

fn lock(m: &SharedMarks) -> std::sync::MutexGuard<'_, Marks> {
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

/// The sentence being synthesised.
struct Current {
    id: UtteranceId,
    frames: usize,
    pos: usize,
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
    sink: Box<dyn AudioSink>,
    /// The device was lost and could not be reopened; try again at the next utterance.
    sink_fallback: bool,
    marks: SharedMarks,
    on_mark: MarkFn,
    seen_epoch: u64,
    paused: bool,
    current: Option<Current>,
    utts: HashMap<UtteranceId, Utt>,
    last_step: Option<(usize, f64)>,
    /// Speed and pitch on the PCM (bypassed at 1× and 0 semitones).
    tempo: Tempo,
    /// Its output for the current step.
    stretched: Vec<f32>,
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
        let Some(mark) = m.pending.remove(&tag) else {
            return; // flushed by a stop
        };
        let ev = match mark {
            Mark::Started(id) => Event::Started { id },
            Mark::Progress(id, char_range) => Event::Progress { id, char_range },
            Mark::Word(id, char_range) => Event::Word { id, char_range },
            Mark::Onset(id, requested) => {
                let ms = at.saturating_duration_since(requested).as_secs_f64() * 1e3;
                m.onsets.insert(id, ms);
                return;
            }
            Mark::Finished(mut stats) => {
                stats.onset_ms = m.onsets.remove(&stats.id);
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

impl Worker {
    fn new(init: WorkerInit) -> Result<Self, EngineError> {
        let mut backend = make_backend(init.backend, init.engine, &init.voice, &init.gpu)?;
        let backend_name = backend.name();
        if init.warm_up {
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
        let marks: SharedMarks = Arc::default();
        let on_mark = mark_fn(Arc::clone(&marks), init.events.clone());
        let mut sink = open_sink(
            &init.output,
            init.voice.config.sample_rate,
            &on_mark,
            &init.control,
        )
        .map_err(|e| EngineError::Sink(e.to_string()))?;
        sink.set_volume(init.settings.volume);
        let tempo = Tempo::new(init.voice.config.sample_rate);
        Ok(Self {
            tempo,
            stretched: Vec::new(),
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
            sink,
            sink_fallback: false,
            marks,
            on_mark,
            paused: false,
            current: None,
            utts: HashMap::new(),
            last_step: None,
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
                    self.tempo.aim(s.speed, s.pitch, cur.length_speed);
                }
            }
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
            return IDLE_WAIT;
        }
        // Wake in time to push out the resampler's tail before playback reaches it.
        Duration::from_secs_f64((buffered - DRAIN_BELOW_MS) / 1e3)
            .clamp(Duration::from_millis(2), IDLE_WAIT)
    }

    fn take(&mut self, item: Item) {
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
                ..
            } => self.begin(id, range, &ids, words, index, requested),
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
        let tag = {
            let mut m = lock(&self.marks);
            m.next_tag += 1;
            let tag = m.next_tag;
            m.pending.insert(tag, mark);
            tag
        };
        // Outside the lock: a headless sink fires the mark at once.
        self.sink.mark(pos, tag);
    }

    fn begin(
        &mut self,
        id: UtteranceId,
        range: Range<usize>,
        ids: &[i64],
        words: Vec<WordIds>,
        index: usize,
        requested: Instant,
    ) {
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
        self.add_mark(self.sink.written(), Mark::Progress(id, range.clone()));
        let t = Instant::now();
        let seed = self.settings.seed.wrapping_add(index as u64);
        // The speed: the length scale's part now, sonic's from the first sample.
        let split = tempo::split(self.settings.speed);
        let mut scales = self.settings.scales;
        scales.length_scale *= split.length_factor;
        let begun = self.backend.begin(ids, &scales, seed);
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
                let words = place_words(&info.durations, &words, hop);
                let length_speed =
                    tempo::length_speed_of(&split, &info, self.settings.scales.length_scale);
                self.tempo.restart();
                let s = &self.settings;
                self.tempo.aim(s.speed, s.pitch, length_speed);
                self.current = Some(Current {
                    id,
                    frames: info.frames,
                    pos: 0,
                    out_base: self.sink.written(),
                    skipped: 0,
                    length_speed,
                    words,
                    next_word: 0,
                    index,
                    range,
                });
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

    fn step(&mut self) {
        let Some(mut cur) = self.current.take() else {
            return;
        };
        let input = StepInput {
            queue_depth: self.control.queue.len(),
            buffered_ms: self.sink.buffered_ms(),
            last: self.last_step,
        };
        let n = next_step(self.settings.steps, &self.policy, &input).min(cur.frames - cur.pos);
        let (id, start) = (cur.id, cur.pos);
        cur.pos += n;
        let last = cur.pos >= cur.frames;
        let t = Instant::now();
        let (control, seen) = (&self.control, self.seen_epoch);
        // A stop abandons the step between its stages instead of waiting for all of it.
        let stopped = || control.epoch() != seen;
        let samples = match self.backend.decode_cancellable(start, start + n, &stopped) {
            Ok(Some(s)) => s,
            Ok(None) => {
                // Stopped while decoding: this audio must not play (the stop drops the rest).
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
        // The speed stage (a copy when bypassed), and at the sentence's end what it holds.
        let mut out = std::mem::take(&mut self.stretched);
        out.clear();
        self.tempo.process(&samples[play], &mut out);
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
        let decoded = (cur.pos * self.voice.config.hop_length) as u64;
        while let Some(w) = cur.words.get(cur.next_word) {
            let p = w.model.start.saturating_sub(cur.skipped);
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
            self.record(&cur, utt_base, cur.out_base..written + out_len);
            self.tempo.restart();
        } else {
            self.current = Some(cur);
        }
        if self.emit_chunks {
            // What plays: after the lead-in cut and the speed stage.
            let samples = self.stretched.clone();
            self.emit(Event::Chunk { id, samples });
        }
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
        self.tempo.reset();
        self.last_step = None;
        let mut ids = BTreeSet::new();
        let mut finished = Vec::new();
        let onsets: HashMap<UtteranceId, f64>;
        {
            let mut m = lock(&self.marks);
            for (_, mark) in m.pending.drain() {
                if let Mark::Finished(s) = mark {
                    ids.insert(s.id);
                    finished.push(s);
                }
            }
            onsets = std::mem::take(&mut m.onsets);
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
