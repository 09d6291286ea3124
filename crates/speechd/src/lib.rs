//! `sd_hark`: Hark as a speech-dispatcher output module. speech-dispatcher starts it once
//! and talks to it on stdin/stdout (`protocol.rs`); it loads the voice once and keeps one
//! streaming engine warm (`module.rs`); letters, digits, punctuation and key names play from
//! a clip cache made for the voice at start-up (`cache.rs`, `keys.rs`); speech-dispatcher's
//! settings map onto Hark's in `settings.rs`. Nothing here logs what is spoken.

pub mod cache;
pub mod keys;
pub mod module;
pub mod protocol;
pub mod settings;

use std::sync::OnceLock;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::reload;

type LogHandle = reload::Handle<LevelFilter, tracing_subscriber::Registry>;
static LOG: OnceLock<LogHandle> = OnceLock::new();

/// Logs to stderr (speech-dispatcher keeps a module's stderr as its log) at `level`
/// (speech-dispatcher's 0–5).
pub fn init_logging(level: u32) {
    use tracing_subscriber::prelude::*;
    let (filter, handle) = reload::Layer::new(level_filter(level));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(false);
    if tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .try_init()
        .is_ok()
    {
        let _ = LOG.set(handle);
    }
}

static PINNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Keeps the log level set at start (`HARK_SPEECHD_LOG`) over speech-dispatcher's LOGLEVEL.
pub fn pin_log_level() {
    PINNED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// speech-dispatcher's LOGLEVEL (0 nothing … 5 everything).
pub fn set_log_level(level: u32) {
    if PINNED.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    if let Some(h) = LOG.get() {
        let _ = h.modify(|f| *f = level_filter(level));
    }
}

fn level_filter(level: u32) -> LevelFilter {
    match level {
        0 => LevelFilter::OFF,
        1 => LevelFilter::ERROR,
        2 => LevelFilter::WARN,
        3 => LevelFilter::INFO,
        4 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    }
}
