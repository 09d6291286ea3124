//! Where text comes from: the clipboard (watched), the selection (on request) and a followed
//! caption file or pipe. One worker thread handles every request in order, so the UI thread,
//! the tray and the shortcuts never wait on X11 or a large clipboard read.

use crate::clipboard::{self, Offer, Selection, X11};
use crate::events;
use crate::locked::lock;
use crate::managers::captions::{self, CaptionKind, Captions, Timing};
use crate::managers::engine::EngineManager;
use crate::managers::history::HistoryManager;
use crate::state::{Level, Source, SourcesStatus, Watch};
use hark_engine::Mode;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};
use tauri::{AppHandle, Manager};

pub enum Request {
    /// The CLIPBOARD has a new owner (from the XFixes watcher, at this instant).
    ClipboardChanged(std::time::Instant),
    /// Read the clipboard now, even if it was read before.
    SpeakClipboard,
    /// Read the PRIMARY selection now.
    SpeakSelection,
}

pub struct SourcesManager {
    tx: Mutex<mpsc::Sender<Request>>,
    auto_read: AtomicBool,
    status: Mutex<SourcesStatus>,
    follower: Mutex<Option<Captions>>,
}

impl SourcesManager {
    /// Starts the request worker and, on X11, the clipboard watcher.
    pub fn start(app: &AppHandle, auto_read: bool) -> Self {
        let (tx, rx) = mpsc::channel();
        let worker_app = app.clone();
        let _ = std::thread::Builder::new()
            .name("hark-sources".into())
            .spawn(move || worker(worker_app, rx));
        let (watch, note) = match spawn_watcher(tx.clone()) {
            Ok(()) => (if auto_read { Watch::On } else { Watch::Off }, None),
            Err(e) => (
                Watch::Unavailable,
                Some(format!(
                    "Hark cannot watch the clipboard here ({e}). Copy text, then press the Speak clipboard shortcut or use the tray menu instead."
                )),
            ),
        };
        Self {
            tx: Mutex::new(tx),
            auto_read: AtomicBool::new(auto_read),
            status: Mutex::new(SourcesStatus {
                watch,
                note,
                follow: None,
            }),
            follower: Mutex::new(None),
        }
    }

    pub fn status(&self) -> SourcesStatus {
        lock(&self.status).clone()
    }

    pub fn request(&self, r: Request) {
        let _ = lock(&self.tx).send(r);
    }

    pub fn set_auto_read(&self, on: bool) {
        self.auto_read.store(on, Ordering::Release);
        let mut st = lock(&self.status);
        if st.watch != Watch::Unavailable {
            st.watch = if on { Watch::On } else { Watch::Off };
        }
    }

    pub fn auto_read(&self) -> bool {
        self.auto_read.load(Ordering::Acquire)
    }

    /// Follows `path` as `kind` says: a growing file or a named pipe (lines or revising
    /// captions), a subtitle file, or mpv's IPC socket.
    pub fn follow(
        &self,
        app: &AppHandle,
        path: PathBuf,
        kind: CaptionKind,
        timing: Timing,
    ) -> Result<(), String> {
        // The old source stops first, so two never speak at once.
        lock(&self.follower).take();
        let c = captions::start(app, path.clone(), kind, timing)?;
        *lock(&self.follower) = Some(c);
        lock(&self.status).follow = Some(path.display().to_string());
        Ok(())
    }

    pub fn unfollow(&self) {
        lock(&self.follower).take();
        lock(&self.status).follow = None;
    }
}

fn spawn_watcher(tx: mpsc::Sender<Request>) -> Result<(), clipboard::X11Error> {
    let x = X11::connect()?;
    x.watch_clipboard()?;
    std::thread::Builder::new()
        .name("hark-clipboard-watch".into())
        .spawn(move || {
            while x.wait_change().is_ok() {
                if tx
                    .send(Request::ClipboardChanged(std::time::Instant::now()))
                    .is_err()
                {
                    break;
                }
            }
            tracing::warn!("clipboard watcher stopped");
        })
        .map_err(|e| clipboard::X11Error::Connect(e.to_string()))?;
    Ok(())
}

/// State the worker keeps between requests.
struct Worker {
    app: AppHandle,
    x11: Option<X11>,
    cb: Option<arboard::Clipboard>,
    /// Hash of the last clipboard text read automatically (the text itself is not kept).
    last_auto: Option<u64>,
}

fn worker(app: AppHandle, rx: mpsc::Receiver<Request>) {
    let mut w = Worker {
        app,
        x11: X11::connect().ok(),
        cb: None,
        last_auto: None,
    };
    while let Ok(r) = rx.recv() {
        w.handle(r);
    }
}

impl Worker {
    fn handle(&mut self, r: Request) {
        let sources = self.app.state::<SourcesManager>();
        let t0 = std::time::Instant::now();
        let (sel, explicit, since) = match r {
            Request::ClipboardChanged(_) if !sources.auto_read() => return,
            Request::ClipboardChanged(at) => (Selection::Clipboard, false, at),
            Request::SpeakClipboard => (Selection::Clipboard, true, t0),
            Request::SpeakSelection => (Selection::Primary, true, t0),
        };
        let what = match sel {
            Selection::Clipboard => "clipboard",
            Selection::Primary => "selection",
        };
        match self.x11.as_ref().map(|x| x.offer(sel)) {
            Some(Ok(Offer::Secret)) => {
                return self.say(
                    Level::Info,
                    &format!(
                        "Not read: the {what} holds a password (flagged by a password manager)."
                    ),
                );
            }
            Some(Ok(Offer::NotText)) => {
                if explicit {
                    self.say(Level::Info, &format!("The {what} holds no text."));
                }
                return;
            }
            Some(Ok(Offer::Empty)) => {
                if explicit {
                    self.say(Level::Info, &format!("The {what} is empty."));
                }
                return;
            }
            Some(Ok(Offer::Text | Offer::Unknown)) | None => {}
            Some(Err(e)) => tracing::warn!("clipboard targets: {e}"),
        }
        let text = match self.read(sel) {
            Ok(t) if !t.trim().is_empty() => t,
            Ok(_) => {
                if explicit {
                    self.say(Level::Info, &format!("The {what} is empty."));
                }
                return;
            }
            Err(e) => {
                if explicit {
                    self.say(Level::Error, &format!("Cannot read the {what}: {e}"));
                }
                return;
            }
        };
        if sel == Selection::Clipboard {
            let h = hash(&text);
            if !explicit && self.last_auto == Some(h) {
                return;
            }
            self.last_auto = Some(h);
        }
        let source = match sel {
            Selection::Clipboard => Source::Clipboard,
            Selection::Primary => Source::Selection,
        };
        let engine = self.app.state::<EngineManager>();
        let history = self.app.state::<HistoryManager>();
        let bytes = text.len();
        match engine.speak(text, source, Mode::Interrupt) {
            Ok((id, text)) => {
                // Timing only, never the text: the app's share of clipboard → first sound.
                tracing::info!(
                    "{source:?} change → engine in {:.2} ms ({} bytes)",
                    since.elapsed().as_secs_f64() * 1e3,
                    bytes
                );
                history.add(source, &text, Some(id));
                events::history(&self.app, &history.list());
            }
            Err(e) => self.say(Level::Error, &e),
        }
    }

    fn read(&mut self, sel: Selection) -> Result<String, String> {
        if self.cb.is_none() {
            self.cb = Some(arboard::Clipboard::new().map_err(|e| e.to_string())?);
        }
        let cb = self.cb.as_mut().ok_or("no clipboard")?;
        clipboard::read_text(cb, sel).map_err(|e| match e {
            arboard::Error::ContentNotAvailable => "it holds no text".to_string(),
            other => other.to_string(),
        })
    }

    fn say(&self, level: Level, msg: &str) {
        events::notice(&self.app, level, msg);
    }
}

fn hash(t: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    t.hash(&mut h);
    h.finish()
}
