//! The `HARK_*` variables: the voice folder, and tuning and diagnosis switches a user does
//! not normally touch. Each binary reads them once, at its edge, with [`Overrides::from_env`],
//! and hands the values down as arguments; no library code reads the environment.

use std::path::PathBuf;

/// The values of the `HARK_*` variables (unset: the defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct Overrides {
    /// `HARK_WARMUP=0`: a new engine does not warm up before it reports ready.
    pub warm_up: bool,
    /// `HARK_AUDIO_BUFFER_MS` (1–500): the device callback period to ask for.
    pub audio_buffer_ms: Option<u32>,
    /// The voice folder: `HARK_VOICES_DIR`, else [`default_voices_dir`].
    pub voices_dir: PathBuf,
}

impl Default for Overrides {
    fn default() -> Self {
        Self {
            warm_up: true,
            audio_buffer_ms: None,
            voices_dir: default_voices_dir(),
        }
    }
}

/// `$XDG_DATA_HOME/hark/voices` (`~/.local/share/hark/voices`; the platform's data folder
/// elsewhere).
pub fn default_voices_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from(".local/share"))
        .join("hark")
        .join("voices")
}

impl Overrides {
    /// Reads the variables; a malformed value counts as unset.
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// As `from_env`, from any source of variables (tests).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        Self {
            warm_up: var("HARK_WARMUP").is_none_or(|v| v != "0"),
            audio_buffer_ms: var("HARK_AUDIO_BUFFER_MS")
                .and_then(|v| v.parse::<u32>().ok())
                .filter(|ms| (1..=500).contains(ms)),
            voices_dir: var("HARK_VOICES_DIR")
                .filter(|d| !d.is_empty())
                .map_or_else(default_voices_dir, PathBuf::from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Overrides;

    #[test]
    fn unset_variables_give_the_defaults_and_bad_values_count_as_unset() {
        assert_eq!(Overrides::from_vars(|_| None), Overrides::default());
        let bad = Overrides::from_vars(|n| (n == "HARK_AUDIO_BUFFER_MS").then(|| "900".into()));
        assert_eq!(bad.audio_buffer_ms, None);
        let set = Overrides::from_vars(|n| match n {
            "HARK_WARMUP" => Some("0".into()),
            "HARK_AUDIO_BUFFER_MS" => Some("5".into()),
            "HARK_VOICES_DIR" => Some("/v".into()),
            _ => None,
        });
        assert!(!set.warm_up);
        assert_eq!(set.audio_buffer_ms, Some(5));
        assert_eq!(set.voices_dir, std::path::Path::new("/v"));
        let empty = Overrides::from_vars(|n| (n == "HARK_VOICES_DIR").then(String::new));
        assert_eq!(empty.voices_dir, super::default_voices_dir());
    }
}
