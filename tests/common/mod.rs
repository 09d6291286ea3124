//! Shared helpers for integration tests: finding generated data, reading the oracle's dumps.
#![allow(dead_code)]

pub mod npy;

use hark::model::tensor::Tensor;
use npy::Npy;
use std::path::{Path, PathBuf};

/// `$HARK_TEST_DATA`, default `tests/data/generated` (relative to the crate root).
pub fn test_data_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match std::env::var_os("HARK_TEST_DATA") {
        Some(p) => root.join(p),
        None => root.join("tests/data/generated"),
    }
}

/// One case of the oracle: its manifest entry and folder.
pub struct OracleCase {
    pub name: String,
    pub scales: [f32; 3],
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
        let dir = test_data_dir().join("oracle");
        let Ok(text) = std::fs::read_to_string(dir.join("manifest.json")) else {
            eprintln!("skipped: oracle data not found (run scripts/oracle.py)");
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
