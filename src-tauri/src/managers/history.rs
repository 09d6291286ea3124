//! The last things read aloud. In memory only unless the user opts in to saving; clipboard text
//! can be private, so nothing here is ever logged.

use crate::locked::lock;
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
    /// Tells the user that saving failed (once, until a save succeeds again).
    on_save_error: Mutex<Option<SaveErrorFn>>,
    save_failing: Mutex<bool>,
}

type SaveErrorFn = Box<dyn Fn(String) + Send + Sync>;

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
            on_save_error: Mutex::new(None),
            save_failing: Mutex::new(false),
        }
    }

    /// What to call when saving fails (the app shows it as a notice).
    pub fn on_save_error(&self, f: impl Fn(String) + Send + Sync + 'static) {
        *lock(&self.on_save_error) = Some(Box::new(f));
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
        let saved = serde_json::to_string(&items)
            .map_err(std::io::Error::other)
            .and_then(|json| crate::atomic_write::write(&self.file, json.as_bytes()));
        let mut failing = lock(&self.save_failing);
        match saved {
            Ok(()) => *failing = false,
            Err(e) => {
                // The path and the error only: the items may be private.
                tracing::warn!("cannot save history: {e}");
                if !std::mem::replace(&mut *failing, true)
                    && let Some(tell) = lock(&self.on_save_error).as_ref()
                {
                    tell(format!(
                        "History could not be saved to {} ({e}); the last saved history is kept.",
                        self.file.display()
                    ));
                }
            }
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A save that fails (here: the file's folder is a file, so no one, root included, can
    /// write there) keeps the old file, and the user is told once until a save works again.
    #[test]
    fn a_failed_save_keeps_the_old_file_and_tells_the_user_once() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("history.json");
        let h = HistoryManager::new(file.clone(), true);
        h.add(Source::Clipboard, "first", None);
        let old = std::fs::read(&file).unwrap();
        let told = std::sync::Arc::new(Mutex::new(Vec::<String>::new()));
        let t = told.clone();
        h.on_save_error(move |m| lock(&t).push(m));
        // The temporary file's name taken by a folder: the write fails.
        std::fs::create_dir(d.path().join("history.json.tmp")).unwrap();
        h.add(Source::Clipboard, "second", None);
        h.add(Source::Clipboard, "third", None);
        assert_eq!(std::fs::read(&file).unwrap(), old);
        assert_eq!(lock(&told).len(), 1, "{:?}", lock(&told));
        assert!(!lock(&told)[0].contains("second"), "the text is private");
        std::fs::remove_dir(d.path().join("history.json.tmp")).unwrap();
        h.add(Source::Clipboard, "fourth", None);
        let saved: Vec<Item> = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(saved.len(), 4);
        assert_eq!(lock(&told).len(), 1);
    }

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
