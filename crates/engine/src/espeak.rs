//! espeak-ng in a child copy of the running binary ([`hark_text::espeak_child`]), so that a
//! crash inside it cannot end the `hark` command or the app. Both binaries call
//! [`serve_if_child`] first thing in `main`, then [`isolate_espeak`].

pub use hark_text::espeak_child::serve_if_child;

use super::Overrides;

/// Starts the phonemiser child (a copy of this binary), unless `HARK_ESPEAK_IN_PROCESS=1`
/// asked for espeak-ng in process. On an error espeak-ng stays in process, and the error says
/// why.
pub fn isolate_espeak(overrides: &Overrides) -> Result<(), String> {
    if overrides.espeak_in_process {
        return Ok(());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    hark_text::espeak_child::isolate(&exe).map_err(|e| e.to_string())
}
