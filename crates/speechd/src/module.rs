//! The module: reads speech-dispatcher's commands from stdin, keeps one streaming engine
//! warm, and reports the engine's events (heard at the audio callback) on stdout.
//!
//! Threads: this one reads and answers commands; one thread per engine turns its events into
//! `701 BEGIN` / `700 INDEX MARK` / `702 END` / `703 STOP` / `704 PAUSE`; the clip cache is
//! built on another when it is not on disk. Replies and events go through one lock on stdout,
//! so lines never interleave, and a message's `200 OK SPEAKING` always comes before its events
//! (speech-dispatcher reads the reply first).

use crate::cache::{self, Clips};
use crate::keys;
use crate::protocol::{self, Command, MsgKind, Parser, Report};
use crate::settings::{
    CapLetters, SpdSettings, gain_for_volume, semitones_for_pitch, speed_for_rate,
};
use hark_engine::tempo;
use hark_engine::{
    BackendChoice, Clip, Engine, EngineConfig, Event, Input, Mode, Overrides, Settings, UtteranceId,
};
use hark_text::ssml::{self, Document, Item};
use hark_voice::Voice;
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Instant;

/// The module's own configuration: its config file (`hark.conf`, speech-dispatcher's
/// syntax: `Key value` lines, `#` comments) over the `HARK_*` overrides.
#[derive(Clone, Debug)]
pub struct ModuleConfig {
    pub voices_dir: PathBuf,
    pub voice: Option<String>,
    pub backend: BackendChoice,
    pub cache_dir: PathBuf,
    /// Play on a simulated device (no sound card) instead of the default device.
    pub simulated_audio: bool,
    pub buffer_ms: Option<u32>,
    /// The voice's noise scales instead of its own (0 and 0: deterministic, for tests).
    pub noise_scale: Option<f32>,
    pub noise_w: Option<f32>,
    pub overrides: Overrides,
}

impl ModuleConfig {
    pub fn new(overrides: Overrides) -> Self {
        Self {
            voices_dir: overrides.voices_dir.clone(),
            voice: None,
            backend: BackendChoice::Auto,
            cache_dir: default_cache_dir(),
            simulated_audio: false,
            // A 5 ms period: a key's sound waits at most that long for the callback.
            buffer_ms: overrides.audio_buffer_ms.or(Some(5)),
            noise_scale: None,
            noise_w: None,
            overrides,
        }
    }

    /// Reads `HarkVoicesDir`, `HarkVoice`, `HarkBackend`, `HarkCacheDir`, `HarkAudio`
    /// (`device` or `simulated`), `HarkAudioBufferMs`, `HarkNoiseScale` and `HarkNoiseW`;
    /// other lines are ignored.
    pub fn read_file(&mut self, text: &str) -> Result<(), String> {
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let value = value.trim().trim_matches('"').to_string();
            let bad = || format!("line {}: bad value for {key}", n + 1);
            match key {
                "HarkVoicesDir" => self.voices_dir = PathBuf::from(value),
                "HarkVoice" => self.voice = (!value.is_empty()).then_some(value),
                "HarkBackend" => {
                    self.backend = match value.as_str() {
                        "auto" => BackendChoice::Auto,
                        "cpu" => BackendChoice::Cpu,
                        "cuda" | "gpu" => BackendChoice::Cuda,
                        _ => return Err(bad()),
                    }
                }
                "HarkCacheDir" => self.cache_dir = PathBuf::from(value),
                "HarkAudio" => {
                    self.simulated_audio = match value.as_str() {
                        "device" => false,
                        "simulated" => true,
                        _ => return Err(bad()),
                    }
                }
                "HarkNoiseScale" | "HarkNoiseW" => {
                    let v: f32 = value
                        .parse()
                        .ok()
                        .filter(|v: &f32| v.is_finite() && *v >= 0.0)
                        .ok_or_else(bad)?;
                    if key == "HarkNoiseScale" {
                        self.noise_scale = Some(v);
                    } else {
                        self.noise_w = Some(v);
                    }
                }
                "HarkAudioBufferMs" => {
                    self.buffer_ms = Some(
                        value
                            .parse()
                            .ok()
                            .filter(|ms| (1..=500).contains(ms))
                            .ok_or_else(bad)?,
                    )
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// `$XDG_CACHE_HOME/hark/speechd`.
pub fn default_cache_dir() -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(|| PathBuf::from(".cache"))
        .join("hark")
        .join("speechd")
}

/// The language of a voice, from its name (`en_US-joe-medium` → `en-US`) or else its
/// espeak-ng voice.
pub fn voice_language(name: &str, espeak_voice: &str) -> String {
    let tag = name.split('-').next().unwrap_or("");
    let valid = tag.len() >= 2 && tag.chars().all(|c| c.is_ascii_alphabetic() || c == '_');
    if valid {
        tag.replace('_', "-")
    } else {
        espeak_voice.to_string()
    }
}

/// A voice's name as LIST VOICES gives it: its folder's (`hark_voice::store::list`).
fn folder_name(v: &Voice) -> String {
    v.dir.file_name().map_or_else(
        || v.config.name.clone(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Stdout, one writer at a time.
pub struct Out {
    w: Mutex<Box<dyn Write + Send>>,
}

impl Out {
    pub fn new(w: Box<dyn Write + Send>) -> Self {
        Self { w: Mutex::new(w) }
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, Box<dyn Write + Send>> {
        self.w.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn send(&self, lines: &str) {
        send(&mut **self.lock(), lines);
    }
}

fn send(w: &mut dyn Write, lines: &str) {
    // A closed stdout means speech-dispatcher is gone; the read loop ends on its own.
    let _ = w.write_all(lines.as_bytes());
    let _ = w.write_all(b"\n");
    let _ = w.flush();
}

/// The message speech-dispatcher is waiting on.
#[derive(Default)]
struct Track {
    current: Option<UtteranceId>,
    begun: bool,
    /// PAUSE asked for: stop at the next mark.
    pause: bool,
    /// Stopped at a mark for a pause: its end is `704 PAUSE`.
    pausing: bool,
}

struct Shared {
    out: Arc<Out>,
    track: Mutex<Track>,
    /// A synthesis error on the GPU: the next message restarts the engine on the CPU.
    gpu_failed: AtomicBool,
    /// Per utterance: ms from reading its message's last line to the engine call, added to
    /// the engine's onset in the `timing:` line (so it counts from the command).
    pre_ms: Mutex<HashMap<UtteranceId, f64>>,
}

impl Shared {
    fn track(&self) -> std::sync::MutexGuard<'_, Track> {
        self.track.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Clips at the current rate, as the engine plays them.
struct ClipSet {
    rate: i32,
    clips: HashMap<String, Clip>,
}

pub struct Module {
    config: ModuleConfig,
    shared: Arc<Shared>,
    engine: Option<Arc<Engine>>,
    backend_name: String,
    voice: Option<Arc<Voice>>,
    spd: SpdSettings,
    /// What the engine was last given.
    applied: Option<(Settings, hark_text::normalize::PunctuationVerbosity)>,
    clips: Arc<RwLock<Option<ClipSet>>>,
    /// Clips made from cached ones (pitched, joined), by what they say.
    derived: HashMap<(String, i32, i32), Clip>,
    /// Cancels the clip build in progress.
    building: Option<(i32, Arc<AtomicBool>)>,
    /// When the last line from speech-dispatcher was read.
    line_read: Instant,
}

impl Module {
    pub fn new(config: ModuleConfig, out: Arc<Out>) -> Self {
        Self {
            config,
            shared: Arc::new(Shared {
                out,
                track: Mutex::default(),
                gpu_failed: AtomicBool::new(false),
                pre_ms: Mutex::default(),
            }),
            engine: None,
            backend_name: String::new(),
            voice: None,
            spd: SpdSettings::default(),
            applied: None,
            clips: Arc::default(),
            derived: HashMap::new(),
            building: None,
            line_read: Instant::now(),
        }
    }

    fn out(&self) -> &Out {
        &self.shared.out
    }

    /// INIT: loads the voice and starts the engine. The message for `299-`/`399-`.
    pub fn init(&mut self) -> Result<String, String> {
        let voice = Voice::load_from(&self.config.voices_dir, self.config.voice.as_deref())
            .map_err(|e| format!("Hark: {e}"))?;
        self.start_engine(Arc::new(voice), self.config.backend)?;
        Ok(format!(
            "Hark: voice {} on {}",
            self.voice.as_deref().map_or(String::new(), folder_name),
            self.backend_name
        ))
    }

    fn start_engine(&mut self, voice: Arc<Voice>, backend: BackendChoice) -> Result<(), String> {
        // The old engine first: one audio stream and one backend at a time.
        self.engine = None;
        let config = |backend| {
            let mut cfg =
                EngineConfig::new(Arc::clone(&voice)).with_overrides(&self.config.overrides);
            cfg.backend = backend;
            cfg.output = if self.config.simulated_audio {
                hark_audio::simulated(self.config.buffer_ms)
            } else {
                hark_audio::device(self.config.buffer_ms)
            };
            cfg
        };
        // A GPU that does not start leaves the CPU; a sound card that cannot be opened is an
        // INIT error speech-dispatcher reports (once running, the engine reopens a lost one).
        let (engine, events) = match Engine::start(config(backend)) {
            Ok(e) => e,
            Err(e) if !matches!(backend, BackendChoice::Cpu) => {
                tracing::warn!("engine did not start ({e}); trying the CPU");
                Engine::start(config(BackendChoice::Cpu))
                    .map_err(|e| format!("Hark: the engine did not start: {e}"))?
            }
            Err(e) => return Err(format!("Hark: the engine did not start: {e}")),
        };
        self.backend_name = engine.backend().to_string();
        tracing::info!("engine on {}", self.backend_name);
        let engine = Arc::new(engine);
        spawn_events(Arc::downgrade(&engine), events, Arc::clone(&self.shared));
        self.engine = Some(engine);
        let voice_changed = self.voice.as_ref().is_none_or(|v| v.dir != voice.dir);
        self.voice = Some(voice);
        self.applied = None;
        if voice_changed {
            *self.clips.write().unwrap_or_else(|e| e.into_inner()) = None;
            self.derived.clear();
            self.building = None;
        }
        self.apply_settings();
        Ok(())
    }

    /// Runs the protocol until QUIT or the end of stdin. Returns the exit code.
    pub fn run(&mut self, input: &mut dyn BufRead) -> i32 {
        let mut parser = Parser::default();
        let mut line = Vec::new();
        loop {
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) => {
                    tracing::info!("stdin closed; exiting");
                    return 0;
                }
                Ok(_) => self.line_read = Instant::now(),
                Err(e) => {
                    tracing::warn!("reading stdin failed: {e}; exiting");
                    return 1;
                }
            }
            let text = String::from_utf8_lossy(&line);
            let step = parser.line(&text);
            if let Some(r) = &step.reply {
                self.out().send(r);
            }
            if let Some(cmd) = step.command
                && self.command(cmd)
            {
                return 0;
            }
        }
    }

    /// Carries out one command (its last line read at `line_read`); true for QUIT.
    fn command(&mut self, cmd: Command) -> bool {
        match cmd {
            Command::Speak { kind, text } => self.speak(kind, &text),
            Command::Stop => {
                tracing::debug!("stop");
                if let Some(e) = &self.engine {
                    e.stop();
                }
            }
            Command::Pause => {
                let mut t = self.shared.track();
                if t.current.is_some() {
                    t.pause = true;
                    // The callback holds at the next mark's sample; the event thread then
                    // ends the message there (704 PAUSE).
                    if let Some(e) = &self.engine {
                        e.pause_at_next_mark(true);
                    }
                }
            }
            Command::ListVoices => {
                let voices: Vec<(String, String)> =
                    hark_voice::store::list(&self.config.voices_dir)
                        .into_iter()
                        .map(|v| {
                            let espeak = Voice::load_config(&self.config.voices_dir, Some(&v.name))
                                .map(|c| c.espeak_voice)
                                .unwrap_or_default();
                            let lang = voice_language(&v.name, &espeak);
                            (v.name, lang)
                        })
                        .collect();
                self.out().send(&protocol::voice_list(&voices));
            }
            Command::Set(pairs) => {
                let mut ok = true;
                for (k, v) in &pairs {
                    if let Err(e) = self.spd.set(k, v) {
                        tracing::debug!("SET {k}: {e}");
                        ok = false;
                    }
                }
                self.apply_settings();
                if ok {
                    self.out().send("203 OK SETTINGS RECEIVED");
                } else {
                    self.out().send(protocol::BAD_PARAM);
                }
            }
            Command::Audio(pairs) => {
                // speech-dispatcher first offers to play the audio itself
                // (`audio_output_method=server`); Hark plays its own (the callback is where
                // marks and stops are timed), so it declines, and speech-dispatcher sends the
                // usual settings, which name the device it would use: noted, not needed.
                if pairs
                    .iter()
                    .any(|(k, v)| k == "audio_output_method" && v == "server")
                {
                    self.out()
                        .send("300-Hark plays its own audio\n300 MODULE ERROR");
                    return false;
                }
                for (k, v) in &pairs {
                    tracing::debug!("audio setting {k}={v}");
                }
                self.out().send("203 OK AUDIO INITIALIZED");
            }
            Command::LogLevel(pairs) => {
                for (k, v) in &pairs {
                    if k == "log_level"
                        && let Ok(n) = v.parse::<u32>()
                    {
                        crate::set_log_level(n);
                    }
                }
                self.out().send("203 OK LOGLEVEL SET");
            }
            Command::Debug { on, .. } => {
                self.out().send(if on {
                    "200 OK DEBUGGING ON"
                } else {
                    "200 OK DEBUGGING OFF"
                });
            }
            Command::Quit => {
                if let Some(e) = &self.engine {
                    e.stop();
                }
                self.out().send("210 OK QUIT");
                return true;
            }
        }
        false
    }

    /// What the engine and the clip cache are given for the current settings.
    fn apply_settings(&mut self) {
        self.maybe_switch_voice();
        let (Some(engine), Some(voice)) = (&self.engine, &self.voice) else {
            return;
        };
        let mut s = Settings::for_voice(voice);
        s.speed = speed_for_rate(self.spd.rate);
        s.pitch = semitones_for_pitch(self.spd.pitch);
        s.volume = gain_for_volume(self.spd.volume);
        if let Some(n) = self.config.noise_scale {
            s.scales.noise_scale = n;
        }
        if let Some(n) = self.config.noise_w {
            s.scales.noise_w = n;
        }
        let wanted = (s, self.spd.punctuation);
        if self.applied != Some(wanted) {
            if self.applied.map(|a| a.0) != Some(s) {
                engine.set_settings(s);
            }
            if self.applied.map(|a| a.1) != Some(self.spd.punctuation) {
                engine.set_punctuation(self.spd.punctuation);
            }
            self.applied = Some(wanted);
        }
        self.ensure_clips();
    }

    /// SET synthesis_voice / language naming another installed voice: switch to it.
    fn maybe_switch_voice(&mut self) {
        let Some(current) = self.voice.as_deref().map(folder_name) else {
            return;
        };
        let installed = hark_voice::store::list(&self.config.voices_dir);
        let wanted = if let Some(name) = &self.spd.synthesis_voice {
            installed.iter().find(|v| &v.name == name)
        } else if let Some(lang) = &self.spd.language {
            let lang = lang.to_ascii_lowercase().replace('_', "-");
            let current_lang = voice_language(&current, "").to_ascii_lowercase();
            if current_lang.starts_with(&lang) || lang.starts_with(&current_lang) {
                None
            } else {
                installed.iter().find(|v| {
                    voice_language(&v.name, "")
                        .to_ascii_lowercase()
                        .starts_with(&lang)
                })
            }
        } else {
            None
        };
        let Some(v) = wanted.filter(|v| v.name != current) else {
            return;
        };
        match Voice::load_from(&self.config.voices_dir, Some(&v.name)) {
            Ok(voice) => {
                tracing::info!("switching to voice {}", v.name);
                if let Err(e) = self.start_engine(Arc::new(voice), self.config.backend) {
                    tracing::warn!("{e}");
                }
            }
            Err(e) => tracing::warn!("voice {} did not load: {e}", v.name),
        }
    }

    /// The clips for the current voice and rate: from disk, else built in the background.
    /// Until they are ready the clips of another rate play, or keys are synthesised.
    fn ensure_clips(&mut self) {
        let Some(voice) = self.voice.clone() else {
            return;
        };
        let rate = self.spd.rate;
        let have = self
            .clips
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|c| c.rate);
        if have == Some(rate) || self.building.as_ref().is_some_and(|b| b.0 == rate) {
            return;
        }
        if let Some((_, cancel)) = self.building.take() {
            cancel.store(true, Ordering::Relaxed);
        }
        let path = cache::path(&self.config.cache_dir, &voice, rate);
        if let Some(clips) = cache::load(&path) {
            tracing::info!("clip cache loaded ({} clips)", clips.len());
            self.install_clips(rate, clips);
            return;
        }
        let cancel = Arc::new(AtomicBool::new(false));
        self.building = Some((rate, Arc::clone(&cancel)));
        let slot = Arc::clone(&self.clips);
        let engine = self.engine.as_ref().map(Arc::downgrade);
        let spawned = std::thread::Builder::new()
            .name("hark-clip-cache".into())
            .spawn(move || {
                let t = std::time::Instant::now();
                let Some(clips) = cache::build_in_background(&voice, rate, &cancel) else {
                    return;
                };
                tracing::info!(
                    "clip cache built ({} clips) in {:.1} s",
                    clips.len(),
                    t.elapsed().as_secs_f64()
                );
                if let Err(e) = cache::save(&path, &clips) {
                    tracing::warn!("clip cache not saved: {e}");
                }
                if cancel.load(Ordering::Relaxed) {
                    return;
                }
                let engine = engine.and_then(|w| w.upgrade());
                *slot.write().unwrap_or_else(|e| e.into_inner()) =
                    Some(to_clip_set(rate, clips, engine.as_deref()));
            });
        if let Err(e) = spawned {
            tracing::warn!("clip cache: cannot start its thread: {e}");
        }
    }

    fn install_clips(&mut self, rate: i32, clips: Clips) {
        let set = to_clip_set(rate, clips, self.engine.as_deref());
        *self.clips.write().unwrap_or_else(|e| e.into_inner()) = Some(set);
        self.derived.clear();
    }

    /// SPEAK, CHAR, KEY, SOUND_ICON: starts it and answers `200 OK SPEAKING`.
    fn speak(&mut self, kind: MsgKind, text: &str) {
        // What kind and how long, never what it says.
        tracing::debug!("message: {kind:?}, {} bytes", text.len());
        if self.shared.gpu_failed.swap(false, Ordering::AcqRel)
            && let Some(v) = self.voice.clone()
        {
            tracing::warn!("the GPU failed; going on with the CPU");
            if let Err(e) = self.start_engine(v, BackendChoice::Cpu) {
                tracing::warn!("{e}");
            }
        }
        let Some(engine) = self.engine.clone() else {
            self.out().send(protocol::CANT_SPEAK);
            return;
        };
        enum What {
            Clip(Clip),
            Doc(Document),
        }
        let what = match kind {
            MsgKind::Text => {
                let doc = self.document(text);
                match self.words_clip(&doc) {
                    Some(clip) => What::Clip(clip),
                    None => What::Doc(doc),
                }
            }
            MsgKind::Char => {
                let c = text.chars().next().unwrap_or(' ');
                match self.char_clip(c) {
                    Some(clip) => What::Clip(clip),
                    None => What::Doc(Document::plain(
                        &keys::char_text(c).unwrap_or_else(|| c.to_string()),
                    )),
                }
            }
            MsgKind::Key => match self.key_clip(text) {
                Some(clip) => What::Clip(clip),
                None => {
                    let said: Vec<String> = keys::key_parts(text)
                        .iter()
                        .map(|p| keys::part_text(p))
                        .collect();
                    What::Doc(Document::plain(&said.join(" ")))
                }
            },
            MsgKind::SoundIcon => {
                let rate = self.voice.as_ref().map_or(22_050, |v| v.config.sample_rate);
                What::Clip(self.derived_clip(("icon".into(), 0, 0), || cache::tone(rate)))
            }
        };
        // The message's id is known to the event thread before any of its events, and the
        // reply goes out before them: both locks are held across the start.
        let mut track = self.shared.track();
        let mut out = self.shared.out.lock();
        if track.current.take().is_some() {
            // speech-dispatcher sent a message before the last one ended: that one is over.
            send(&mut **out, &Report::Stop.lines());
        }
        let pre_ms = self.line_read.elapsed().as_secs_f64() * 1e3;
        let id = match &what {
            What::Clip(c) => engine.play(c),
            What::Doc(d) => engine.speak_input(Input::Document(d), Mode::Interrupt),
        };
        *track = Track {
            current: Some(id),
            ..Track::default()
        };
        let mut pre = self.shared.pre_ms.lock().unwrap_or_else(|e| e.into_inner());
        if pre.len() > 64 {
            pre.clear(); // utterances that never reported (cannot happen; bounded anyway)
        }
        pre.insert(id, pre_ms);
        send(&mut **out, protocol::SPEAKING);
    }

    /// A SPEAK message as a document: SSML as speech-dispatcher wraps it, plain text
    /// otherwise; spelled out in spelling mode.
    fn document(&self, text: &str) -> Document {
        let mut doc = if ssml::looks_like_ssml(text) {
            let (doc, err) = ssml::parse_lenient(text);
            if let Some(e) = err {
                tracing::warn!("{e}; reading the message's text without its tags");
            }
            doc
        } else {
            Document::plain(text)
        };
        if self.spd.spelling {
            for item in &mut doc.items {
                if let Item::Text { text, .. } = item {
                    *text = ssml::spell(text);
                }
            }
        }
        doc
    }

    fn clip_samples(&self, key: &str) -> Option<Clip> {
        let set = self.clips.read().unwrap_or_else(|e| e.into_inner());
        set.as_ref()?.clips.get(key).cloned()
    }

    fn voice_rate(&self) -> u32 {
        self.voice.as_ref().map_or(22_050, |v| v.config.sample_rate)
    }

    fn pitch_key(&self) -> i32 {
        self.spd.pitch
    }

    /// A clip made from cached ones, kept for the next time.
    fn derived_clip(&mut self, key: (String, i32, i32), make: impl FnOnce() -> Vec<f32>) -> Clip {
        if let Some(c) = self.derived.get(&key) {
            return c.clone();
        }
        let clip = Clip::new(make());
        if let Some(e) = &self.engine {
            e.prepare(&clip);
        }
        if self.derived.len() > 4096 {
            self.derived.clear();
        }
        self.derived.insert(key, clip.clone());
        clip
    }

    /// CHAR `c` from the cache, with the pitch and the capital-letter cue; `None` when the
    /// cache does not have it (yet).
    fn char_clip(&mut self, c: char) -> Option<Clip> {
        let base = self.clip_samples(&keys::char_key(c))?;
        let capital = c.is_uppercase();
        let cue = if capital {
            self.spd.cap_letters
        } else {
            CapLetters::None
        };
        let pitch = self.pitch_key();
        if cue == CapLetters::None && pitch == 0 {
            return Some(base);
        }
        let rate = self.voice.as_ref().map_or(22_050, |v| v.config.sample_rate);
        let prefix = match cue {
            CapLetters::Spell => Some(self.clip_samples("word:capital")?.samples.to_vec()),
            CapLetters::Icon => Some(cache::tone(rate)),
            CapLetters::None => None,
        };
        let key = (keys::char_key(c), pitch, cue as i32);
        let st = semitones_for_pitch(pitch);
        Some(self.derived_clip(key, || {
            let letter = tempo::pitched(&base.samples, rate, st);
            match prefix {
                Some(p) => cache::join(&[&p, &letter], 40, rate),
                None => letter,
            }
        }))
    }

    /// A message that is one cached name alone (speech-dispatcher's "question" for a typed
    /// `?`), plain, from the cache.
    fn words_clip(&mut self, doc: &Document) -> Option<Clip> {
        let [Item::Text { text, prosody }] = doc.items.as_slice() else {
            return None;
        };
        if *prosody != ssml::Prosody::NEUTRAL {
            return None;
        }
        let key = keys::key_for_words(text)?;
        let base = self.clip_samples(key)?;
        let pitch = self.pitch_key();
        if pitch == 0 {
            return Some(base);
        }
        let (rate, st) = (self.voice_rate(), semitones_for_pitch(pitch));
        Some(self.derived_clip((key.to_string(), pitch, 0), || {
            tempo::pitched(&base.samples, rate, st)
        }))
    }

    /// KEY `name` from cached parts (`shift_a`: "shift", "a").
    fn key_clip(&mut self, name: &str) -> Option<Clip> {
        let parts = keys::key_parts(name);
        let clips: Vec<Clip> = parts
            .iter()
            .map(|p| self.clip_samples(p))
            .collect::<Option<_>>()?;
        let pitch = self.pitch_key();
        if clips.len() == 1 && pitch == 0 {
            return clips.into_iter().next();
        }
        let rate = self.voice.as_ref().map_or(22_050, |v| v.config.sample_rate);
        let st = semitones_for_pitch(pitch);
        Some(
            self.derived_clip((format!("keys:{}", parts.join("+")), pitch, 0), || {
                let s: Vec<&[f32]> = clips.iter().map(|c| &*c.samples).collect();
                tempo::pitched(&cache::join(&s, 60, rate), rate, st)
            }),
        )
    }
}

fn to_clip_set(rate: i32, clips: Clips, engine: Option<&Engine>) -> ClipSet {
    let clips: HashMap<String, Clip> = clips
        .into_iter()
        .filter(|(_, s)| !s.is_empty())
        .map(|(k, s)| (k, Clip::new(s)))
        .collect();
    if let Some(e) = engine {
        for c in clips.values() {
            e.prepare(c);
        }
    }
    ClipSet { rate, clips }
}

/// The `timing:` line of the latest stop: from the call to the last faded sample at the
/// callback, which comes a few ms after the engine reports the stop (waited for here, with
/// no lock held, at most 50 ms). Each stop once.
fn log_stop_latency(engine: &Weak<Engine>, logged: &mut Option<std::time::Duration>) {
    let Some(e) = engine.upgrade() else { return };
    for _ in 0..50 {
        if let Some(l) = e.last_stop_latency() {
            if *logged != Some(l) {
                *logged = Some(l);
                tracing::debug!(
                    "timing: stop_ms={:.2} (the call to the last faded sample at the callback)",
                    l.as_secs_f64() * 1e3
                );
            }
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Turns one engine's events into speech-dispatcher's, for the message it is waiting on.
fn spawn_events(engine: Weak<Engine>, mut events: hark_engine::Events, shared: Arc<Shared>) {
    let spawned = std::thread::Builder::new()
        .name("hark-speechd-events".into())
        .spawn(move || {
            let mut logged_stop = None;
            while let Some(ev) = events.blocking_recv() {
                let stopped_one = matches!(ev, Event::Finished { stopped: true, .. });
                let mut t = shared.track();
                match ev {
                    Event::Started { id } if t.current == Some(id) && !t.begun => {
                        t.begun = true;
                        shared.out.send(&Report::Begin.lines());
                    }
                    Event::Mark { id, name } if t.current == Some(id) => {
                        if !t.begun {
                            t.begun = true;
                            shared.out.send(&Report::Begin.lines());
                        }
                        shared.out.send(&Report::IndexMark(name).lines());
                        if t.pause && !t.pausing {
                            // PAUSE stops at the next mark; speech-dispatcher resumes after
                            // it with the rest of the message.
                            t.pausing = true;
                            if let Some(e) = engine.upgrade() {
                                e.stop();
                                // The callback held at the mark: let the next message play.
                                e.resume();
                            }
                        }
                    }
                    Event::Finished { id, stopped } if t.current == Some(id) => {
                        let report = if t.pausing {
                            Report::Pause
                        } else if stopped {
                            Report::Stop
                        } else {
                            if !t.begun {
                                shared.out.send(&Report::Begin.lines());
                            }
                            Report::End
                        };
                        shared.out.send(&report.lines());
                        if t.pause
                            && let Some(e) = engine.upgrade()
                        {
                            // Ended before a mark came: the pause is void.
                            e.pause_at_next_mark(false);
                            e.resume();
                        }
                        *t = Track::default();
                    }
                    Event::Stats(s) => {
                        // Numbers only: from the command's last line to the callback
                        // handing out the first audible sample.
                        let pre = shared
                            .pre_ms
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .remove(&s.id)
                            .unwrap_or(0.0);
                        tracing::debug!(
                            "timing: utterance {} onset_ms={} pre_ms={pre:.3} backend={}",
                            s.id,
                            s.onset_ms
                                .map_or("none".into(), |o| format!("{:.2}", o + pre)),
                            s.backend
                        );
                    }
                    Event::Error { message, .. } => {
                        // Engine messages never hold the spoken text.
                        tracing::warn!("{message}");
                        if message.starts_with("synthesis failed")
                            && engine
                                .upgrade()
                                .is_some_and(|e| e.backend().contains("cuda"))
                        {
                            shared.gpu_failed.store(true, Ordering::Release);
                        }
                    }
                    _ => {}
                }
                drop(t);
                if stopped_one {
                    log_stop_latency(&engine, &mut logged_stop);
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the event thread: {e}");
    }
}
