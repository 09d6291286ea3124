//! Files written under a hidden name beside their target (`.NAME.partial-PID`) and renamed
//! into place only when complete: a failure or an interruption never leaves a broken or empty
//! file under the target's name, and an older file there stays as it was until the new one
//! replaces it. A partial file is removed when dropped unfinished, and on SIGINT, SIGTERM or
//! SIGHUP when the binary asked for it ([`remove_partial_on_signals`]); only a process killed
//! outright (SIGKILL, the OOM killer) can leave one behind.

use std::ffi::{CString, c_char, c_int};
use std::fs::{self, File, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};

/// The partial files being written (leaked C strings), or null: for the signal handler. An
/// export writes at most an audio file and a subtitle file at once.
static PARTIALS: [AtomicPtr<c_char>; 4] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 4];

extern "C" fn on_signal(sig: c_int) {
    // SAFETY: unlink, signal and raise are async-signal-safe; each pointer is null or a C
    // string that is never freed.
    unsafe {
        for slot in &PARTIALS {
            let p = slot.load(Ordering::SeqCst);
            if !p.is_null() {
                libc::unlink(p);
            }
        }
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// For binaries, once: when SIGINT, SIGTERM or SIGHUP ends the process (Ctrl-C, `kill`, a
/// closed terminal) while a file is being written, its partial file is removed first; the
/// process then ends as the signal would have ended it.
pub fn remove_partial_on_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installs a handler that only makes async-signal-safe calls.
        unsafe { libc::signal(sig, on_signal as extern "C" fn(c_int) as libc::sighandler_t) };
    }
}

/// The hidden file a target is written to; removed unless [`Partial::commit`] renamed it.
pub(crate) struct Partial {
    path: PathBuf,
    target: PathBuf,
    slot: Option<usize>,
    kept: bool,
}

impl Partial {
    /// Creates the hidden file for `target` (truncated if a stale one is there), opened for
    /// reading and writing (encoders go back to fill in their headers).
    pub(crate) fn create(target: &Path) -> std::io::Result<(Self, File)> {
        let name = target.file_name().ok_or(std::io::ErrorKind::InvalidInput)?;
        let mut hidden = std::ffi::OsString::from(".");
        hidden.push(name);
        hidden.push(format!(".partial-{}", std::process::id()));
        let path = target.with_file_name(hidden);
        let slot = CString::new(path.as_os_str().as_bytes())
            .ok()
            .and_then(|c| {
                let c = c.into_raw();
                let free = PARTIALS.iter().position(|s| {
                    s.compare_exchange(std::ptr::null_mut(), c, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                });
                if free.is_none() {
                    // SAFETY: `c` came from `into_raw` above and was not stored.
                    drop(unsafe { CString::from_raw(c) });
                }
                free
            });
        let partial = Self {
            path,
            target: target.to_path_buf(),
            slot,
            kept: false,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&partial.path)?;
        Ok((partial, file))
    }

    /// Puts the complete file in place of its target.
    pub(crate) fn commit(mut self) -> std::io::Result<()> {
        fs::rename(&self.path, &self.target)?;
        self.kept = true;
        Ok(())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            // Leaked on purpose: the signal handler may be reading it right now.
            PARTIALS[i].store(std::ptr::null_mut(), Ordering::SeqCst);
        }
        if !self.kept {
            let _ = fs::remove_file(&self.path);
        }
    }
}
