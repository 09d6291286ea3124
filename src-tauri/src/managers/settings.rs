//! The live settings and their file. Applying a change is `managers::apply_settings`'s job
//! (it knows every manager); this only holds, validates and saves.

use crate::settings::{self, LoadNote, Settings};
use std::path::PathBuf;
use std::sync::Mutex;

pub struct SettingsManager {
    path: PathBuf,
    current: Mutex<Settings>,
}

impl SettingsManager {
    /// Loads from `dir`; the note (if any) is for the user.
    pub fn load(dir: PathBuf) -> (Self, Option<String>) {
        let path = dir.join(settings::FILE_NAME);
        let (s, note) = settings::load(&path);
        let note = note.map(|n| match n {
            LoadNote::Damaged { backup, reason } => format!(
                "Your settings file was damaged ({reason}). It was kept as {} and the defaults are in use.",
                backup.display()
            ),
            LoadNote::Unreadable { reason } => {
                format!("Your settings could not be read ({reason}). The defaults are in use.")
            }
        });
        (
            Self {
                path,
                current: Mutex::new(s),
            },
            note,
        )
    }

    pub fn get(&self) -> Settings {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Stores `new` (clamped) and returns (old, new). A save failure is reported but the
    /// change still applies for this session.
    pub fn set(&self, new: Settings) -> (Settings, Settings, Result<(), String>) {
        let new = new.sanitized();
        let old = {
            let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut *cur, new.clone())
        };
        let saved = settings::save(&self.path, &new).map_err(|e| {
            format!(
                "Settings could not be saved to {}: {e}",
                self.path.display()
            )
        });
        (old, new, saved)
    }
}
