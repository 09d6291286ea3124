//! Export…: the save dialog, and starting or cancelling an export of the text box.

use crate::commands::voices::chosen_path;
use crate::managers::{export::ExportManager, settings::SettingsManager};
use std::path::PathBuf;
use tauri::{AppHandle, Manager};
use tauri_plugin_dialog::DialogExt;

/// Opens a native save dialog for an audio file; the format follows the name's extension.
#[tauri::command]
pub async fn pick_export_path(app: AppHandle) -> Option<String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    app.dialog()
        .file()
        .set_title("Export to an audio file")
        .set_file_name("Hark export.opus")
        .add_filter("Ogg Opus (small, for listening)", &["opus"])
        .add_filter("MP3 (any player)", &["mp3"])
        .add_filter("FLAC (lossless)", &["flac"])
        .add_filter("WAV (uncompressed)", &["wav"])
        .save_file(move |p| {
            let _ = tx.send(p);
        });
    chosen_path(rx).await
}

/// Starts exporting `text` to `path`; progress comes as `hark:export` events.
#[tauri::command]
pub fn export_start(app: AppHandle, text: String, path: String) -> Result<(), String> {
    let settings = app.state::<SettingsManager>().get();
    let overrides = app.state::<hark_engine::Overrides>().inner().clone();
    app.state::<ExportManager>()
        .start(&app, text, PathBuf::from(path.trim()), settings, overrides)
}

#[tauri::command]
pub fn export_cancel(app: AppHandle) {
    app.state::<ExportManager>().cancel();
}
