//! Export… : the text box into an audio file (.opus, .mp3, .flac, .wav) on a thread of its
//! own, in the voice, speed and pitch of the settings, through the same book export as
//! `hark speak --out` (chapters from headings, the partial file removed on failure or cancel).
//! The UI follows it through `hark:export` events: a progress bar with an ETA.

use crate::events;
use crate::locked::lock;
use crate::managers::engine::{engine_settings, load_voice};
use crate::settings::Settings;
use crate::state::{ExportProgress, Level};
use hark_audio::export::book::{self, Book, BookError, BookProgress, file_segmenter};
use hark_audio::{ExportFormat, WavFormat};
use hark_engine::{BackendChoice, EngineError, Input, Overrides, Synthesizer};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tauri::AppHandle;

/// How often progress goes to the UI: often enough for a smooth bar, rare enough not to
/// flood the event loop on a fast GPU.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// The ETA is shown once this share of the text is read (before, the rate is a guess).
const ETA_AFTER: f64 = 0.02;

/// The export running, if any: its cancel flag.
#[derive(Default)]
pub struct ExportManager {
    running: Arc<Mutex<Option<Arc<AtomicBool>>>>,
}

impl ExportManager {
    /// Checks the request and starts writing `path` from `text`; one export at a time.
    pub fn start(
        &self,
        app: &AppHandle,
        text: String,
        path: PathBuf,
        settings: Settings,
        overrides: Overrides,
    ) -> Result<(), String> {
        if text.trim().is_empty() {
            return Err("There is no text to export: type or paste it in the box first.".into());
        }
        let format = check_target(&path)?;
        let cancel = Arc::new(AtomicBool::new(false));
        {
            let mut running = lock(&self.running);
            if running.is_some() {
                return Err("An export is already running; cancel it or wait for it.".into());
            }
            *running = Some(Arc::clone(&cancel));
        }
        let (app, running) = (app.clone(), Arc::clone(&self.running));
        let spawned = std::thread::Builder::new()
            .name("hark-export".into())
            .spawn(move || {
                let shown = path.display().to_string();
                let report = |stage, fraction, eta_s, audio_s, message: Option<String>| {
                    events::export(
                        &app,
                        &ExportProgress {
                            stage,
                            path: shown.clone(),
                            fraction,
                            eta_s,
                            audio_s,
                            message,
                        },
                    )
                };
                report("running", 0.0, None, 0.0, None);
                let begun = Instant::now();
                let mut last: Option<Instant> = None;
                let result = run(
                    &app,
                    &text,
                    &path,
                    format,
                    &settings,
                    &overrides,
                    &cancel,
                    |p| {
                        if last.is_some_and(|t| t.elapsed() < PROGRESS_EVERY) {
                            return;
                        }
                        last = Some(Instant::now());
                        let f = p.fraction();
                        let eta =
                            (f >= ETA_AFTER).then(|| begun.elapsed().as_secs_f64() * (1.0 - f) / f);
                        report("running", f, eta, p.audio_s, None);
                    },
                );
                *lock(&running) = None;
                match result {
                    Ok(audio_s) => {
                        tracing::info!(
                            "export finished: {audio_s:.1} s of audio in {:.1} s",
                            begun.elapsed().as_secs_f64()
                        );
                        report("done", 1.0, Some(0.0), audio_s, None)
                    }
                    Err(Failed::Cancelled) => report("cancelled", 0.0, None, 0.0, None),
                    Err(Failed::Because(e)) => {
                        tracing::warn!("export failed: {e}");
                        report("failed", 0.0, None, 0.0, Some(e))
                    }
                }
            });
        if let Err(e) = spawned {
            *lock(&self.running) = None;
            return Err(format!("The export could not start: {e}"));
        }
        Ok(())
    }

    /// Stops the running export at its next sentence; its partial file is removed.
    pub fn cancel(&self) {
        if let Some(c) = lock(&self.running).as_ref() {
            c.store(true, Ordering::Relaxed);
        }
    }
}

/// The format the file's name asks for, and a folder that exists to write it in.
fn check_target(path: &Path) -> Result<ExportFormat, String> {
    if path.as_os_str().is_empty() {
        return Err("Choose a file to export to.".into());
    }
    if path.extension().is_none() {
        return Err(format!(
            "Name the file with the format you want: {}.opus, .mp3, .flac or .wav.",
            path.display()
        ));
    }
    let format = ExportFormat::from_path(path, WavFormat::Pcm16)?;
    if path.is_dir() {
        return Err(format!(
            "{} is a folder; name a file in it.",
            path.display()
        ));
    }
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() && !p.is_dir() => {
            Err(format!("The folder {} does not exist.", p.display()))
        }
        None => Err(format!("{} is not a file's name.", path.display())),
        _ => Ok(format),
    }
}

/// Why an export ended without a file.
enum Failed {
    Cancelled,
    Because(String),
}

impl<E: std::fmt::Display> From<E> for Failed {
    fn from(e: E) -> Self {
        Self::Because(e.to_string())
    }
}

/// The export itself: the settings' voice, speed and pitch on their backend (the CPU if the
/// GPU cannot be used), whole sentences per decode. Returns the seconds of audio written.
#[allow(clippy::too_many_arguments)]
fn run(
    app: &AppHandle,
    text: &str,
    path: &Path,
    format: ExportFormat,
    settings: &Settings,
    overrides: &Overrides,
    cancel: &AtomicBool,
    progress: impl FnMut(BookProgress),
) -> Result<f64, Failed> {
    let (voice, note) = load_voice(
        &overrides.voices_dir,
        settings.voice.as_deref(),
        settings.speaker.as_deref(),
    )?;
    if let Some(n) = note {
        events::notice(app, Level::Warning, &n);
    }
    let voice = Arc::new(voice);
    let synth = |backend| {
        Synthesizer::with_engine(
            Arc::clone(&voice),
            backend,
            settings.gpu_engine,
            &overrides.gpu,
        )
    };
    let mut synth = match synth(settings.backend) {
        Err(EngineError::CudaUnavailable(why)) => {
            events::notice(
                app,
                Level::Warning,
                &format!("The GPU cannot be used for the export ({why}); using the CPU."),
            );
            synth(BackendChoice::Cpu)?
        }
        other => other?,
    };
    let engine = engine_settings(settings, voice.config.inference);
    synth.scales = engine.scales;
    (synth.speed, synth.pitch) = (engine.speed, engine.pitch);
    synth.segmenter = file_segmenter(true, Default::default());
    let book = Book {
        path,
        format,
        subtitles: None,
        keep_words: false,
        cancel: Some(cancel),
    };
    let done = match book::export(&mut synth, Input::Text(text), &book, progress) {
        Err(BookError::Cancelled) => return Err(Failed::Cancelled),
        other => other?,
    };
    Ok(done.samples as f64 / voice.config.sample_rate as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_says_what_is_wrong_with_it() {
        let dir = std::env::temp_dir();
        let err = |p: &Path| check_target(p).unwrap_err();
        assert!(err(Path::new("")).contains("Choose a file"));
        assert!(err(&dir.join("book")).contains(".opus, .mp3, .flac or .wav"));
        assert!(err(&dir.join("book.txt")).contains("cannot tell the audio format"));
        assert!(err(&dir.join("no-such-folder-hark/book.opus")).contains("does not exist"));
        let folder = dir.join("hark-export-test.flac");
        std::fs::create_dir_all(&folder).unwrap();
        assert!(err(&folder).contains("is a folder"));
        std::fs::remove_dir(&folder).unwrap();
        assert_eq!(check_target(&dir.join("book.OPUS")), Ok(ExportFormat::Opus));
        assert_eq!(check_target(&dir.join("b.mp3")), Ok(ExportFormat::Mp3));
        assert_eq!(
            check_target(&dir.join("b.wav")),
            Ok(ExportFormat::Wav(WavFormat::Pcm16))
        );
    }
}
