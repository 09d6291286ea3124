//! Piper's voice catalogue: `voices.json`, published beside the voices, names each voice with
//! its language, quality, speakers and files (path, size, MD5). [`Catalogue::fetch`] reads it
//! from a URL or a local path; [`install`] downloads a voice's model and config, checks each
//! against the catalogue, resumes a download that was cut off, and imports the voice only
//! when both files are whole, so a voice is installed completely or not at all.

mod download;

pub use download::{Progress, download};

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where Piper's voices are published (the catalogue's files are relative to its folder).
pub const DEFAULT_URL: &str =
    "https://huggingface.co/rhasspy/piper-voices/resolve/v1.0.0/voices.json";

/// A catalogue larger than this is refused (Piper's own is about 1.5 MB).
pub const MAX_CATALOGUE_BYTES: u64 = 32 << 20;

/// Where downloads wait, inside the voices folder, until they are whole and imported; a
/// folder whose name starts with a dot is not a voice ([`hark_voice::list`]).
pub const DOWNLOADS_DIR: &str = ".downloads";

#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    #[error("cannot read the voice catalogue at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("the voice catalogue at {url} is not a Piper voices.json: {reason}")]
    Malformed { url: String, reason: String },
    #[error("no voice \"{0}\" in the catalogue (see `hark voice list --available`)")]
    NoSuchVoice(String),
    #[error("cannot download {url}: {reason}")]
    Download { url: String, reason: String },
    #[error("{file} is not what the catalogue says ({reason}); it was deleted, try again")]
    Corrupt { file: String, reason: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("the downloaded voice does not import: {0}")]
    Import(#[from] hark_voice::ImportError),
}

/// One file of a voice, as the catalogue lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VoiceFile {
    /// Relative to the catalogue's folder.
    pub path: String,
    pub size: u64,
    /// Lower-case hex.
    pub md5: String,
}

/// One voice of the catalogue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Voice {
    /// The key, e.g. `en_US-joe-medium`: what `hark voice install` takes.
    pub name: String,
    /// e.g. `en_US`.
    pub language: String,
    /// e.g. "English (United States)".
    pub language_name: String,
    pub quality: String,
    pub speakers: u32,
    pub model: VoiceFile,
    pub config: VoiceFile,
}

impl Voice {
    pub fn download_bytes(&self) -> u64 {
        self.model.size + self.config.size
    }
}

pub struct Catalogue {
    /// The URL or path it was read from.
    pub source: String,
    /// Sorted by name.
    pub voices: Vec<Voice>,
}

#[derive(Deserialize)]
struct RawVoice {
    #[serde(default)]
    language: RawLanguage,
    #[serde(default)]
    quality: String,
    #[serde(default = "one")]
    num_speakers: u32,
    files: BTreeMap<String, RawFile>,
}

fn one() -> u32 {
    1
}

#[derive(Deserialize, Default)]
struct RawLanguage {
    #[serde(default)]
    code: String,
    #[serde(default)]
    name_english: String,
    #[serde(default)]
    country_english: String,
}

#[derive(Deserialize)]
struct RawFile {
    size_bytes: u64,
    md5_digest: String,
}

impl Catalogue {
    /// Reads the catalogue at `source`: an `http(s)://` URL, or a local file.
    pub fn fetch(source: &str) -> Result<Self, CatalogueError> {
        let unreachable = |reason: String| CatalogueError::Unreachable {
            url: source.to_string(),
            reason,
        };
        let text = if is_remote(source) {
            agent()
                .get(source)
                .call()
                .map_err(|e| unreachable(e.to_string()))?
                .body_mut()
                .with_config()
                .limit(MAX_CATALOGUE_BYTES)
                .read_to_string()
                .map_err(|e| unreachable(e.to_string()))?
        } else {
            let path = source.strip_prefix("file://").unwrap_or(source);
            let len = std::fs::metadata(path)
                .map_err(|e| unreachable(e.to_string()))?
                .len();
            if len > MAX_CATALOGUE_BYTES {
                return Err(unreachable(format!("{len} bytes is too large")));
            }
            std::fs::read_to_string(path).map_err(|e| unreachable(e.to_string()))?
        };
        Self::parse(source, &text)
    }

    /// Reads a catalogue's text; `source` is where it came from (its files are beside it).
    pub fn parse(source: &str, text: &str) -> Result<Self, CatalogueError> {
        let malformed = |reason: String| CatalogueError::Malformed {
            url: source.to_string(),
            reason,
        };
        let raw: BTreeMap<String, RawVoice> =
            serde_json::from_str(text).map_err(|e| malformed(e.to_string()))?;
        let mut voices = Vec::with_capacity(raw.len());
        for (name, v) in raw {
            // The model and its config are the files ending so; others (a model card) are
            // not needed.
            let file = |suffix: &str| {
                v.files
                    .iter()
                    .find(|(p, _)| p.ends_with(suffix))
                    .map(|(p, f)| VoiceFile {
                        path: p.clone(),
                        size: f.size_bytes,
                        md5: f.md5_digest.to_ascii_lowercase(),
                    })
            };
            let (Some(model), Some(config)) = (file(".onnx"), file(".onnx.json")) else {
                return Err(malformed(format!("{name} lists no .onnx and .onnx.json")));
            };
            for f in [&model, &config] {
                if !safe_relative(&f.path) {
                    return Err(malformed(format!("{name}: a file outside it: {}", f.path)));
                }
            }
            if !safe_name(&name) {
                return Err(malformed(format!("a voice name Hark cannot use: {name:?}")));
            }
            let language_name = match (v.language.name_english, v.language.country_english) {
                (l, c) if c.is_empty() => l,
                (l, c) => format!("{l} ({c})"),
            };
            voices.push(Voice {
                name,
                language: v.language.code,
                language_name,
                quality: v.quality,
                speakers: v.num_speakers,
                model,
                config,
            });
        }
        Ok(Self {
            source: source.to_string(),
            voices,
        })
    }

    pub fn get(&self, name: &str) -> Option<&Voice> {
        self.voices.iter().find(|v| v.name == name)
    }

    /// Where a file of the catalogue is: beside it, on the server or on disk.
    pub fn file_url(&self, file: &VoiceFile) -> String {
        match self.source.rfind('/') {
            Some(i) => format!("{}/{}", &self.source[..i], file.path),
            None => file.path.clone(),
        }
    }
}

fn is_remote(source: &str) -> bool {
    source.starts_with("http://") || source.starts_with("https://")
}

/// A path inside the catalogue's folder: no `..`, not absolute, no backslash.
fn safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

/// A voice name that is one folder name.
fn safe_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// One client for every request: connections time out, a download does not (a voice is
/// 60 MB on a slow line), but a stalled one does.
fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_connect(Some(Duration::from_secs(20)))
            .timeout_recv_response(Some(Duration::from_secs(30)))
            .timeout_per_read(Some(Duration::from_secs(60)))
            .build(),
    )
}

/// Installs `name` from `catalogue` into `voices_dir`: both files downloaded into
/// `voices_dir/.downloads/NAME/` (kept there if cut off, so the next try resumes), checked,
/// then imported; the downloads are deleted once the voice is in. Returns the voice's folder.
pub fn install(
    catalogue: &Catalogue,
    name: &str,
    voices_dir: &Path,
    dtype: hark_voice::WeightDtype,
    progress: &mut dyn Progress,
) -> Result<PathBuf, CatalogueError> {
    let voice = catalogue
        .get(name)
        .ok_or_else(|| CatalogueError::NoSuchVoice(name.to_string()))?;
    let staging = voices_dir.join(DOWNLOADS_DIR).join(name);
    std::fs::create_dir_all(&staging)?;
    let model = staging.join(format!("{name}.onnx"));
    let config = staging.join(format!("{name}.onnx.json"));
    progress.begin(voice.download_bytes());
    let mut done = 0;
    for (file, path) in [(&voice.config, &config), (&voice.model, &model)] {
        download(
            &agent(),
            &catalogue.file_url(file),
            file,
            path,
            done,
            progress,
        )?;
        done += file.size;
    }
    let result = hark_voice::import_piper(&model, Some(&config), voices_dir, Some(name), dtype);
    // Whole files that do not import will not import next time either.
    let _ = std::fs::remove_dir_all(&staging);
    Ok(result?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CATALOGUE: &str = r#"{
      "en_US-joe-medium": {
        "key": "en_US-joe-medium", "name": "joe",
        "language": {"code": "en_US", "family": "en", "region": "US",
                     "name_native": "English", "name_english": "English",
                     "country_english": "United States"},
        "quality": "medium", "num_speakers": 1, "speaker_id_map": {},
        "files": {
          "en/en_US/joe/medium/en_US-joe-medium.onnx": {"size_bytes": 63201294, "md5_digest": "AB12"},
          "en/en_US/joe/medium/en_US-joe-medium.onnx.json": {"size_bytes": 4885, "md5_digest": "cd34"},
          "en/en_US/joe/medium/MODEL_CARD": {"size_bytes": 300, "md5_digest": "ef56"}
        },
        "aliases": []
      },
      "en_US-libritts-high": {
        "language": {"code": "en_US", "name_english": "English"},
        "quality": "high", "num_speakers": 904,
        "files": {
          "en/en_US/libritts/high/en_US-libritts-high.onnx": {"size_bytes": 10, "md5_digest": "00"},
          "en/en_US/libritts/high/en_US-libritts-high.onnx.json": {"size_bytes": 1, "md5_digest": "11"}
        }
      }
    }"#;

    #[test]
    fn piper_catalogue_is_read_with_each_voices_model_and_config() {
        let c = Catalogue::parse("https://example.org/voices/voices.json", CATALOGUE).unwrap();
        assert_eq!(c.voices.len(), 2);
        let joe = c.get("en_US-joe-medium").unwrap();
        assert_eq!(joe.language, "en_US");
        assert_eq!(joe.language_name, "English (United States)");
        assert_eq!((joe.quality.as_str(), joe.speakers), ("medium", 1));
        assert_eq!(joe.model.size, 63_201_294);
        assert_eq!(joe.model.md5, "ab12");
        assert_eq!(joe.download_bytes(), 63_201_294 + 4885);
        assert_eq!(
            c.file_url(&joe.config),
            "https://example.org/voices/en/en_US/joe/medium/en_US-joe-medium.onnx.json"
        );
        assert_eq!(c.get("en_US-libritts-high").unwrap().speakers, 904);
    }

    #[test]
    fn a_catalogue_that_points_outside_itself_or_is_not_one_is_refused() {
        for bad in [
            "[]",
            "not json",
            r#"{"v": {"files": {}}}"#,
            r#"{"v": {"files": {"../../etc/x.onnx": {"size_bytes": 1, "md5_digest": "0"},
                                 "v.onnx.json": {"size_bytes": 1, "md5_digest": "0"}}}}"#,
            r#"{"../v": {"files": {"v.onnx": {"size_bytes": 1, "md5_digest": "0"},
                                    "v.onnx.json": {"size_bytes": 1, "md5_digest": "0"}}}}"#,
        ] {
            let e = Catalogue::parse("c.json", bad).err().expect(bad);
            assert!(matches!(e, CatalogueError::Malformed { .. }), "{bad}: {e}");
        }
    }

    #[test]
    fn a_missing_voice_is_a_clear_error() {
        let c = Catalogue::parse("c.json", CATALOGUE).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut quiet = ();
        let e = install(
            &c,
            "xx_XX-nobody-low",
            dir.path(),
            Default::default(),
            &mut quiet,
        );
        assert!(matches!(e, Err(CatalogueError::NoSuchVoice(_))));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing written"
        );
    }
}
