//! Hark's desktop app: builds the Tauri app, registers the plugins and the managers, and wires
//! the plugins' callbacks to the actions. Engine work, clipboard reads and imports run on their
//! own threads; nothing here blocks the UI thread.
//!
//! Module order: each module uses only those above it, so there are no cycles (the test at the
//! end checks every `crate::…` path against this list).
//!
//! 1. `locked` (taking a lock), `atomic_write` (saving a file so that a failure loses nothing), `settings` (the stored
//!    settings, the shortcut actions, the limits), `clipboard` (X11)
//! 2. `state`: every value the UI receives (snapshot and event payload types)
//! 3. `events`: sends `state` values to the UI
//! 4. `shortcut/`: parses and registers the global shortcuts, finds a pressed one's action
//! 5. `managers/`: `settings`, `history`, then `engine`, `sources` and `export`; `managers/mod.rs`
//!    applies a settings change across them and takes the UI's snapshot
//! 6. `actions`: what a shortcut, the tray and a button trigger
//! 7. `commands/` (thin `#[tauri::command]`s) and `tray`
//! 8. `lib.rs`: the builder, plugins and setup

mod actions;
mod atomic_write;
mod clipboard;
mod commands;
mod events;
mod locked;
mod managers;
mod settings;
mod shortcut;
mod state;
mod tray;

use events::NoticeLog;
use managers::engine::EngineManager;
use managers::history::HistoryManager;
use managers::settings::SettingsManager;
use managers::sources::SourcesManager;
use state::Level;
use tauri::{AppHandle, Manager, WindowEvent};

pub fn run() {
    init_logging();
    tracing::info!(
        "hark-app {} starting (pid {})",
        env!("CARGO_PKG_VERSION"),
        std::process::id()
    );
    let built = tauri::Builder::default()
        // First, so a second launch hands over before anything else starts.
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            tray::show_main(app)
        }))
        .plugin(
            tauri_plugin_global_shortcut::Builder::new()
                .with_handler(|app, sc, event| {
                    if let Some(action) = shortcut::pressed(app, sc, event) {
                        actions::perform(app, action);
                    }
                })
                .build(),
        )
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_autostart::init(
            tauri_plugin_autostart::MacosLauncher::LaunchAgent,
            None,
        ))
        .manage(NoticeLog::default())
        .manage(shortcut::Bindings::default())
        .setup(|app| {
            setup(app.handle());
            Ok(())
        })
        .on_window_event(|window, event| {
            // Closing the window keeps Hark in the tray, reading on shortcuts (not under
            // WebDriver, which closes the window to end a session).
            if let WindowEvent::CloseRequested { api, .. } = event {
                let automated = std::env::var_os("TAURI_WEBVIEW_AUTOMATION").is_some();
                if !automated && window.app_handle().tray_by_id("hark").is_some() {
                    api.prevent_close();
                    let _ = window.hide();
                }
            }
        })
        .invoke_handler(tauri::generate_handler![
            commands::get_state,
            commands::save_settings,
            commands::reset_settings,
            commands::speak_text,
            commands::speak_clipboard,
            commands::speak_selection,
            commands::stop,
            commands::toggle_pause,
            commands::navigate,
            commands::voices::pick_file,
            commands::voices::import_voice,
            commands::voices::install_default_voice,
            commands::voices::catalogue_voices,
            commands::voices::install_catalogue_voice,
            commands::clear_history,
            commands::replay_history,
            commands::follow_start,
            commands::follow_stop,
            commands::restart_engine,
            commands::export::pick_export_path,
            commands::export::export_start,
            commands::export::export_cancel,
        ])
        .run(tauri::generate_context!());
    if let Err(e) = built {
        eprintln!("hark-app: cannot start: {e}");
        std::process::exit(1);
    }
}

/// Logs to stderr, or to the file named by `HARK_APP_LOG` (tests read it). Never any text
/// from the clipboard: only states, timings and errors are logged.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "hark_app=info,warn".into());
    let file = std::env::var_os("HARK_APP_LOG").and_then(|p| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .ok()
    });
    let b = tracing_subscriber::fmt().with_env_filter(filter);
    let _ = match file {
        Some(f) => b
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(f))
            .try_init(),
        None => b.try_init(),
    };
}

fn setup(app: &AppHandle) {
    tracing::info!("setting up (pid {})", std::process::id());
    let dir = settings::config_dir();
    let (sm, note) = SettingsManager::load(dir.clone());
    let s = sm.get();
    app.manage(sm);
    if let Some(n) = note {
        events::notice(app, Level::Warning, &n);
    }
    let history = HistoryManager::new(dir.join("history.json"), s.save_history);
    let app2 = app.clone();
    history.on_save_error(move |e| events::notice(&app2, Level::Error, &e));
    app.manage(history);
    // The `HARK_*` overrides, read once: the voice folder for the commands, the rest for the
    // engine.
    let overrides = hark_engine::Overrides::from_env();
    app.manage(overrides.clone());
    app.manage(EngineManager::new(app.clone(), overrides));
    app.manage(SourcesManager::start(app, s.auto_read));
    app.manage(managers::export::ExportManager::default());
    shortcut::apply(app, &s.shortcuts);
    managers::sync_autostart(app, s.start_at_login);
    if let Err(e) = tray::create(app) {
        tracing::warn!("no tray icon: {e}");
    }
    app.state::<EngineManager>().start(&s);
}

#[cfg(test)]
mod tests {
    /// The module order above, in the order it is written, with each module's source.
    const ORDER: &[(&str, &str)] = &[
        ("locked", include_str!("locked.rs")),
        ("atomic_write", include_str!("atomic_write.rs")),
        ("settings", include_str!("settings.rs")),
        ("clipboard", include_str!("clipboard.rs")),
        ("state", include_str!("state.rs")),
        ("events", include_str!("events.rs")),
        ("shortcut", include_str!("shortcut/mod.rs")),
        ("managers::settings", include_str!("managers/settings.rs")),
        ("managers::history", include_str!("managers/history.rs")),
        ("managers::engine", include_str!("managers/engine.rs")),
        ("managers::captions", include_str!("managers/captions.rs")),
        ("managers::sources", include_str!("managers/sources.rs")),
        ("managers::export", include_str!("managers/export.rs")),
        ("managers", include_str!("managers/mod.rs")),
        ("actions", include_str!("actions.rs")),
        ("commands::voices", include_str!("commands/voices.rs")),
        ("commands::export", include_str!("commands/export.rs")),
        ("commands", include_str!("commands/mod.rs")),
        ("tray", include_str!("tray.rs")),
    ];

    fn ident(s: &str) -> &str {
        let end = s
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        &s[..end]
    }

    /// The modules that `src` names through `crate::…` (outside its tests), a
    /// `managers::{engine, …}` group counted per submodule.
    fn uses(src: &str) -> Vec<String> {
        let code = src.split("#[cfg(test)]").next().unwrap_or(src);
        let mut out = Vec::new();
        for part in code.split("crate::").skip(1) {
            let top = ident(part);
            let rest = part[top.len()..].strip_prefix("::").unwrap_or("");
            let inner: Vec<&str> = match rest.strip_prefix('{') {
                Some(g) => g[..g.find('}').unwrap_or(g.len())].split(',').collect(),
                None => vec![rest],
            };
            for item in inner {
                let sub = ident(item.trim());
                let qualified = format!("{top}::{sub}");
                let known = ORDER.iter().any(|(m, _)| *m == qualified);
                out.push(if known { qualified } else { top.to_string() });
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// No cycles: every module uses only modules written above it in the order (`lib.rs`, the
    /// root, may use all; a `mod.rs` reaches its own submodules by relative paths).
    #[test]
    fn modules_use_only_modules_above_them() {
        for (i, (name, src)) in ORDER.iter().enumerate() {
            for used in uses(src) {
                let at = ORDER.iter().position(|(m, _)| *m == used);
                assert!(
                    at.is_some_and(|at| at < i),
                    "{name} uses crate::{used}, which is not above it in lib.rs's module order"
                );
            }
        }
        assert_eq!(
            uses("use crate::managers::{self, engine::E};"),
            ["managers", "managers::engine"]
        );
    }
}
