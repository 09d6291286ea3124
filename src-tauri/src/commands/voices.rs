//! Voices: the file picker, importing a Piper voice off the UI thread with progress events,
//! and installing the default voice during onboarding.

use crate::events;
use crate::managers::{self, settings::SettingsManager};
use crate::settings::default_voice_onnx;
use crate::state::{ImportProgress, Level};
use hark_voice::WeightDtype;
use std::path::PathBuf;
use std::time::Instant;
use tauri::{AppHandle, Manager};
use tauri_plugin_dialog::DialogExt;

/// Opens a native file picker; `kind` is "voice" (.onnx) or "caption" (any file).
#[tauri::command]
pub async fn pick_file(app: AppHandle, kind: String) -> Option<String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let mut dialog = app.dialog().file();
    dialog = if kind == "voice" {
        dialog
            .set_title("Import a Piper voice (.onnx with its .onnx.json next to it)")
            .add_filter("Piper voice", &["onnx"])
    } else {
        dialog.set_title("Follow a caption file or pipe")
    };
    dialog.pick_file(move |p| {
        let _ = tx.send(p);
    });
    chosen_path(rx).await
}

/// The path a native dialog gave back through `rx`; none when it was cancelled.
pub(crate) async fn chosen_path(
    rx: tokio::sync::oneshot::Receiver<Option<tauri_plugin_dialog::FilePath>>,
) -> Option<String> {
    rx.await
        .ok()
        .flatten()
        .and_then(|p| p.into_path().ok())
        .map(|p| p.display().to_string())
}

#[tauri::command]
pub fn import_voice(app: AppHandle, path: String) -> Result<(), String> {
    start_import(app, PathBuf::from(path))
}

#[tauri::command]
pub fn install_default_voice(app: AppHandle) -> Result<(), String> {
    let onnx = default_voice_onnx().ok_or(
        "The default voice's files are not here. Run ./scripts/run.sh once, or import a Piper voice.",
    )?;
    start_import(app, onnx)
}

/// Runs the converter on its own thread; the UI follows it through `hark:import` events.
fn start_import(app: AppHandle, onnx: PathBuf) -> Result<(), String> {
    if !onnx.is_file() {
        return Err(format!("{} is not a file.", onnx.display()));
    }
    let file = onnx
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    events::import(
        &app,
        &ImportProgress {
            stage: "running",
            message: format!("Importing {file}: converting the voice, this takes a few seconds…"),
            voice: None,
        },
    );
    std::thread::Builder::new()
        .name("hark-import".into())
        .spawn(move || {
            let t0 = Instant::now();
            let dir = app.state::<hark_engine::Overrides>().voices_dir.clone();
            match hark_voice::import_piper(&onnx, None, &dir, None, WeightDtype::F32) {
                Ok(out) => {
                    let name = out
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    events::import(
                        &app,
                        &ImportProgress {
                            stage: "done",
                            message: format!(
                                "Voice {name} is installed ({:.1} s) and now in use.",
                                t0.elapsed().as_secs_f64()
                            ),
                            voice: Some(name.clone()),
                        },
                    );
                    let mut s = app.state::<SettingsManager>().get();
                    s.voice = Some(name);
                    if let Err(e) = managers::apply_settings(&app, s) {
                        events::notice(&app, Level::Warning, &e);
                    }
                }
                Err(e) => events::import(
                    &app,
                    &ImportProgress {
                        stage: "failed",
                        message: format!("The voice could not be imported: {e}"),
                        voice: None,
                    },
                ),
            }
        })
        .map(|_| ())
        .map_err(|e| e.to_string())
}
