//! The `HARK_*` variables: the voice folder, and tuning and diagnosis switches a user does
//! not normally touch. Each binary reads them once, at its edge, with [`Overrides::from_env`],
//! and hands the values down as arguments; no library code reads the environment.

use hark_model::gpu::{GpuOptions, Mma};
use std::path::PathBuf;
use std::time::Duration;

/// The values of the `HARK_*` variables (unset: the defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct Overrides {
    /// `HARK_WARMUP=0`: a new engine does not warm up before it reports ready.
    pub warm_up: bool,
    /// `HARK_AUDIO_BUFFER_MS` (1–500): the device callback period to ask for.
    pub audio_buffer_ms: Option<u32>,
    /// The voice folder: `HARK_VOICES_DIR`, else [`default_voices_dir`].
    pub voices_dir: PathBuf,
    /// The CUDA backend's switches: `HARK_CUDA_F32`, `HARK_CUDA_MMA`, `HARK_CUDA_GRAPHS`,
    /// `HARK_CUDA_GRAPH_CACHE`, `HARK_CUDA_WARMUP`, `HARK_KERNEL_NOCACHE`,
    /// `HARK_PERSIST_WATCHDOG_MS`, `HARK_PERSIST_BLOCKS`, `HARK_CUDA_PTX` and
    /// `HARK_CUDA_COMPILE_WAIT_MS` (see [`GpuOptions`]).
    pub gpu: GpuOptions,
    /// `HARK_ESPEAK_IN_PROCESS=1`: espeak-ng runs in this process, not in a child.
    pub espeak_in_process: bool,
    /// `HARK_ESPEAK_DATA`: espeak-ng's data folder (`espeak-ng-data`), instead of the installed
    /// copy or this build's ([`crate::espeak::use_espeak_data`]).
    pub espeak_data: Option<PathBuf>,
}

impl Default for Overrides {
    fn default() -> Self {
        Self {
            warm_up: true,
            audio_buffer_ms: None,
            voices_dir: default_voices_dir(),
            gpu: GpuOptions::default(),
            espeak_in_process: false,
            espeak_data: None,
        }
    }
}

/// `$XDG_DATA_HOME/hark/espeak-ng-data` (`~/.local/share/hark/espeak-ng-data`), where
/// `scripts/run.sh` installs espeak-ng's data for a binary run away from its build folder.
pub fn default_espeak_data_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from(".local/share"))
        .join("hark")
        .join("espeak-ng-data")
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
    /// Reads the variables; a malformed value counts as unset. (A value that is not UTF-8
    /// still counts as set, which is all `HARK_KERNEL_NOCACHE` asks.)
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
    }

    /// As `from_env`, from any source of variables (tests).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let defaults = GpuOptions::default();
        Self {
            warm_up: var("HARK_WARMUP").is_none_or(|v| v != "0"),
            audio_buffer_ms: var("HARK_AUDIO_BUFFER_MS")
                .and_then(|v| v.parse::<u32>().ok())
                .filter(|ms| (1..=500).contains(ms)),
            voices_dir: var("HARK_VOICES_DIR")
                .filter(|d| !d.is_empty())
                .map_or_else(default_voices_dir, PathBuf::from),
            gpu: GpuOptions {
                all_f32: var("HARK_CUDA_F32").is_some_and(|v| v == "1"),
                mma: match var("HARK_CUDA_MMA").as_deref() {
                    Some("0") => Mma::Off,
                    Some("1") => Mma::On,
                    _ => Mma::SplitFlow,
                },
                graphs: var("HARK_CUDA_GRAPHS").is_none_or(|v| v != "0"),
                graph_cache: var("HARK_CUDA_GRAPH_CACHE")
                    .and_then(|v| v.parse::<usize>().ok())
                    .filter(|&n| n >= 1)
                    .unwrap_or(defaults.graph_cache),
                warm_up: var("HARK_CUDA_WARMUP").is_none_or(|v| v != "0"),
                // Set at all (even empty): compile every time.
                kernel_cache: var("HARK_KERNEL_NOCACHE").is_none(),
                watchdog: var("HARK_PERSIST_WATCHDOG_MS")
                    .and_then(|v| v.parse::<u64>().ok())
                    .map_or(defaults.watchdog, Duration::from_millis),
                persist_blocks: var("HARK_PERSIST_BLOCKS").and_then(|v| v.parse::<u32>().ok()),
                ptx: var("HARK_CUDA_PTX").is_some_and(|v| v == "1"),
                compile_wait: var("HARK_CUDA_COMPILE_WAIT_MS")
                    .and_then(|v| v.parse::<u64>().ok())
                    .map_or(defaults.compile_wait, Duration::from_millis),
            },
            espeak_in_process: var("HARK_ESPEAK_IN_PROCESS").is_some_and(|v| v == "1"),
            espeak_data: var("HARK_ESPEAK_DATA")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Overrides;
    use hark_model::gpu::{GpuOptions, Mma};
    use std::time::Duration;

    fn vars(set: &'static [(&'static str, &'static str)]) -> Overrides {
        Overrides::from_vars(|n| {
            set.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn unset_variables_give_the_defaults_and_bad_values_count_as_unset() {
        assert_eq!(Overrides::from_vars(|_| None), Overrides::default());
        let bad = vars(&[
            ("HARK_AUDIO_BUFFER_MS", "900"),
            ("HARK_CUDA_F32", "yes"),
            ("HARK_CUDA_MMA", "3"),
            ("HARK_CUDA_GRAPHS", "no"),
            ("HARK_CUDA_GRAPH_CACHE", "0"),
            ("HARK_CUDA_WARMUP", ""),
            ("HARK_PERSIST_WATCHDOG_MS", "soon"),
            ("HARK_PERSIST_BLOCKS", "-1"),
            ("HARK_CUDA_PTX", "yes"),
            ("HARK_CUDA_COMPILE_WAIT_MS", "-5"),
        ]);
        assert_eq!(bad.audio_buffer_ms, None);
        assert_eq!(bad.gpu, GpuOptions::default());
        let set = vars(&[
            ("HARK_WARMUP", "0"),
            ("HARK_AUDIO_BUFFER_MS", "5"),
            ("HARK_VOICES_DIR", "/v"),
        ]);
        assert!(!set.warm_up);
        assert_eq!(set.audio_buffer_ms, Some(5));
        assert_eq!(set.voices_dir, std::path::Path::new("/v"));
        assert_eq!(set.gpu, GpuOptions::default());
        let empty = vars(&[("HARK_VOICES_DIR", "")]);
        assert_eq!(empty.voices_dir, super::default_voices_dir());
    }

    #[test]
    fn the_gpu_variables_fill_the_gpu_options() {
        let o = vars(&[
            ("HARK_CUDA_F32", "1"),
            ("HARK_CUDA_MMA", "0"),
            ("HARK_CUDA_GRAPHS", "0"),
            ("HARK_CUDA_GRAPH_CACHE", "16"),
            ("HARK_CUDA_WARMUP", "0"),
            ("HARK_KERNEL_NOCACHE", ""),
            ("HARK_PERSIST_WATCHDOG_MS", "600000"),
            ("HARK_PERSIST_BLOCKS", "8"),
            ("HARK_CUDA_PTX", "1"),
            ("HARK_CUDA_COMPILE_WAIT_MS", "0"),
        ])
        .gpu;
        assert_eq!(
            o,
            GpuOptions {
                all_f32: true,
                mma: Mma::Off,
                graphs: false,
                graph_cache: 16,
                warm_up: false,
                kernel_cache: false,
                watchdog: Duration::from_millis(600_000),
                persist_blocks: Some(8),
                ptx: true,
                compile_wait: Duration::ZERO,
            }
        );
        assert_eq!(vars(&[("HARK_CUDA_MMA", "1")]).gpu.mma, Mma::On);
        assert_eq!(vars(&[("HARK_CUDA_MMA", "2")]).gpu.mma, Mma::SplitFlow);
        // Only "0" turns a default-on switch off, as before.
        assert!(vars(&[("HARK_CUDA_GRAPHS", "1")]).gpu.graphs);
        // The watchdog's 10 ms floor applies where it is used, as before.
        let short = vars(&[("HARK_PERSIST_WATCHDOG_MS", "1")]).gpu;
        assert_eq!(short.watchdog, Duration::from_millis(1));
    }
}
