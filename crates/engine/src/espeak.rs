//! espeak-ng in a child copy of the running binary ([`hark_text::espeak_child`]), so that a
//! crash inside it cannot end the `hark` command or the app. Both binaries call
//! [`serve_if_child`] first thing in `main`, then [`isolate_espeak`].

pub use hark_text::espeak_child::serve_if_child;

use super::Overrides;

/// Starts the phonemiser child (a copy of this binary), unless `HARK_ESPEAK_IN_PROCESS=1`
/// asked for espeak-ng in process. On an error espeak-ng stays in process, and the error says
/// why.
pub fn isolate_espeak(overrides: &Overrides) -> Result<(), String> {
    use_espeak_data(overrides);
    if overrides.espeak_in_process {
        return Ok(());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    hark_text::espeak_child::isolate(&exe).map_err(|e| e.to_string())
}

/// Chooses espeak-ng's data folder (before its first use): `HARK_ESPEAK_DATA` when set, else
/// the installed copy ([`crate::overrides::default_espeak_data_dir`]: Piper's own data, which
/// `scripts/run.sh` installs and the voices were trained on) when it exists, else the data this
/// build of espeak-ng made (a development build; its English and Russian differ a little from
/// Piper's, docs/TEXT.md). None found: espeak-ng's first use reports an error that says where
/// it looked. [`isolate_espeak`] calls it.
pub fn use_espeak_data(overrides: &Overrides) {
    let dir = match &overrides.espeak_data {
        Some(dir) => Some(dir.clone()),
        None => Some(crate::overrides::default_espeak_data_dir())
            .filter(|d| hark_text::espeak::is_data_dir(d)),
    };
    if let Some(dir) = dir {
        hark_text::espeak::set_data_dir(dir);
    }
}
