//! The last things read aloud. In memory only unless the user opts in to saving; clipboard text
//! can be private, so nothing here is ever logged.

use crate::state::{Item, Source};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

pub const CAPACITY: usize = 20;
/// Characters of each item shown in the list.
const PREVIEW_CHARS: usize = 160;
/// Longer items keep only their preview (a 10 MB clipboard is not kept 20 times over).
const KEEP_TEXT_BYTES: usize = 64 * 1024;

pub struct HistoryManager {
    items: Mutex<VecDeque<Item>>,
    next_id: Mutex<u64>,
    /// Where history is saved when the user opted in.
    file: PathBuf,
    persist: Mutex<bool>,
}

impl HistoryManager {
    pub fn new(file: PathBuf, persist: bool) -> Self {
        let items: VecDeque<Item> = if persist {
            std::fs::read_to_string(&file)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default()
        } else {
            VecDeque::new()
        };
        let next = items.iter().map(|i| i.id + 1).max().unwrap_or(1);
        Self {
            items: Mutex::new(items),
            next_id: Mutex::new(next),
            file,
            persist: Mutex::new(persist),
        }
    }

    pub fn add(&self, source: Source, text: &str, utterance: Option<u64>) -> u64 {
        let id = {
            let mut n = lock(&self.next_id);
            *n += 1;
            *n - 1
        };
        let trimmed = text.trim();
        let mut preview: String = trimmed.chars().take(PREVIEW_CHARS).collect();
        if preview.len() < trimmed.len() {
            preview.push('…');
        }
        let item = Item {
            id,
            source,
            preview,
            chars: trimmed.chars().count(),
            at_ms: now_ms(),
            onset_ms: None,
            utterance,
            text: (text.len() <= KEEP_TEXT_BYTES).then(|| text.to_string()),
        };
        {
            let mut items = lock(&self.items);
            items.push_front(item);
            items.truncate(CAPACITY);
        }
        self.save();
        id
    }

    pub fn set_onset(&self, utterance: u64, onset_ms: Option<f64>) {
        let mut items = lock(&self.items);
        if let Some(i) = items.iter_mut().find(|i| i.utterance == Some(utterance)) {
            i.onset_ms = onset_ms;
        }
    }

    pub fn list(&self) -> Vec<Item> {
        lock(&self.items).iter().cloned().collect()
    }

    pub fn text(&self, id: u64) -> Option<String> {
        lock(&self.items)
            .iter()
            .find(|i| i.id == id)
            .and_then(|i| i.text.clone())
    }

    pub fn clear(&self) {
        lock(&self.items).clear();
        self.save();
    }

    /// Turning saving off deletes the file, so opting out leaves nothing behind.
    pub fn set_persist(&self, on: bool) {
        *lock(&self.persist) = on;
        if on {
            self.save();
        } else {
            let _ = std::fs::remove_file(&self.file);
        }
    }

    fn save(&self) {
        if !*lock(&self.persist) {
            return;
        }
        let items = self.list();
        if let Ok(json) = serde_json::to_string(&items) {
            if let Some(dir) = self.file.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            if let Err(e) = std::fs::write(&self.file, json) {
                tracing::warn!("cannot save history: {e}");
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_twenty_in_memory_only() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("history.json");
        let h = HistoryManager::new(file.clone(), false);
        for i in 0..25 {
            h.add(Source::Clipboard, &format!("item {i}"), None);
        }
        let l = h.list();
        assert_eq!(l.len(), CAPACITY);
        assert_eq!(l[0].preview, "item 24");
        assert!(!file.exists(), "history must not touch the disk by default");
    }

    #[test]
    fn opt_in_saves_and_opt_out_deletes() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("history.json");
        let h = HistoryManager::new(file.clone(), false);
        h.add(Source::Typed, "hello", None);
        h.set_persist(true);
        assert!(file.exists());
        assert_eq!(HistoryManager::new(file.clone(), true).list().len(), 1);
        h.set_persist(false);
        assert!(!file.exists());
    }

    #[test]
    fn long_text_keeps_only_a_preview() {
        let d = tempfile::tempdir().unwrap();
        let h = HistoryManager::new(d.path().join("h.json"), false);
        let id = h.add(Source::Clipboard, &"word ".repeat(100_000), None);
        assert!(h.text(id).is_none());
        assert!(h.list()[0].preview.ends_with('…'));
    }
}
