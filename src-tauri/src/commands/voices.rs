//! Voices: the file picker, importing a Piper voice off the UI thread with progress events,
//! installing the default voice during onboarding, and *Get voices*: the catalogue's voices
//! and installing one of them (downloaded with progress, checked, imported).

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
            fraction: None,
        },
    );
    std::thread::Builder::new()
        .name("hark-import".into())
        .spawn(move || {
            let t0 = Instant::now();
            let dir = app.state::<hark_engine::Overrides>().voices_dir.clone();
            match hark_voice::import_piper(&onnx, None, &dir, None, WeightDtype::F32) {
                Ok(out) => installed(&app, &out, t0),
                Err(e) => events::import(
                    &app,
                    &ImportProgress {
                        stage: "failed",
                        message: format!("The voice could not be imported: {e}"),
                        voice: None,
                        fraction: None,
                    },
                ),
            }
        })
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A voice is in (imported or installed from the catalogue): say so and speak with it.
fn installed(app: &AppHandle, dir: &std::path::Path, t0: Instant) {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    events::import(
        app,
        &ImportProgress {
            stage: "done",
            message: format!(
                "Voice {name} is installed ({:.1} s) and now in use.",
                t0.elapsed().as_secs_f64()
            ),
            voice: Some(name.clone()),
            fraction: None,
        },
    );
    let mut s = app.state::<SettingsManager>().get();
    // A new voice starts on its first speaker (the one chosen was another voice's).
    s.voice = Some(name);
    s.speaker = None;
    if let Err(e) = managers::apply_settings(app, s) {
        events::notice(app, Level::Warning, &e);
    }
}

/// A voice of the catalogue, as *Get voices* lists it.
#[derive(serde::Serialize)]
pub struct CatalogueVoice {
    name: String,
    language: String,
    quality: String,
    size_mb: f64,
    speakers: u32,
    installed: bool,
}

/// The catalogue the settings name, else Piper's own.
fn catalogue_source(app: &AppHandle) -> String {
    app.state::<SettingsManager>()
        .get()
        .voice_catalogue
        .unwrap_or_else(|| hark_catalogue::DEFAULT_URL.to_string())
}

/// The catalogue's voices (read off the UI thread: it is a download).
#[tauri::command]
pub async fn catalogue_voices(app: AppHandle) -> Result<Vec<CatalogueVoice>, String> {
    let source = catalogue_source(&app);
    let dir = app.state::<hark_engine::Overrides>().voices_dir.clone();
    tauri::async_runtime::spawn_blocking(move || {
        let c = hark_catalogue::Catalogue::fetch(&source).map_err(|e| e.to_string())?;
        let have: Vec<String> = hark_voice::list(&dir).into_iter().map(|v| v.name).collect();
        Ok(c.voices
            .into_iter()
            .map(|v| CatalogueVoice {
                installed: have.contains(&v.name),
                size_mb: v.download_bytes() as f64 / 1e6,
                name: v.name,
                language: v.language_name,
                quality: v.quality,
                speakers: v.speakers,
            })
            .collect())
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Reports a download through `hark:import`, once per whole percent.
struct DownloadEvents {
    app: AppHandle,
    name: String,
    total: u64,
    percent: Option<u64>,
}

impl hark_catalogue::Progress for DownloadEvents {
    fn begin(&mut self, total: u64) {
        self.total = total.max(1);
    }

    fn advance(&mut self, done: u64) {
        let done = done.min(self.total);
        let percent = done * 100 / self.total;
        if self.percent == Some(percent) {
            return;
        }
        self.percent = Some(percent);
        let message = if percent < 100 {
            format!(
                "Downloading {}: {percent}% ({:.1} of {:.1} MB)",
                self.name,
                done as f64 / 1e6,
                self.total as f64 / 1e6
            )
        } else {
            format!("Downloaded {}; converting the voice…", self.name)
        };
        events::import(
            &self.app,
            &ImportProgress {
                stage: "running",
                message,
                voice: None,
                fraction: Some(done as f64 / self.total as f64),
            },
        );
    }
}

/// Installs `name` from the catalogue on its own thread; the UI follows `hark:import`.
#[tauri::command]
pub fn install_catalogue_voice(app: AppHandle, name: String) -> Result<(), String> {
    let source = catalogue_source(&app);
    events::import(
        &app,
        &ImportProgress {
            stage: "running",
            message: format!("Installing {name}: reading the catalogue…"),
            voice: None,
            fraction: Some(0.0),
        },
    );
    std::thread::Builder::new()
        .name("hark-install".into())
        .spawn(move || {
            let t0 = Instant::now();
            let dir = app.state::<hark_engine::Overrides>().voices_dir.clone();
            let mut progress = DownloadEvents {
                app: app.clone(),
                name: name.clone(),
                total: 1,
                percent: None,
            };
            let result = hark_catalogue::Catalogue::fetch(&source).and_then(|c| {
                hark_catalogue::install(&c, &name, &dir, WeightDtype::F32, &mut progress)
            });
            match result {
                Ok(out) => installed(&app, &out, t0),
                Err(e) => events::import(
                    &app,
                    &ImportProgress {
                        stage: "failed",
                        message: format!("{name} could not be installed: {e}"),
                        voice: None,
                        fraction: None,
                    },
                ),
            }
        })
        .map(|_| ())
        .map_err(|e| e.to_string())
}
