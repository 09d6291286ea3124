//! Events pushed to the UI: one function per event, each sending a value from `state`. Names
//! and payloads mirror `ui/api.js`. Knows no manager, so every manager can report through it.

use crate::state::{
    AppState, ExportProgress, ImportProgress, Item, Level, Notice, Speaking, SpokenWord, Status,
};
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::Mutex;
use tauri::{AppHandle, Emitter, Manager};

pub const STATUS: &str = "hark:status";
pub const SPEAKING: &str = "hark:speaking";
pub const WORD: &str = "hark:word";
pub const READ_FROM_CURSOR: &str = "hark:read-from-cursor";
pub const NOTICE: &str = "hark:notice";
pub const HISTORY: &str = "hark:history";
pub const STATE: &str = "hark:state";
pub const IMPORT: &str = "hark:import";
pub const EXPORT: &str = "hark:export";

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

/// The word now heard (sent as its first sample reaches the audio callback).
pub fn word(app: &AppHandle, w: &SpokenWord) {
    emit(app, WORD, w);
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

pub fn history(app: &AppHandle, items: &[Item]) {
    emit(app, HISTORY, &items);
}

/// The whole state after a change that touches several parts (settings, voices).
pub fn state(app: &AppHandle, s: &AppState) {
    emit(app, STATE, s);
}

pub fn import(app: &AppHandle, p: &ImportProgress) {
    emit(app, IMPORT, p);
}

pub fn export(app: &AppHandle, p: &ExportProgress) {
    emit(app, EXPORT, p);
}

/// Asks the UI to read its text box from the caret (a global shortcut: the caret is the page's).
pub fn read_from_cursor(app: &AppHandle) {
    emit(app, READ_FROM_CURSOR, &());
}
