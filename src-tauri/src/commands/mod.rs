//! The UI's commands: thin wrappers over the managers. Every name here is listed in
//! `names.in` (the ACL) and in `ui/api.js` (the typed client); a test keeps the three in step.

pub mod export;
pub mod voices;

use crate::actions;
use crate::events;
use crate::managers::engine::{EngineManager, Step};
use crate::managers::{self, history::HistoryManager};
use crate::managers::{settings::SettingsManager, sources::SourcesManager};
use crate::settings::{Action, Settings};
use crate::state::{AppState, Source, SourcesStatus, State};
use hark_engine::Mode;
use tauri::{AppHandle, Manager, State as S};

#[tauri::command]
pub fn get_state(app: AppHandle) -> AppState {
    managers::snapshot(&app)
}

#[tauri::command]
pub fn save_settings(app: AppHandle, settings: Settings) -> Result<AppState, String> {
    managers::apply_settings(&app, settings)?;
    Ok(managers::snapshot(&app))
}

#[tauri::command]
pub fn reset_settings(app: AppHandle) -> Result<AppState, String> {
    managers::apply_settings(&app, Settings::default())?;
    Ok(managers::snapshot(&app))
}

#[tauri::command]
pub fn speak_text(
    app: AppHandle,
    engine: S<'_, EngineManager>,
    text: String,
) -> Result<u64, String> {
    let (id, text) = engine.speak(text, Source::Typed, Mode::Interrupt)?;
    let history = app.state::<HistoryManager>();
    history.add(Source::Typed, &text, Some(id));
    events::history(&app, &history.list());
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

/// Previous/repeat/next sentence, back/forward 5 s: the same path as the shortcuts.
#[tauri::command]
pub fn navigate(app: AppHandle, step: Step) {
    actions::perform(&app, step.action());
}

#[tauri::command]
pub fn clear_history(app: AppHandle, history: S<'_, HistoryManager>) {
    history.clear();
    events::history(&app, &history.list());
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
    let (utt, _) = engine.speak(text, Source::History, Mode::Interrupt)?;
    events::history(&app, &history.list());
    Ok(utt)
}

#[tauri::command]
pub fn follow_start(
    app: AppHandle,
    path: String,
    kind: Option<crate::managers::captions::CaptionKind>,
    timing: Option<crate::managers::captions::Timing>,
) -> Result<SourcesStatus, String> {
    let sources = app.state::<SourcesManager>();
    let timing = timing.unwrap_or_default();
    sources.follow(&app, path.into(), kind.unwrap_or_default(), timing)?;
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
        let status = serde_json::to_value(crate::state::Status::starting()).unwrap();
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

    /// Each <select> in the UI offers exactly the serde names of the values it stands for, so
    /// what the UI sends reads and what Rust sends shows.
    #[test]
    fn select_options_are_the_serde_names() {
        use hark_engine::{BackendChoice, GpuEngine};
        let html = include_str!("../../../ui/index.html");
        let options = |id: &str| {
            let start = html.find(&format!("<select id=\"{id}\"")).unwrap();
            let end = start + html[start..].find("</select>").unwrap();
            let mut v: Vec<String> = html[start..end]
                .split("<option value=\"")
                .skip(1)
                .map(|p| p.split('"').next().unwrap().to_string())
                .collect();
            v.sort();
            v
        };
        fn names<T: serde::Serialize>(all: impl IntoIterator<Item = T>) -> Vec<String> {
            let mut v: Vec<String> = all
                .into_iter()
                .map(|x| serde_json::to_value(x).unwrap().as_str().unwrap().into())
                .collect();
            v.sort();
            v
        }
        assert_eq!(options("backend"), names(BackendChoice::ALL));
        assert_eq!(options("gpu-engine"), names(GpuEngine::ALL));
    }
}
