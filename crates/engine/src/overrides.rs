//! The `HARK_*` variables: tuning and diagnosis switches a user does not normally touch.
//! Each binary reads them once, at its edge, with [`Overrides::from_env`], and hands the
//! values down as arguments; no library code reads the environment.

/// The values of the `HARK_*` variables (unset: the defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct Overrides {
    /// `HARK_WARMUP=0`: a new engine does not warm up before it reports ready.
    pub warm_up: bool,
    /// `HARK_AUDIO_BUFFER_MS` (1–500): the device callback period to ask for.
    pub audio_buffer_ms: Option<u32>,
    /// `HARK_ESPEAK_IN_PROCESS=1`: espeak-ng runs in this process, not in a child.
    pub espeak_in_process: bool,
}

impl Default for Overrides {
    fn default() -> Self {
        Self {
            warm_up: true,
            audio_buffer_ms: None,
            espeak_in_process: false,
        }
    }
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
            espeak_in_process: var("HARK_ESPEAK_IN_PROCESS").is_some_and(|v| v == "1"),
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
            _ => None,
        });
        assert!(!set.warm_up);
        assert_eq!(set.audio_buffer_ms, Some(5));
    }
}
