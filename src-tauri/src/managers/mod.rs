//! Long-lived app state, one manager per concern, each held with `app.manage()`; and the two
//! things that need all of them: applying a settings change, and the UI's snapshot.
pub mod captions;
pub mod engine;
pub mod export;
pub mod history;
pub mod settings;
pub mod sources;

use crate::events::{self, NoticeLog};
use crate::settings::{PITCH_MAX, RATE_MAX, RATE_MIN, STEPS_MAX, Settings, default_voice_onnx};
use crate::shortcut::{self, Bindings};
use crate::state::{AppState, Level, Limits, VoiceEntry};
use engine::EngineManager;
use history::HistoryManager;
use settings::SettingsManager;
use sources::SourcesManager;
use tauri::{AppHandle, Manager};
use tauri_plugin_autostart::ManagerExt as _;

/// Stores `new` and applies it to every manager, live. Returns the settings as stored.
pub fn apply_settings(app: &AppHandle, new: Settings) -> Result<Settings, String> {
    let (old, new, saved) = app.state::<SettingsManager>().set(new);
    app.state::<EngineManager>().apply(&old, &new);
    app.state::<SourcesManager>().set_auto_read(new.auto_read);
    if old.shortcuts != new.shortcuts {
        for st in shortcut::apply(app, &new.shortcuts) {
            if let Some(p) = st.problem {
                events::notice(app, Level::Warning, &p);
            }
        }
    }
    if old.start_at_login != new.start_at_login {
        sync_autostart(app, new.start_at_login);
    }
    if old.save_history != new.save_history {
        app.state::<HistoryManager>().set_persist(new.save_history);
    }
    events::state(app, &snapshot(app));
    saved.map(|()| new)
}

/// Makes the login item match `on`, telling the user when it cannot.
pub fn sync_autostart(app: &AppHandle, on: bool) {
    let al = app.autolaunch();
    if al.is_enabled().unwrap_or(false) == on {
        return;
    }
    let r = if on { al.enable() } else { al.disable() };
    if let Err(e) = r {
        events::notice(
            app,
            Level::Warning,
            &format!("Start at login could not be changed: {e}"),
        );
    }
}

/// Everything the UI shows, read from every manager.
pub fn snapshot(app: &AppHandle) -> AppState {
    let voices = hark_voice::list(&app.state::<hark_engine::Overrides>().voices_dir)
        .into_iter()
        .map(|v| VoiceEntry {
            name: v.name,
            sample_rate: v.sample_rate,
            dtype: v.dtype,
            size_mb: (v.size_bytes as f64 / 1e6 * 10.0).round() / 10.0,
            speakers: v.speakers,
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
        default_voice_available: default_voice_onnx().is_some(),
        limits: Limits {
            rate_min: RATE_MIN,
            rate_max: RATE_MAX,
            pitch_max: PITCH_MAX,
            steps_max: STEPS_MAX,
        },
        version: env!("CARGO_PKG_VERSION"),
    }
}
