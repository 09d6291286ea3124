//! The adapter between the app and the streaming engine (`hark_engine::Engine`): starts it off
//! the main thread, turns the app's settings into engine settings, hands it text (of any
//! length: the engine reads it as it speaks), and turns engine events into UI status. The only
//! file that knows the engine's API.

use crate::events;
use crate::locked::lock;
use crate::managers::history::HistoryManager;
use crate::settings::Settings;
use crate::state::{Level, Source, Speaking, SpokenWord, State, Status};
use hark_engine::{BackendChoice, Engine, EngineConfig, EngineError, Event, Events, Mode};
use hark_voice::Scales;
use hark_voice::{Voice, VoiceError};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tauri::{AppHandle, Manager};

const CONTEXT_CHARS: usize = 240;
const CURRENT_MAX_CHARS: usize = 1200;

struct Utterance {
    text: Arc<str>,
    source: Source,
    requested: std::time::Instant,
    /// Where the highlighted clause the UI shows starts and ends (bytes of `text`).
    shown: std::ops::Range<usize>,
}

/// A step through what is being read ([`EngineManager::navigate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    PreviousSentence,
    RepeatSentence,
    NextSentence,
    #[serde(rename = "back_5s")]
    Back5,
    #[serde(rename = "forward_5s")]
    Forward5,
}

/// How far back and forward 5 s go.
const SKIP_SECONDS: f32 = 5.0;

impl Step {
    /// The action (shortcut) it is.
    pub fn action(self) -> crate::settings::Action {
        use crate::settings::Action;
        match self {
            Step::PreviousSentence => Action::PreviousSentence,
            Step::RepeatSentence => Action::RepeatSentence,
            Step::NextSentence => Action::NextSentence,
            Step::Back5 => Action::Back5,
            Step::Forward5 => Action::Forward5,
        }
    }

    /// What it did, to announce.
    pub fn done(self) -> &'static str {
        match self {
            Step::PreviousSentence => "Previous sentence.",
            Step::RepeatSentence => "Repeating the sentence.",
            Step::NextSentence => "Next sentence.",
            Step::Back5 => "Back 5 seconds.",
            Step::Forward5 => "Forward 5 seconds.",
        }
    }
}

pub struct EngineManager {
    app: AppHandle,
    engine: Mutex<Option<Arc<Engine>>>,
    /// The voice the engine speaks with (timed captions measure their cues with it).
    voice: Mutex<Option<Arc<hark_voice::Voice>>>,
    /// Also holds the voice's own scales, which the noise settings fall back to.
    status: Mutex<Status>,
    utterances: Mutex<HashMap<u64, Utterance>>,
    /// The `HARK_*` overrides, read once at start-up.
    overrides: hark_engine::Overrides,
    /// Bumped by every (re)start so a replaced engine's late events are ignored.
    generation: AtomicU64,
}

impl EngineManager {
    pub fn new(app: AppHandle, overrides: hark_engine::Overrides) -> Self {
        Self {
            app,
            overrides,
            engine: Mutex::new(None),
            voice: Mutex::new(None),
            status: Mutex::new(Status::starting()),
            utterances: Mutex::new(HashMap::new()),
            generation: AtomicU64::new(0),
        }
    }

    pub fn status(&self) -> Status {
        lock(&self.status).clone()
    }

    fn update(&self, f: impl FnOnce(&mut Status)) {
        let s = {
            let mut st = lock(&self.status);
            f(&mut st);
            st.clone()
        };
        events::status(&self.app, &s);
    }

    /// (Re)starts the engine on a worker thread: loading a voice and opening the device take
    /// time, and the UI must stay responsive.
    pub fn start(&self, settings: &Settings) {
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        let old = lock(&self.engine).take();
        self.update(|s| {
            s.state = State::Starting;
            s.message = None;
        });
        let app = self.app.clone();
        let settings = settings.clone();
        let spawned = std::thread::Builder::new()
            .name("hark-engine-start".into())
            .spawn(move || {
                // Dropping the old engine joins its thread: do it here, not on the UI thread.
                drop(old);
                let me = app.state::<EngineManager>();
                me.run(generation, &settings);
            });
        if let Err(e) = spawned {
            self.update(|s| {
                s.state = State::Error;
                s.message = Some(format!("Cannot start the speech engine: {e}"));
            });
        }
    }

    fn run(&self, generation: u64, settings: &Settings) {
        let voice = match load_voice(
            &self.overrides.voices_dir,
            settings.voice.as_deref(),
            settings.speaker.as_deref(),
        ) {
            Ok((v, note)) => {
                if let Some(n) = note {
                    events::notice(&self.app, Level::Warning, &n);
                }
                v
            }
            Err(VoiceError::NoVoices { .. }) => {
                return self.update(|s| {
                    s.state = State::NoVoice;
                    s.voice = None;
                    s.message = Some("No voice is installed yet.".into());
                });
            }
            Err(e) => {
                return self.update(|s| {
                    s.state = State::Error;
                    s.message = Some(e.to_string());
                });
            }
        };
        let voice_name = voice
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        // Sent to the UI with the next status update.
        lock(&self.status).voice_scales = voice.config.inference;
        let voice = Arc::new(voice);
        *lock(&self.voice) = Some(Arc::clone(&voice));
        let config = |backend| {
            let mut c = EngineConfig::new(Arc::clone(&voice)).with_overrides(&self.overrides);
            c.output = hark_audio::device(self.overrides.audio_buffer_ms);
            c.backend = backend;
            c.gpu_engine = settings.gpu_engine;
            c.settings = self.engine_settings(settings);
            c
        };
        let started = match Engine::start(config(settings.backend)) {
            Err(EngineError::CudaUnavailable(why)) => {
                events::notice(
                    &self.app,
                    Level::Warning,
                    &format!("The GPU cannot be used ({why}); using the CPU."),
                );
                Engine::start(config(BackendChoice::Cpu))
            }
            other => other,
        };
        if self.generation.load(Ordering::Acquire) != generation {
            return;
        }
        let (engine, events) = match started {
            Ok(pair) => pair,
            Err(e) => {
                tracing::warn!("speech engine not started: {e}");
                return self.update(|s| {
                    s.state = State::NoAudio;
                    s.voice = voice_name.clone();
                    s.message = Some(format!(
                        "Speech is off: {e}. Hark keeps running; connect an audio device and choose Retry."
                    ));
                });
            }
        };
        let backend = engine.backend();
        tracing::info!("speech engine ready: {backend}");
        *lock(&self.engine) = Some(Arc::new(engine));
        let gpu = gpu_of(&backend);
        self.update(|s| {
            s.state = State::Ready;
            s.message = None;
            s.voice = voice_name.clone();
            s.backend = Some(backend.clone());
            s.gpu = gpu.clone();
        });
        self.forward(generation, events);
    }

    /// Turns engine events into status, the highlighted clause and history updates.
    fn forward(&self, generation: u64, mut rx: Events) {
        while let Some(ev) = rx.blocking_recv() {
            if self.generation.load(Ordering::Acquire) != generation {
                break;
            }
            match ev {
                // The app speaks plain text: no SSML marks.
                Event::Chunk { .. } | Event::Mark { .. } => {}
                Event::Word { id, char_range } => {
                    if let Some(w) = self.word(id, char_range) {
                        events::word(&self.app, &w);
                    }
                }
                Event::Started { id } => {
                    // A first figure for the panel now; the engine's own onset replaces it
                    // with the utterance's stats.
                    let onset = lock(&self.utterances)
                        .get(&id)
                        .map(|u| u.requested.elapsed().as_secs_f64() * 1e3);
                    self.update(|s| {
                        if s.state != State::Paused {
                            s.state = State::Speaking;
                        }
                        s.onset_ms = onset.or(s.onset_ms);
                    })
                }
                Event::Progress { id, char_range } => {
                    if let Some(sp) = self.snippet(id, char_range, false) {
                        events::speaking(&self.app, &sp);
                    }
                }
                Event::Finished { id, .. } => {
                    let remaining = {
                        let mut u = lock(&self.utterances);
                        if let Some(sp) = u.get(&id).map(|x| x.source).map(|source| Speaking {
                            id,
                            source,
                            before: String::new(),
                            current: String::new(),
                            after: String::new(),
                            done: true,
                        }) {
                            events::speaking(&self.app, &sp);
                        }
                        u.remove(&id);
                        u.len()
                    };
                    if remaining == 0 {
                        self.update(|s| {
                            s.state = State::Ready;
                            s.queue_depth = 0;
                        });
                    }
                }
                Event::Error { message, .. } => {
                    events::notice(&self.app, Level::Error, &message);
                }
                Event::Stats(st) => {
                    let history = self.app.state::<HistoryManager>();
                    history.set_onset(st.id, st.onset_ms);
                    events::history(&self.app, &history.list());
                    self.update(|s| {
                        if st.onset_ms.is_some() {
                            s.onset_ms = st.onset_ms;
                        }
                        s.rtf = Some(st.rtf);
                        s.queue_depth = st.queue_depth;
                        s.backend = Some(st.backend.clone());
                        // A start on the CPU moves to the GPU once its kernels are compiled.
                        if let Some(gpu) = gpu_of(&st.backend) {
                            s.gpu = Some(gpu);
                        }
                    });
                }
            }
        }
    }

    /// The word `r` (bytes of the utterance's text) within the clause last shown, in the
    /// UI's string offsets; `None` if it lies outside it.
    fn word(&self, id: u64, r: std::ops::Range<usize>) -> Option<SpokenWord> {
        let u = lock(&self.utterances);
        let utt = u.get(&id)?;
        let (start, end) = word_in_clause(&utt.text, &utt.shown, r)?;
        Some(SpokenWord { id, start, end })
    }

    fn snippet(&self, id: u64, r: std::ops::Range<usize>, done: bool) -> Option<Speaking> {
        let mut u = lock(&self.utterances);
        let utt = u.get_mut(&id)?;
        let t = &*utt.text;
        if r.start > r.end || r.end > t.len() {
            return None;
        }
        let (start, end) = (floor(t, r.start), floor(t, r.end));
        let before_start = back_chars(t, start, CONTEXT_CHARS);
        let cur_end = fwd_chars(t, start, CURRENT_MAX_CHARS).min(end.max(start));
        let after_end = fwd_chars(t, cur_end, CONTEXT_CHARS);
        utt.shown = start..cur_end;
        Some(Speaking {
            id,
            source: utt.source,
            before: t[before_start..start].to_string(),
            current: t[start..cur_end].to_string(),
            after: t[cur_end..after_end].to_string(),
            done,
        })
    }

    fn engine(&self) -> Result<Arc<Engine>, String> {
        if let Some(e) = lock(&self.engine).as_ref() {
            return Ok(Arc::clone(e));
        }
        let st = self.status();
        Err(match st.state {
            State::NoVoice => {
                "No voice is installed. Install the default voice or import a Piper voice first."
                    .into()
            }
            State::Starting => "The speech engine is still starting; try again in a moment.".into(),
            _ => st
                .message
                .unwrap_or_else(|| "The speech engine is not running.".into()),
        })
    }

    /// Speaks `text` (any length: the engine reads it as it goes). Returns the utterance and
    /// the text as kept here (for the history: the text is held twice in all, here and by
    /// the engine, however long).
    pub fn speak(
        &self,
        text: String,
        source: Source,
        mode: Mode,
    ) -> Result<(u64, Arc<str>), String> {
        if text.trim().is_empty() {
            return Err("There is no text to read.".into());
        }
        let engine = self.engine()?;
        let kept: Arc<str> = Arc::from(text.as_str());
        let id = {
            // Held across `speak` so the event thread cannot see the id before it is known.
            let mut u = lock(&self.utterances);
            let id = engine.speak_owned(text, mode);
            if mode == Mode::Interrupt {
                u.clear();
            }
            u.insert(
                id,
                Utterance {
                    text: Arc::clone(&kept),
                    source,
                    requested: std::time::Instant::now(),
                    shown: 0..0,
                },
            );
            id
        };
        self.update(|s| {
            s.state = State::Speaking;
            s.message = None;
        });
        Ok((id, kept))
    }

    /// Speaks a timed caption at `speed` (fitted to its slot), interrupting what plays; the
    /// next [`EngineManager::restore_speed`] goes back to the user's own.
    pub fn speak_fitted(&self, text: String, speed: f32) -> Result<u64, String> {
        let engine = self.engine()?;
        let user = self
            .app
            .state::<crate::managers::settings::SettingsManager>()
            .get();
        let mut s = self.engine_settings(&user);
        s.speed = hark_engine::tempo::clamp_speed(speed);
        engine.set_settings(s);
        self.speak(text, Source::Caption, Mode::Interrupt)
            .map(|(id, _)| id)
    }

    /// The user's own speed again, after timed captions.
    pub fn restore_speed(&self) {
        if let Ok(e) = self.engine() {
            let user = self
                .app
                .state::<crate::managers::settings::SettingsManager>()
                .get();
            e.set_settings(self.engine_settings(&user));
        }
    }

    /// Pauses or resumes (a followed player paused or went on).
    pub fn set_paused(&self, paused: bool) {
        if (self.status().state == State::Paused) != paused {
            self.toggle_pause();
        }
    }

    /// A CPU synthesizer that measures timed captions at the voice and scales speaking now;
    /// `None` until the engine has started.
    pub fn measurer(&self) -> Option<hark_engine::Synthesizer> {
        let voice = lock(&self.voice).clone()?;
        let user = self
            .app
            .state::<crate::managers::settings::SettingsManager>()
            .get();
        let s = self.engine_settings(&user);
        hark_engine::Synthesizer::measuring(voice, s.scales, s.seed).ok()
    }

    /// Steps through the utterance being read; the engine replays what it kept (the highlight
    /// follows its `Progress` and `Word` events). An error when nothing is being read.
    pub fn navigate(&self, step: Step) -> Result<(), String> {
        let engine = self.engine()?;
        if !matches!(self.status().state, State::Speaking | State::Paused) {
            return Err("Nothing is being read.".into());
        }
        match step {
            Step::PreviousSentence => engine.previous_sentence(),
            Step::RepeatSentence => engine.repeat_sentence(),
            Step::NextSentence => engine.next_sentence(),
            Step::Back5 => engine.skip(-SKIP_SECONDS),
            Step::Forward5 => engine.skip(SKIP_SECONDS),
        }
        Ok(())
    }

    pub fn stop(&self) {
        if let Ok(e) = self.engine() {
            e.stop();
        }
        self.update(|s| {
            if matches!(s.state, State::Speaking | State::Paused) {
                s.state = State::Ready;
            }
        });
    }

    /// Pauses when speaking, resumes when paused; returns the new state.
    pub fn toggle_pause(&self) -> State {
        let Ok(e) = self.engine() else {
            return self.status().state;
        };
        let paused = self.status().state == State::Paused;
        if paused {
            e.resume();
        } else {
            e.pause();
        }
        self.update(|s| {
            s.state = if paused {
                if lock(&self.utterances).is_empty() {
                    State::Ready
                } else {
                    State::Speaking
                }
            } else {
                State::Paused
            }
        });
        self.status().state
    }

    /// Applies changed settings: voice, backend and GPU engine need a new engine; the rest is
    /// live.
    pub fn apply(&self, old: &Settings, new: &Settings) {
        let stuck = matches!(
            self.status().state,
            State::NoVoice | State::NoAudio | State::Error
        );
        let restart = old.voice != new.voice
            || old.speaker != new.speaker
            || old.backend != new.backend
            || old.gpu_engine != new.gpu_engine;
        if stuck || restart {
            self.start(new);
        } else if let Ok(e) = self.engine() {
            e.set_settings(self.engine_settings(new));
        }
    }

    fn engine_settings(&self, s: &Settings) -> hark_engine::Settings {
        engine_settings(s, lock(&self.status).voice_scales)
    }
}

/// The engine's settings for the app's, on a voice with scales `voice`: the speed is the
/// engine's own (a real multiple of normal speed), the length scale the voice's.
pub(crate) fn engine_settings(s: &Settings, voice: Scales) -> hark_engine::Settings {
    hark_engine::Settings {
        scales: Scales {
            noise_scale: s.noise_scale.unwrap_or(voice.noise_scale),
            length_scale: voice.length_scale,
            noise_w: s.noise_w.unwrap_or(voice.noise_w),
        },
        volume: s.volume,
        steps: s.step_mode,
        seed: 0,
        speed: s.rate,
        pitch: s.pitch,
    }
}

/// Word `r` (bytes of `t`) inside the clause `shown` (bytes of `t`) as JavaScript string
/// offsets (UTF-16 units) from the clause's start; `None` outside it.
fn word_in_clause(
    t: &str,
    shown: &std::ops::Range<usize>,
    r: std::ops::Range<usize>,
) -> Option<(usize, usize)> {
    if r.start < shown.start || r.end > shown.end || r.start > r.end || shown.end > t.len() {
        return None;
    }
    let (a, b) = (floor(t, r.start), floor(t, r.end));
    let units = |from: usize, to: usize| t[from..to].encode_utf16().count();
    let start = units(shown.start, a);
    Some((start, start + units(a, b)))
}

/// The chosen voice speaking as the chosen speaker; if the voice has gone, the default one,
/// and if it has no such speaker, its first; each with a note saying so.
pub(crate) fn load_voice(
    dir: &Path,
    name: Option<&str>,
    speaker: Option<&str>,
) -> Result<(Voice, Option<String>), VoiceError> {
    let (mut voice, note) = match Voice::load_from(dir, name) {
        Ok(v) => (v, None),
        Err(VoiceError::NotFound { wanted, .. }) if name.is_some() => (
            Voice::load_from(dir, None)?,
            Some(format!(
                "The voice {wanted:?} is no longer installed; using the default voice."
            )),
        ),
        Err(e) => return Err(e),
    };
    let Some(wanted) = speaker else {
        return Ok((voice, note));
    };
    match voice.select_speaker(wanted) {
        Ok(_) => Ok((voice, note)),
        // A speaker of another voice (the voice changed): a single-speaker voice has only
        // its one, quietly; a multi-speaker one says it uses its first.
        Err(_) if !voice.config.is_multi_speaker() => Ok((voice, note)),
        Err(_) => {
            let first = voice.config.speaker_name(0);
            let said = format!(
                "The voice {} has no speaker {wanted:?}; using its speaker {first}.",
                voice.config.name
            );
            Ok((
                voice,
                Some(note.map_or(said.clone(), |n| format!("{n} {said}"))),
            ))
        }
    }
}

fn floor(t: &str, mut i: usize) -> usize {
    while !t.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn back_chars(t: &str, from: usize, n: usize) -> usize {
    t[..from]
        .char_indices()
        .rev()
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i)
}

fn fwd_chars(t: &str, from: usize, n: usize) -> usize {
    t[from..]
        .char_indices()
        .nth(n)
        .map_or(t.len(), |(i, _)| from + i)
}

/// The device of a GPU backend's name: the engine names it "cuda: <device>".
fn gpu_of(backend: &str) -> Option<String> {
    backend
        .strip_prefix("cuda")
        .map(|d| d.trim_start_matches([':', ' ']).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_windows_count_chars_not_bytes() {
        let t = "ééé abc ééé";
        assert_eq!(back_chars(t, t.len(), 3), t.len() - 6);
        assert_eq!(fwd_chars(t, 0, 2), 4);
        assert_eq!(fwd_chars(t, 0, 100), t.len());
        assert_eq!(back_chars(t, 4, 100), 0);
    }

    #[test]
    fn a_word_is_placed_in_the_clause_in_javascript_offsets() {
        // "naïve" after an emoji (two UTF-16 units) and an accent (one), in the clause at 4.
        let t = "Hi. 😀 é naïve end.";
        let shown = 4..t.len();
        let at = t.find("naïve").unwrap();
        let got = word_in_clause(t, &shown, at..at + "naïve".len());
        let js_start = "😀 é ".encode_utf16().count();
        assert_eq!(got, Some((js_start, js_start + 5)));
        // Outside the clause shown: nothing.
        assert_eq!(word_in_clause(t, &shown, 0..2), None);
        assert_eq!(word_in_clause(t, &shown, 5..t.len() + 1), None);
    }

    #[test]
    fn the_speed_setting_is_the_engines_speed() {
        let voice = Scales::PIPER;
        let s = Settings {
            rate: 2.5,
            pitch: -3.0,
            ..Settings::default()
        };
        let e = engine_settings(&s, voice);
        // A real 2.5×: the engine's speed, not a length scale of 1/2.5 (which played 1.66×).
        assert_eq!((e.speed, e.pitch), (2.5, -3.0));
        assert_eq!(e.scales.length_scale, voice.length_scale);
    }
}
