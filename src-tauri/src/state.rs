//! Every value the UI receives: the snapshot types of `get_state`, the command results and the
//! event payloads. Plain data with no behaviour, below everything that fills or sends it;
//! `ui/api.js` mirrors these shapes (a test in `commands` checks the field names).

use crate::settings::Settings;
use hark_voice::Scales;
use serde::{Deserialize, Serialize};

/// Everything the UI shows, in one snapshot.
#[derive(Clone, Debug, Serialize)]
pub struct AppState {
    pub settings: Settings,
    pub voices: Vec<VoiceEntry>,
    pub status: Status,
    pub sources: SourcesStatus,
    pub shortcuts: Vec<ShortcutStatus>,
    pub history: Vec<Item>,
    pub notices: Vec<Notice>,
    /// Whether the default voice's files were found, so onboarding can offer to install it.
    pub default_voice_available: bool,
    pub limits: Limits,
    pub version: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct VoiceEntry {
    pub name: String,
    pub sample_rate: u32,
    pub dtype: String,
    pub size_mb: f64,
    /// The speakers' names in id order; empty for a single-speaker voice.
    pub speakers: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Limits {
    pub rate_min: f32,
    pub rate_max: f32,
    pub pitch_max: f32,
    pub steps_max: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Starting,
    Ready,
    Speaking,
    Paused,
    /// No voice installed: the UI shows onboarding.
    NoVoice,
    /// The audio device could not be opened; the app keeps running.
    NoAudio,
    Error,
}

/// What the status panel shows. Never holds the user's text.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    pub state: State,
    pub message: Option<String>,
    pub voice: Option<String>,
    /// The voice's own scales (Piper's defaults until a voice is loaded): what the noise
    /// settings mean when they are `None`.
    pub voice_scales: Scales,
    pub backend: Option<String>,
    /// The GPU's name when this build has a GPU backend and found one.
    pub gpu: Option<String>,
    pub onset_ms: Option<f64>,
    pub rtf: Option<f64>,
    pub queue_depth: usize,
}

impl Status {
    /// Before the engine has started.
    pub fn starting() -> Self {
        Self {
            state: State::Starting,
            message: None,
            voice: None,
            voice_scales: Scales::PIPER,
            backend: None,
            gpu: None,
            onset_ms: None,
            rtf: None,
            queue_depth: 0,
        }
    }
}

/// The clause being spoken with a little context either side (never the whole text: a 10 MB
/// clipboard must not be pushed into the webview).
#[derive(Clone, Debug, Serialize)]
pub struct Speaking {
    pub id: u64,
    pub source: Source,
    pub before: String,
    pub current: String,
    pub after: String,
    pub done: bool,
}

/// The word being spoken, inside the clause of the latest [`Speaking`] of the same `id`:
/// `current[start..end]` in JavaScript string offsets (UTF-16 units). Never holds the text.
#[derive(Clone, Debug, Serialize)]
pub struct SpokenWord {
    pub id: u64,
    pub start: usize,
    pub end: usize,
}

/// Where a text to read came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Clipboard,
    Selection,
    Typed,
    Caption,
    History,
}

/// One history entry, as shown and (when the user opted in) as saved.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Item {
    pub id: u64,
    pub source: Source,
    pub preview: String,
    pub chars: usize,
    /// Unix time in ms.
    pub at_ms: u64,
    pub onset_ms: Option<f64>,
    #[serde(skip)]
    pub utterance: Option<u64>,
    /// The whole text when short enough to read again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Watch {
    On,
    Off,
    Unavailable,
}

#[derive(Clone, Debug, Serialize)]
pub struct SourcesStatus {
    pub watch: Watch,
    /// Why watching is unavailable, and what to do instead.
    pub note: Option<String>,
    /// The caption file or pipe being followed.
    pub follow: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ShortcutStatus {
    /// The settings key, e.g. "speak_selection".
    pub action: &'static str,
    pub accel: String,
    pub ok: bool,
    pub problem: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Info,
    Warning,
    Error,
}

#[derive(Clone, Debug, Serialize)]
pub struct Notice {
    pub level: Level,
    pub text: String,
}

/// Progress of a voice import.
#[derive(Clone, Debug, Serialize)]
pub struct ImportProgress {
    /// "running", "done" or "failed".
    pub stage: &'static str,
    pub message: String,
    pub voice: Option<String>,
    /// How much of a download from the catalogue is here (0–1); `None` while converting.
    pub fraction: Option<f64>,
}

/// An export to an audio file, as it goes (`hark:export`).
#[derive(Serialize, Clone, Debug)]
pub struct ExportProgress {
    /// "running", "done", "failed" or "cancelled".
    pub stage: &'static str,
    /// The file being written.
    pub path: String,
    /// The share of the text read, 0…1.
    pub fraction: f64,
    /// Seconds left, from the rate so far (none until a little has been read).
    pub eta_s: Option<f64>,
    /// Seconds of audio written so far.
    pub audio_s: f64,
    /// What went wrong, when it failed.
    pub message: Option<String>,
}
