//! Events pushed to the UI. Names and payloads mirror `ui/api.js` (checked by a test there).

use crate::managers::engine::{Speaking, Status};
use crate::managers::history::HistoryManager;
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::Mutex;
use tauri::{AppHandle, Emitter, Manager};

pub const STATUS: &str = "hark:status";
pub const SPEAKING: &str = "hark:speaking";
pub const NOTICE: &str = "hark:notice";
pub const HISTORY: &str = "hark:history";
pub const STATE: &str = "hark:state";
pub const IMPORT: &str = "hark:import";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Info,
    Warning,
    Error,
}

#[derive(Clone, Debug, Serialize)]
pub struct Notice {
    pub level: Level,
    pub text: String,
}

/// Notices raised before the UI was listening (a damaged settings file at start-up) are kept
/// so `get_state` can show them.
#[derive(Default)]
pub struct NoticeLog(Mutex<VecDeque<Notice>>);

impl NoticeLog {
    pub fn recent(&self) -> Vec<Notice> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}

/// Progress of a voice import.
#[derive(Clone, Debug, Serialize)]
pub struct ImportProgress {
    /// "running", "done" or "failed".
    pub stage: &'static str,
    pub message: String,
    pub voice: Option<String>,
}

fn emit<T: Serialize + Clone>(app: &AppHandle, name: &str, payload: &T) {
    if let Err(e) = app.emit(name, payload.clone()) {
        tracing::warn!("cannot send {name} to the UI: {e}");
    }
}

pub fn status(app: &AppHandle, s: &Status) {
    emit(app, STATUS, s);
}

pub fn speaking(app: &AppHandle, s: &Speaking) {
    emit(app, SPEAKING, s);
}

pub fn notice(app: &AppHandle, level: Level, text: &str) {
    let n = Notice {
        level,
        text: text.to_string(),
    };
    if let Some(log) = app.try_state::<NoticeLog>() {
        let mut q = log.0.lock().unwrap_or_else(|e| e.into_inner());
        q.push_back(n.clone());
        while q.len() > 10 {
            q.pop_front();
        }
    }
    emit(app, NOTICE, &n);
}

pub fn history(app: &AppHandle) {
    if let Some(h) = app.try_state::<HistoryManager>() {
        emit(app, HISTORY, &h.list());
    }
}

/// The whole state after a change that touches several parts (settings, voices).
pub fn state(app: &AppHandle) {
    emit(app, STATE, &crate::commands::app_state(app));
}

pub fn import(app: &AppHandle, p: &ImportProgress) {
    emit(app, IMPORT, p);
}
