//! Installed voices: where they live, listing them, and loading one by name or folder.

use super::config::{VOICE_FORMAT_VERSION, VoiceConfig};
use super::import::{CONFIG_FILE, WEIGHTS_FILE};
use super::weights::{Weights, WeightsError};
use std::path::{Path, PathBuf};

/// The voice used when none is named.
pub const DEFAULT_VOICE: &str = "en_US-joe-medium";

const INSTALL_HINT: &str = "install one with `hark voice import VOICE.onnx` (Piper .onnx + .onnx.json) or `./scripts/run.sh`";

#[derive(Debug, thiserror::Error)]
pub enum VoiceError {
    #[error("voice {wanted:?} is not installed in {dir}; {hint}", hint = INSTALL_HINT)]
    NotFound { wanted: String, dir: PathBuf },
    #[error("no voices are installed in {dir}; {hint}", hint = INSTALL_HINT)]
    NoVoices { dir: PathBuf },
    #[error(
        "several voices are installed in {dir} ({names}) and none is the default {DEFAULT_VOICE}; pick one by name"
    )]
    Ambiguous { dir: PathBuf, names: String },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("voice config {path} is invalid: {reason}; re-import the voice")]
    BadConfig { path: PathBuf, reason: String },
    #[error(transparent)]
    Weights(#[from] WeightsError),
    #[error("{0}")]
    Speaker(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct VoiceInfo {
    pub name: String,
    pub dir: PathBuf,
    pub sample_rate: u32,
    /// "f32" or "f16".
    pub dtype: String,
    /// Size of the folder's files in bytes.
    pub size_bytes: u64,
    /// The speakers' names in id order; empty for a single-speaker voice.
    pub speakers: Vec<String>,
}

/// Installed voices in `dir`, sorted by name. Broken folders are skipped with a warning;
/// hidden ones (in-progress imports) are ignored.
pub fn list(dir: &Path) -> Vec<VoiceInfo> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<VoiceInfo> = entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter(|e| e.path().is_dir())
        .filter_map(|e| match info(&e.path()) {
            Ok(i) => Some(i),
            Err(err) => {
                tracing::warn!("skipping broken voice folder {}: {err}", e.path().display());
                None
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn info(dir: &Path) -> Result<VoiceInfo, VoiceError> {
    let config = read_config(dir)?;
    let weights = dir.join(WEIGHTS_FILE);
    let meta = std::fs::metadata(&weights).map_err(|source| VoiceError::Io {
        path: weights,
        source,
    })?;
    let json_len = std::fs::metadata(dir.join(CONFIG_FILE)).map_or(0, |m| m.len());
    Ok(VoiceInfo {
        name: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        dir: dir.to_path_buf(),
        sample_rate: config.sample_rate,
        speakers: config.speakers,
        dtype: config.weights_dtype,
        size_bytes: meta.len() + json_len,
    })
}

fn read_config(dir: &Path) -> Result<VoiceConfig, VoiceError> {
    let path = dir.join(CONFIG_FILE);
    let text = std::fs::read_to_string(&path).map_err(|source| VoiceError::Io {
        path: path.clone(),
        source,
    })?;
    let config: VoiceConfig = serde_json::from_str(&text).map_err(|e| VoiceError::BadConfig {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    let bad = |reason: String| VoiceError::BadConfig {
        path: path.clone(),
        reason,
    };
    config.dims.check_bounds().map_err(bad)?;
    if config.hop_length != config.dims.samples_per_frame() {
        return Err(bad(format!(
            "hop_length {} is not the product of the upsample rates",
            config.hop_length
        )));
    }
    if !(1000..=384_000).contains(&config.sample_rate) {
        return Err(bad(format!("sample rate {} Hz", config.sample_rate)));
    }
    let n_vocab = config.dims.n_vocab as i64;
    if let Some(id) = config
        .phoneme_id_map
        .values()
        .flatten()
        .find(|&&id| !(0..n_vocab).contains(&id))
    {
        return Err(bad(format!(
            "phoneme id {id} is outside the vocabulary of {n_vocab}"
        )));
    }
    if !(1..=VOICE_FORMAT_VERSION).contains(&config.format_version) {
        return Err(VoiceError::BadConfig {
            path,
            reason: format!(
                "format version {} but this Hark reads 1 to {VOICE_FORMAT_VERSION}",
                config.format_version
            ),
        });
    }
    let d = &config.dims;
    // `num_speakers` 0 (a config without speakers) is one speaker.
    if config.num_speakers.max(1) != d.n_speakers
        || (config.is_multi_speaker()
            && (config.speakers.len() != config.num_speakers || config.format_version < 2))
    {
        return Err(VoiceError::BadConfig {
            path,
            reason: format!(
                "num_speakers {} does not fit the model's {} speaker(s), {} speaker name(s) \
                 and format version {}",
                config.num_speakers,
                d.n_speakers,
                config.speakers.len(),
                config.format_version
            ),
        });
    }
    Ok(config)
}

pub struct Voice {
    pub dir: PathBuf,
    pub config: VoiceConfig,
    pub weights: Weights,
    /// The speaker the backends speak with (0 for a single-speaker voice); set it with
    /// [`Voice::select_speaker`], which checks it.
    pub speaker: usize,
}

impl Voice {
    /// Loads a voice: `Some(path)` to a voice folder, `Some(name)` in the voice folder
    /// `voices` (the binaries resolve it once: `hark_engine::Overrides::voices_dir`), or `None`
    /// for the default voice (or the only installed one).
    pub fn load_from(voices: &Path, name_or_dir: Option<&str>) -> Result<Voice, VoiceError> {
        let dir = resolve(voices, name_or_dir)?;
        let config = read_config(&dir)?;
        let weights = Weights::load(&dir.join(WEIGHTS_FILE))?;
        // The weights must be what the dimensions say, so the model can trust both.
        crate::dims::check_shapes(&config.dims, |name| {
            weights.get(name).ok().map(|t| &t.shape[..])
        })
        .map_err(|reason| VoiceError::BadConfig {
            path: dir.join(WEIGHTS_FILE),
            reason: format!("the weights do not fit voice.json: {reason}"),
        })?;
        Ok(Voice {
            dir,
            config,
            weights,
            speaker: 0,
        })
    }

    /// Picks the speaker by name or id (`VoiceConfig::speaker_id`); the error lists the
    /// speakers there are.
    pub fn select_speaker(&mut self, wanted: &str) -> Result<usize, VoiceError> {
        let id = self
            .config
            .speaker_id(wanted)
            .map_err(VoiceError::Speaker)?;
        self.speaker = id;
        Ok(id)
    }

    /// Only the voice's `voice.json`, for work that needs no weights (phonemes, listing).
    pub fn load_config(
        voices: &Path,
        name_or_dir: Option<&str>,
    ) -> Result<VoiceConfig, VoiceError> {
        read_config(&resolve(voices, name_or_dir)?)
    }
}

fn resolve(voices: &Path, wanted: Option<&str>) -> Result<PathBuf, VoiceError> {
    match wanted {
        // A path to a folder wins over a name, so `./my-voice` works from anywhere.
        Some(w) if Path::new(w).join(CONFIG_FILE).is_file() => Ok(PathBuf::from(w)),
        Some(w) => {
            let dir = voices.join(w);
            if !w.contains(['/', '\\']) && dir.join(CONFIG_FILE).is_file() {
                Ok(dir)
            } else {
                Err(VoiceError::NotFound {
                    wanted: w.to_string(),
                    dir: voices.to_path_buf(),
                })
            }
        }
        None => {
            let all = list(voices);
            if let Some(v) = all.iter().find(|v| v.name == DEFAULT_VOICE) {
                return Ok(v.dir.clone());
            }
            match all.as_slice() {
                [] => Err(VoiceError::NoVoices {
                    dir: voices.to_path_buf(),
                }),
                [only] => Ok(only.dir.clone()),
                many => Err(VoiceError::Ambiguous {
                    dir: voices.to_path_buf(),
                    names: many
                        .iter()
                        .map(|v| v.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_voice_tells_how_to_install() {
        let d = tempfile::tempdir().expect("tempdir");
        let e = Voice::load_from(d.path(), None).err().expect("no voices");
        let msg = e.to_string();
        assert!(
            msg.contains("hark voice import") && msg.contains("run.sh"),
            "{msg}"
        );
        let e = Voice::load_from(d.path(), Some("nope"))
            .err()
            .expect("not found");
        assert!(e.to_string().contains("\"nope\""), "{e}");
    }

    #[test]
    fn list_skips_broken_and_hidden_folders() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(d.path().join("broken")).expect("mkdir");
        std::fs::write(d.path().join("broken").join(CONFIG_FILE), "{").expect("write");
        std::fs::create_dir(d.path().join(".import-x")).expect("mkdir");
        assert!(list(d.path()).is_empty());
        assert!(list(&d.path().join("absent")).is_empty());
    }
}
