//! Hark's desktop app: builds the Tauri app, registers plugins and managers, and applies
//! settings across them. Engine work, clipboard reads and imports run on their own threads;
//! nothing here blocks the UI thread.

mod actions;
mod clipboard;
mod commands;
mod events;
mod managers;
mod settings;
mod shortcut;
mod tray;

use events::{Level, NoticeLog};
use managers::engine::EngineManager;
use managers::history::HistoryManager;
use managers::settings::SettingsManager;
use managers::sources::SourcesManager;
use settings::Settings;
use tauri::{AppHandle, Manager, WindowEvent};
use tauri_plugin_autostart::ManagerExt as _;

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
                .with_handler(shortcut::handle)
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
            commands::voices::pick_file,
            commands::voices::import_voice,
            commands::voices::install_default_voice,
            commands::clear_history,
            commands::replay_history,
            commands::follow_start,
            commands::follow_stop,
            commands::restart_engine,
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
    app.manage(HistoryManager::new(
        dir.join("history.json"),
        s.save_history,
    ));
    // The `HARK_*` overrides, read once: the voice folder for the commands, the rest for the
    // engine.
    let overrides = hark_engine::Overrides::from_env();
    app.manage(overrides.clone());
    app.manage(EngineManager::new(app.clone(), overrides));
    app.manage(SourcesManager::start(app, s.auto_read));
    shortcut::apply(app, &s.shortcuts);
    sync_autostart(app, s.start_at_login);
    if let Err(e) = tray::create(app) {
        tracing::warn!("no tray icon: {e}");
    }
    app.state::<EngineManager>().start(&s);
}

/// Stores `new` and applies it to every manager, live. Returns the settings as stored.
pub(crate) fn apply_settings(app: &AppHandle, new: Settings) -> Result<Settings, String> {
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
    events::state(app);
    saved.map(|()| new)
}

fn sync_autostart(app: &AppHandle, on: bool) {
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
