//! The UI's commands: thin wrappers over the managers. Every name here is listed in
//! `names.in` (the ACL) and in `ui/api.js` (the typed client); a test keeps the three in step.

pub mod voices;

use crate::actions::{self, Action};
use crate::events::{Notice, NoticeLog};
use crate::managers::engine::{EngineManager, State, Status};
use crate::managers::history::{HistoryManager, Item, Source};
use crate::managers::settings::SettingsManager;
use crate::managers::sources::{SourcesManager, SourcesStatus};
use crate::settings::{self, Settings};
use crate::shortcut::{Bindings, ShortcutStatus};
use hark_engine::Mode;
use serde::Serialize;
use tauri::{AppHandle, Manager, State as S};

#[derive(Clone, Debug, Serialize)]
pub struct VoiceEntry {
    pub name: String,
    pub sample_rate: u32,
    pub dtype: String,
    pub size_mb: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Limits {
    pub rate_min: f32,
    pub rate_max: f32,
    pub steps_max: u32,
}

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

pub fn app_state(app: &AppHandle) -> AppState {
    let voices = hark_voice::list(&app.state::<hark_engine::Overrides>().voices_dir)
        .into_iter()
        .map(|v| VoiceEntry {
            name: v.name,
            sample_rate: v.sample_rate,
            dtype: v.dtype,
            size_mb: (v.size_bytes as f64 / 1e6 * 10.0).round() / 10.0,
        })
        .collect();
    AppState {
        settings: app.state::<SettingsManager>().get(),
        voices,
        status: app.state::<EngineManager>().status(),
        sources: app.state::<SourcesManager>().status(),
        shortcuts: app.state::<Bindings>().report(),
        history: app.state::<HistoryManager>().list(),
        notices: app.state::<NoticeLog>().recent(),
        default_voice_available: voices::default_voice_onnx().is_some(),
        limits: Limits {
            rate_min: settings::RATE_MIN,
            rate_max: settings::RATE_MAX,
            steps_max: settings::STEPS_MAX,
        },
        version: env!("CARGO_PKG_VERSION"),
    }
}

#[tauri::command]
pub fn get_state(app: AppHandle) -> AppState {
    app_state(&app)
}

#[tauri::command]
pub fn save_settings(app: AppHandle, settings: Settings) -> Result<AppState, String> {
    crate::apply_settings(&app, settings)?;
    Ok(app_state(&app))
}

#[tauri::command]
pub fn reset_settings(app: AppHandle) -> Result<AppState, String> {
    crate::apply_settings(&app, Settings::default())?;
    Ok(app_state(&app))
}

#[tauri::command]
pub fn speak_text(
    app: AppHandle,
    engine: S<'_, EngineManager>,
    text: String,
) -> Result<u64, String> {
    let id = engine.speak(text.clone(), Source::Typed, Mode::Interrupt)?;
    app.state::<HistoryManager>()
        .add(Source::Typed, &text, Some(id));
    crate::events::history(&app);
    Ok(id)
}

/// The same path as the shortcut and the tray entry.
#[tauri::command]
pub fn speak_clipboard(app: AppHandle) {
    actions::perform(&app, Action::SpeakClipboard);
}

/// The same path as the shortcut.
#[tauri::command]
pub fn speak_selection(app: AppHandle) {
    actions::perform(&app, Action::SpeakSelection);
}

#[tauri::command]
pub fn stop(app: AppHandle) {
    actions::perform(&app, Action::Stop);
}

#[tauri::command]
pub fn toggle_pause(app: AppHandle) -> State {
    actions::perform(&app, Action::PauseResume);
    app.state::<EngineManager>().status().state
}

#[tauri::command]
pub fn clear_history(app: AppHandle, history: S<'_, HistoryManager>) {
    history.clear();
    crate::events::history(&app);
}

#[tauri::command]
pub fn replay_history(
    app: AppHandle,
    history: S<'_, HistoryManager>,
    engine: S<'_, EngineManager>,
    id: u64,
) -> Result<u64, String> {
    let text = history
        .text(id)
        .ok_or("That item is too long to keep; copy it again to hear it.")?;
    let utt = engine.speak(text, Source::History, Mode::Interrupt)?;
    crate::events::history(&app);
    Ok(utt)
}

#[tauri::command]
pub fn follow_start(app: AppHandle, path: String) -> Result<SourcesStatus, String> {
    let sources = app.state::<SourcesManager>();
    sources.follow(&app, path.into())?;
    Ok(sources.status())
}

#[tauri::command]
pub fn follow_stop(sources: S<'_, SourcesManager>) -> SourcesStatus {
    sources.unfollow();
    sources.status()
}

/// Tries the engine again (after an audio device was connected, say).
#[tauri::command]
pub fn restart_engine(app: AppHandle) {
    let s = app.state::<SettingsManager>().get();
    app.state::<EngineManager>().start(&s);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ACL list, the registered handlers and the UI's client name the same commands.
    #[test]
    fn command_names_agree() {
        let names: &[&str] = include!("names.in");
        let acl: Vec<&str> = names.to_vec();
        let lib = include_str!("../lib.rs");
        let api = include_str!("../../../ui/api.js");
        for name in &acl {
            assert!(
                lib.contains(&format!("::{name},")),
                "{name} is not registered in lib.rs"
            );
            assert!(
                api.contains(&format!("\"{name}\"")),
                "{name} has no wrapper in ui/api.js"
            );
        }
        let caps = include_str!("../../capabilities/main.json");
        for name in &acl {
            assert!(
                caps.contains(&format!("\"allow-{}\"", name.replace('_', "-"))),
                "{name} is not granted in capabilities/main.json"
            );
        }
        // The typedefs in api.js name every field Rust sends.
        let settings = serde_json::to_value(Settings::default()).unwrap();
        let status = serde_json::to_value(crate::managers::engine::Status {
            state: State::Ready,
            message: None,
            voice: None,
            backend: None,
            gpu: None,
            onset_ms: None,
            rtf: None,
            queue_depth: 0,
        })
        .unwrap();
        for obj in [&settings, &settings["shortcuts"], &status] {
            for key in obj.as_object().unwrap().keys() {
                assert!(
                    api.contains(&format!(" {key}:")),
                    "field {key} is missing from the typedefs in ui/api.js"
                );
            }
        }
        // Every invoke in the UI goes through api.js and names a known command.
        for part in api.split("call(\"").skip(1) {
            let name = part.split('"').next().unwrap_or("");
            assert!(
                acl.contains(&name),
                "ui/api.js calls unknown command {name}"
            );
        }
    }
}
