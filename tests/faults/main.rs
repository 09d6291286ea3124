//! Faults injected on purpose (issue 19, item 4; docs/RELIABILITY.md, "Faults injected"):
//! each test sets one through `hark_model::fault` (this binary's build has the
//! `fault-inject` feature; release builds do not) or `HARK_FAULT` for a `hark` child, and
//! checks that nothing is lost and the user is told. A binary of its own: the fault is
//! process-wide, so its tests run one at a time (`serial`).
mod engine;
mod startup;

use std::sync::{Mutex, MutexGuard};

/// Holds the fault hook for one test at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

pub const HARK: &str = env!("CARGO_BIN_EXE_hark");

/// A voices folder with the real voice: `HARK_FAULT_VOICES` (the device script's bundle,
/// where the `hark` this binary was built beside is absent), else one imported here.
pub fn voices() -> Option<std::path::PathBuf> {
    match std::env::var_os("HARK_FAULT_VOICES") {
        Some(dir) => Some(dir.into()),
        None => testkit::installed_voices_dir(HARK).map(|d| d.to_path_buf()),
    }
}
