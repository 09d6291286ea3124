//! The tray icon and its menu. Without a tray host (some desktops, Xvfb) the icon is simply not
//! shown; the window and the shortcuts still work.

use crate::actions;
use crate::settings::Action;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager};

pub fn create(app: &AppHandle) -> tauri::Result<()> {
    let item = |id: &str, label: &str| MenuItem::with_id(app, id, label, true, None::<&str>);
    let menu = Menu::with_items(
        app,
        &[
            &item("speak_clipboard", "Speak clipboard")?,
            &item("stop", "Stop")?,
            &item("pause", "Pause / resume")?,
            &PredefinedMenuItem::separator(app)?,
            &item("show", "Show window")?,
            &item("quit", "Quit Hark")?,
        ],
    )?;
    let mut tray = TrayIconBuilder::with_id("hark")
        .tooltip("Hark")
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_menu_event(|app, ev| match ev.id.as_ref() {
            "speak_clipboard" => actions::perform(app, Action::SpeakClipboard),
            "stop" => actions::perform(app, Action::Stop),
            "pause" => actions::perform(app, Action::PauseResume),
            "show" => show_main(app),
            "quit" => app.exit(0),
            _ => {}
        });
    if let Some(icon) = app.default_window_icon() {
        tray = tray.icon(icon.clone());
    }
    tray.build(app)?;
    Ok(())
}

/// Shows, un-minimises and focuses the main window (tray, second launch).
pub fn show_main(app: &AppHandle) {
    if let Some(w) = app.get_webview_window("main") {
        let _ = w.show();
        let _ = w.unminimize();
        let _ = w.set_focus();
    }
}
