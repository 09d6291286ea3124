//! `hark voice import`: Piper `.onnx` + `.onnx.json` → `voices_dir/NAME/{voice.safetensors,
//! voice.json}`. Validates everything before writing, and writes atomically.

use super::config::{Architecture, VoiceConfig, VoiceSource, format_version_for};
use super::onnx::ModelProto;
use super::scales::Scales;
use super::{dims, mapping};
use crate::tensor::Tensor;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

pub const WEIGHTS_FILE: &str = "voice.safetensors";
pub const CONFIG_FILE: &str = "voice.json";

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {what} {path}: {source}")]
    Read {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a valid ONNX model: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error("{path} is not a Piper VITS voice: {reason}")]
    NotPiper { path: PathBuf, reason: String },
    /// The speakers of a multi-speaker voice do not add up (graph, embedding and config).
    #[error("{path}: the voice's speakers are inconsistent: {detail}")]
    Speakers { path: PathBuf, detail: String },
    #[error("bad Piper config {path}: {reason}")]
    BadJson { path: PathBuf, reason: String },
    #[error("invalid voice name {0:?}: use a plain folder name (no '/', not starting with '.')")]
    BadName(String),
    #[error("cannot store the {dtype} weights: {reason}")]
    Dtype { dtype: &'static str, reason: String },
    #[error("cannot write the voice to {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// On-disk type of `voice.safetensors`; compute is always f32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WeightDtype {
    #[default]
    F32,
    F16,
}

impl WeightDtype {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
        }
    }
}

impl std::str::FromStr for WeightDtype {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "f32" | "fp32" | "float32" => Ok(Self::F32),
            "f16" | "fp16" | "float16" => Ok(Self::F16),
            _ => Err(format!("unknown weight type {s:?} (use f32 or f16)")),
        }
    }
}

/// What an import did, for the CLI to print and tests to check.
#[derive(Debug)]
pub struct ImportReport {
    pub dir: PathBuf,
    pub config: VoiceConfig,
    pub n_initializers: usize,
    pub n_weights: usize,
    /// (ONNX name, PyTorch name) of tensors whose names were recovered from the graph.
    pub renamed: Vec<(String, String)>,
    /// Graph constants that were not stored.
    pub dropped: Vec<String>,
    /// Weights stored but not used by Hark's model (e.g. a future Piper module).
    pub extra: Vec<String>,
}

/// Imports a Piper voice; returns the new voice folder.
pub fn import_piper(
    onnx: &Path,
    json: Option<&Path>,
    voices_dir: &Path,
    name: Option<&str>,
    dtype: WeightDtype,
) -> Result<PathBuf, ImportError> {
    import_piper_report(onnx, json, voices_dir, name, dtype).map(|r| r.dir)
}

pub fn import_piper_report(
    onnx: &Path,
    json: Option<&Path>,
    voices_dir: &Path,
    name: Option<&str>,
    dtype: WeightDtype,
) -> Result<ImportReport, ImportError> {
    let name = match name {
        Some(n) => n.to_string(),
        None => onnx
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    check_name(&name)?;
    let json_path = json.map(Path::to_path_buf).unwrap_or_else(|| {
        let mut p = onnx.as_os_str().to_owned();
        p.push(".json");
        PathBuf::from(p)
    });
    // Read and check everything before touching voices_dir.
    let piper = read_piper_json(&json_path)?;
    let bytes = std::fs::read(onnx).map_err(|source| ImportError::Read {
        what: "the voice model",
        path: onnx.to_path_buf(),
        source,
    })?;
    if bytes.is_empty() {
        return Err(ImportError::Corrupt {
            path: onnx.to_path_buf(),
            reason: "the file is empty".into(),
        });
    }
    let sha = hex(&Sha256::digest(&bytes));
    let model = ModelProto::decode_bytes(&bytes).map_err(|e| ImportError::Corrupt {
        path: onnx.to_path_buf(),
        reason: format!("truncated or corrupt protobuf ({e})"),
    })?;
    drop(bytes);
    let not_piper = |reason: String| ImportError::NotPiper {
        path: onnx.to_path_buf(),
        reason,
    };
    let graph = model
        .graph
        .as_ref()
        .ok_or_else(|| not_piper("the model has no graph".into()))?;
    let mapped = mapping::map_weights(graph).map_err(not_piper)?;
    let w = &mapped.weights;
    let missing: Vec<&str> = ["enc_p", "dp", "flow", "dec"]
        .into_iter()
        .filter(|m| !w.keys().any(|k| k.starts_with(&format!("{m}."))))
        .collect();
    if !missing.is_empty() {
        return Err(not_piper(format!(
            "no weights for module(s) {} (found {} module weights in {} initializers)",
            missing
                .iter()
                .map(|m| format!("`{m}.*`"))
                .collect::<Vec<_>>()
                .join(", "),
            w.len(),
            mapped.n_initializers
        )));
    }
    let dims = dims::read_dims(w, graph).map_err(not_piper)?;
    // A multi-speaker export takes a `sid` graph input and has a speaker embedding `emb_g`
    // with a row per speaker; the config says how many there are.
    let sid_input = graph.input.iter().any(|i| i.name == "sid");
    let has_emb = w.contains_key("emb_g.weight");
    let speakers = |detail: String| ImportError::Speakers {
        path: onnx.to_path_buf(),
        detail,
    };
    if sid_input != has_emb {
        return Err(speakers(if sid_input {
            "the graph takes a `sid` speaker input but has no speaker embedding `emb_g`".into()
        } else {
            "the graph has a speaker embedding `emb_g` but no `sid` speaker input".into()
        }));
    }
    // `num_speakers` 0 (some configs) is one speaker, as it always was.
    if piper.num_speakers.max(1) != dims.n_speakers {
        return Err(speakers(format!(
            "the config says {} speaker(s) but the model has {}",
            piper.num_speakers, dims.n_speakers
        )));
    }
    let extra = dims::check_weights(w, &dims).map_err(not_piper)?;
    for e in &extra {
        tracing::warn!("voice weight `{e}` is not used by Hark's model; kept anyway");
    }
    let config = piper.into_config(&name, dims, dtype, sha, &json_path)?;
    let n_weights = w.len();
    let dir = write_voice(voices_dir, &name, w, &config, dtype)?;
    Ok(ImportReport {
        dir,
        config,
        n_initializers: mapped.n_initializers,
        n_weights,
        renamed: mapped.renamed,
        dropped: mapped.dropped,
        extra,
    })
}

fn check_name(name: &str) -> Result<(), ImportError> {
    let bad = name.is_empty()
        || name.starts_with('.')
        || name.contains(['/', '\\', '\0'])
        || Path::new(name).components().count() != 1;
    if bad {
        return Err(ImportError::BadName(name.to_string()));
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// --- Piper's .onnx.json -------------------------------------------------------------------

#[derive(Deserialize)]
struct PiperJson {
    audio: PiperAudio,
    espeak: PiperEspeak,
    /// Piper's defaults when the config has no `inference` section.
    #[serde(default)]
    inference: Scales,
    phoneme_id_map: BTreeMap<String, Vec<i64>>,
    num_symbols: Option<usize>,
    #[serde(default = "one")]
    num_speakers: usize,
    /// Speaker name → id (a multi-speaker voice).
    #[serde(default)]
    speaker_id_map: BTreeMap<String, i64>,
    #[serde(default)]
    piper_version: String,
    /// Not written by Piper's exporter; training configs may carry it.
    hop_length: Option<usize>,
}

fn one() -> usize {
    1
}

#[derive(Deserialize)]
struct PiperAudio {
    sample_rate: u32,
    hop_length: Option<usize>,
}

#[derive(Deserialize)]
struct PiperEspeak {
    voice: String,
}

fn read_piper_json(path: &Path) -> Result<PiperJson, ImportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ImportError::Read {
        what: "the Piper config (.onnx.json; pass its path if it isn't next to the model)",
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|e| ImportError::BadJson {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

impl PiperJson {
    /// Combines the Piper config with the graph's dims, checking that they agree.
    fn into_config(
        self,
        name: &str,
        dims: crate::ModelDims,
        dtype: WeightDtype,
        sha: String,
        path: &Path,
    ) -> Result<VoiceConfig, ImportError> {
        let bad = |reason: String| ImportError::BadJson {
            path: path.to_path_buf(),
            reason,
        };
        let hop = dims.samples_per_frame();
        if let Some(h) = self
            .hop_length
            .or(self.audio.hop_length)
            .filter(|&h| h != hop)
        {
            return Err(bad(format!(
                "hop_length {h} but the decoder upsamples by {hop}"
            )));
        }
        if self.audio.sample_rate == 0 {
            return Err(bad("sample_rate is 0".into()));
        }
        let num_symbols = self.num_symbols.unwrap_or(dims.n_vocab);
        if num_symbols != dims.n_vocab {
            return Err(bad(format!(
                "num_symbols {num_symbols} but the model's embedding has {} rows",
                dims.n_vocab
            )));
        }
        if self.phoneme_id_map.is_empty() {
            return Err(bad("phoneme_id_map is empty".into()));
        }
        for (p, ids) in &self.phoneme_id_map {
            if let Some(id) = ids.iter().find(|&&i| i < 0 || i as usize >= dims.n_vocab) {
                return Err(bad(format!(
                    "phoneme {p:?} maps to id {id}, outside 0..{}",
                    dims.n_vocab
                )));
            }
        }
        let speakers = speaker_names(self.num_speakers, &self.speaker_id_map).map_err(bad)?;
        let inf = self.inference;
        Ok(VoiceConfig {
            format_version: format_version_for(self.num_speakers),
            name: name.to_string(),
            sample_rate: self.audio.sample_rate,
            hop_length: hop,
            espeak_voice: self.espeak.voice,
            phoneme_id_map: self.phoneme_id_map,
            inference: inf,
            num_speakers: self.num_speakers,
            speakers,
            num_symbols,
            architecture: Architecture::PiperVits,
            dims,
            weights_dtype: dtype.as_str().to_string(),
            source: VoiceSource {
                onnx_sha256: sha,
                piper_version: self.piper_version,
            },
        })
    }
}

/// The speakers' names in id order from Piper's `speaker_id_map` (a speaker it does not name
/// is called by its id); empty for a single-speaker voice, whose map is ignored.
fn speaker_names(n: usize, map: &BTreeMap<String, i64>) -> Result<Vec<String>, String> {
    if n <= 1 {
        return Ok(Vec::new());
    }
    let mut names: Vec<Option<String>> = vec![None; n];
    for (name, &id) in map {
        let slot = usize::try_from(id)
            .ok()
            .and_then(|i| names.get_mut(i))
            .ok_or_else(|| format!("speaker {name:?} has id {id}, outside 0..{n}"))?;
        if let Some(other) = slot.replace(name.clone()) {
            return Err(format!("speakers {other:?} and {name:?} both have id {id}"));
        }
        if name.trim().is_empty() {
            return Err(format!("speaker {id} has an empty name"));
        }
    }
    let names: Vec<String> = names
        .into_iter()
        .enumerate()
        .map(|(i, s)| s.unwrap_or_else(|| i.to_string()))
        .collect();
    // A name that is another speaker's id would make `--speaker 3` ambiguous.
    for (i, name) in names.iter().enumerate() {
        if let Ok(j) = name.parse::<usize>()
            && j != i
            && j < n
        {
            return Err(format!(
                "speaker {i} is named {name:?}, the id of another speaker"
            ));
        }
    }
    Ok(names)
}

// --- Writing ------------------------------------------------------------------------------

/// A tensor already encoded for safetensors.
struct Encoded {
    dtype: safetensors::Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl safetensors::View for &Encoded {
    fn dtype(&self) -> safetensors::Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

fn encode(name: &str, t: &Tensor, dtype: WeightDtype) -> Result<Encoded, ImportError> {
    let bytes = match dtype {
        WeightDtype::F32 => t.data.iter().flat_map(|v| v.to_le_bytes()).collect(),
        WeightDtype::F16 => {
            // f16 tops out at 65504: refuse rather than silently store infinities.
            if let Some(v) = t.data.iter().find(|v| v.abs() > f32::from(half::f16::MAX)) {
                return Err(ImportError::Dtype {
                    dtype: "f16",
                    reason: format!("`{name}` holds {v}, outside the f16 range; import as f32"),
                });
            }
            t.data
                .iter()
                .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
                .collect()
        }
    };
    let dtype = match dtype {
        WeightDtype::F32 => safetensors::Dtype::F32,
        WeightDtype::F16 => safetensors::Dtype::F16,
    };
    Ok(Encoded {
        dtype,
        shape: t.shape.clone(),
        bytes,
    })
}

/// Writes into a hidden temp folder in `voices_dir`, then renames it into place, so a crash
/// or error never leaves a half-written voice (the temp folder is removed on drop).
fn write_voice(
    voices_dir: &Path,
    name: &str,
    w: &BTreeMap<String, Tensor>,
    config: &VoiceConfig,
    dtype: WeightDtype,
) -> Result<PathBuf, ImportError> {
    let werr = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ImportError::Write { path, source }
    };
    std::fs::create_dir_all(voices_dir).map_err(werr(voices_dir))?;
    let tmp = tempfile::Builder::new()
        .prefix(".import-")
        .tempdir_in(voices_dir)
        .map_err(werr(voices_dir))?;
    let encoded = w
        .iter()
        .map(|(n, t)| Ok((n.as_str(), encode(n, t, dtype)?)))
        .collect::<Result<Vec<_>, ImportError>>()?;
    let meta = HashMap::from([
        ("format".to_string(), "hark-voice".to_string()),
        ("version".to_string(), config.format_version.to_string()),
    ]);
    let st =
        safetensors::serialize(encoded.iter().map(|(n, e)| (*n, e)), Some(meta)).map_err(|e| {
            ImportError::Write {
                path: tmp.path().join(WEIGHTS_FILE),
                source: std::io::Error::other(e.to_string()),
            }
        })?;
    drop(encoded);
    let json = serde_json::to_vec_pretty(config).map_err(|e| ImportError::Write {
        path: tmp.path().join(CONFIG_FILE),
        source: std::io::Error::other(e),
    })?;
    write_synced(&tmp.path().join(WEIGHTS_FILE), &st)?;
    write_synced(&tmp.path().join(CONFIG_FILE), &json)?;
    let dest = voices_dir.join(name);
    install(tmp, &dest, voices_dir)?;
    Ok(dest)
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), ImportError> {
    use std::io::Write;
    let werr = |source| ImportError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::File::create(path).map_err(werr)?;
    f.write_all(bytes).map_err(werr)?;
    f.sync_all().map_err(werr)
}

/// Moves the finished temp folder to `dest`. An existing voice is first moved aside into a
/// hidden temp folder and restored if the swap fails, so `dest` is always whole.
fn install(tmp: tempfile::TempDir, dest: &Path, voices_dir: &Path) -> Result<(), ImportError> {
    let werr = |source| ImportError::Write {
        path: dest.to_path_buf(),
        source,
    };
    let old = if dest.exists() {
        let aside = tempfile::Builder::new()
            .prefix(".replaced-")
            .tempdir_in(voices_dir)
            .map_err(werr)?;
        let parked = aside.path().join("voice");
        std::fs::rename(dest, &parked).map_err(werr)?;
        Some((aside, parked))
    } else {
        None
    };
    if let Err(e) = std::fs::rename(tmp.path(), dest) {
        if let Some((_, parked)) = &old {
            // Best effort: put the previous voice back before reporting.
            let _ = std::fs::rename(parked, dest);
        }
        return Err(werr(e));
    }
    // The temp path is gone now (renamed); disarm its cleanup. `old` is removed on drop.
    let _ = tmp.keep();
    drop(old);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_folder_names() {
        for ok in ["en_US-joe-medium", "a", "voice 2"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", ".hidden", "a/b", "../x", "/abs", "a\\b"] {
            assert!(
                matches!(check_name(bad), Err(ImportError::BadName(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn speaker_names_are_in_id_order() {
        let map = |v: &[(&str, i64)]| v.iter().map(|(s, i)| (s.to_string(), *i)).collect();
        assert_eq!(
            speaker_names(3, &map(&[("b", 1), ("c", 2), ("a", 0)])),
            Ok(vec!["a".into(), "b".into(), "c".into()])
        );
        // Unnamed speakers are called by their id; a single speaker has no list.
        assert_eq!(
            speaker_names(3, &map(&[("z", 2)])),
            Ok(vec!["0".into(), "1".into(), "z".into()])
        );
        assert_eq!(speaker_names(1, &map(&[("a", 0)])), Ok(vec![]));
        for bad in [
            map(&[("a", 3)]),
            map(&[("a", -1)]),
            map(&[("a", 0), ("b", 0)]),
            map(&[("2", 0)]),
            map(&[(" ", 0)]),
        ] {
            assert!(speaker_names(3, &bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn dtype_parses() {
        assert_eq!("F16".parse::<WeightDtype>(), Ok(WeightDtype::F16));
        assert_eq!("f32".parse::<WeightDtype>(), Ok(WeightDtype::F32));
        assert!("bf16".parse::<WeightDtype>().is_err());
    }

    #[test]
    fn f16_out_of_range_is_refused() {
        let t = Tensor::new(vec![2], vec![1.0, 1.0e6]);
        assert!(encode("x", &t, WeightDtype::F16).is_err());
        assert_eq!(
            encode("x", &t, WeightDtype::F32)
                .map(|e| e.bytes.len())
                .ok(),
            Some(8)
        );
    }

    #[test]
    fn install_replaces_existing_voice() {
        let root = tempfile::tempdir().expect("tempdir");
        let dest = root.path().join("v");
        std::fs::create_dir(&dest).expect("mkdir");
        std::fs::write(dest.join("old"), b"old").expect("write");
        let tmp = tempfile::tempdir_in(root.path()).expect("tmp");
        std::fs::write(tmp.path().join("new"), b"new").expect("write");
        install(tmp, &dest, root.path()).expect("install");
        assert!(dest.join("new").exists() && !dest.join("old").exists());
        let left: Vec<_> = std::fs::read_dir(root.path()).expect("ls").collect();
        assert_eq!(left.len(), 1, "only the voice folder remains");
    }
}
