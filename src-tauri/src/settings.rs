//! The user's settings: what is stored (serde, `settings.json` in the config dir), the defaults,
//! the limits, and loading that never fails (a damaged file is set aside, not lost).

pub use hark_engine::GpuEngine;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "settings.json";

/// Speaking rate limits, as a multiple of the voice's normal speed.
pub const RATE_MIN: f32 = 0.5;
pub const RATE_MAX: f32 = 2.5;
/// Largest fixed step the UI offers (frames of ~11.6 ms).
pub const STEPS_MAX: u32 = 512;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepMode {
    Auto,
    Fixed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendPref {
    Auto,
    Gpu,
    Cpu,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Theme {
    System,
    Light,
    Dark,
}

/// Global shortcuts in the plugin's accelerator syntax ("Ctrl+Alt+R"); empty = none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Shortcuts {
    pub speak_selection: String,
    pub speak_clipboard: String,
    pub stop: String,
    pub pause_resume: String,
    pub toggle_auto_read: String,
}

impl Default for Shortcuts {
    fn default() -> Self {
        Self {
            speak_selection: "Ctrl+Alt+R".into(),
            speak_clipboard: "Ctrl+Alt+V".into(),
            stop: "Ctrl+Alt+S".into(),
            pause_resume: "Ctrl+Alt+P".into(),
            toggle_auto_read: "Ctrl+Alt+A".into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Installed voice name; `None` = the default voice (or the only one).
    pub voice: Option<String>,
    /// Speaking rate: 1 / length_scale.
    pub rate: f32,
    pub step_mode: StepMode,
    /// Frames per step when `step_mode` is Fixed.
    pub step_frames: u32,
    /// Output gain, 0–2.
    pub volume: f32,
    pub backend: BackendPref,
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
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            voice: None,
            rate: 1.0,
            step_mode: StepMode::Auto,
            step_frames: 32,
            volume: 1.0,
            backend: BackendPref::Auto,
            gpu_engine: GpuEngine::Auto,
            noise_scale: None,
            noise_w: None,
            auto_read: false,
            start_at_login: false,
            save_history: false,
            theme: Theme::System,
            text_scale: 100,
            shortcuts: Shortcuts::default(),
        }
    }
}

impl Settings {
    /// Brings every value into its range (a hand-edited file or an old UI cannot break speech).
    pub fn sanitized(mut self) -> Self {
        let finite_or = |v: f32, d: f32| if v.is_finite() { v } else { d };
        self.rate = finite_or(self.rate, 1.0).clamp(RATE_MIN, RATE_MAX);
        self.volume = finite_or(self.volume, 1.0).clamp(0.0, 2.0);
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
        self
    }

    /// Piper's length scale for the chosen rate.
    pub fn length_scale(&self) -> f32 {
        1.0 / self.rate.clamp(RATE_MIN, RATE_MAX)
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
    match serde_json::from_str::<Settings>(&text) {
        Ok(s) => (s.sanitized(), None),
        Err(e) => (Settings::default(), Some(set_aside(path, e.to_string()))),
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

/// Writes atomically (temp file + rename) so a crash never leaves half a file.
pub fn save(path: &Path, settings: &Settings) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let json = serde_json::to_string_pretty(settings).map_err(std::io::Error::other)?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, json)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_gives_defaults_quietly() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(load(&d.path().join(FILE_NAME)), (Settings::default(), None));
    }

    #[test]
    fn round_trip() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub").join(FILE_NAME);
        let s = Settings {
            rate: 1.5,
            voice: Some("x".into()),
            step_mode: StepMode::Fixed,
            auto_read: true,
            ..Settings::default()
        };
        save(&p, &s).unwrap();
        assert_eq!(load(&p), (s, None));
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
            r#"{"rate": 9, "volume": -1, "step_frames": 0, "future_key": 1}"#,
        )
        .unwrap();
        let (s, note) = load(&p);
        assert_eq!(note, None);
        assert_eq!((s.rate, s.volume, s.step_frames), (RATE_MAX, 0.0, 1));
        assert!((s.length_scale() - 0.4).abs() < 1e-6);
    }
}
