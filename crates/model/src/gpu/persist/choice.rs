//! Which CUDA engine speaks when none is asked for: the one `hark bench --backend cuda`
//! measured faster for onset on this GPU (a cached result), else CUDA graphs.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The CUDA engine: per-chunk CUDA graphs, or one persistent kernel per session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuEngine {
    /// Whichever measured faster for onset on this GPU (`hark bench --backend cuda`), else
    /// graphs.
    #[default]
    Auto,
    Graph,
    Persistent,
}

impl GpuEngine {
    pub const ALL: [GpuEngine; 3] = [Self::Auto, Self::Graph, Self::Persistent];
}

/// One calibration: onset medians of both engines on a device, by this build.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub device: String,
    pub version: String,
    pub graph_onset_ms: f64,
    pub persistent_onset_ms: f64,
}

impl Calibration {
    pub fn faster(&self) -> GpuEngine {
        if self.persistent_onset_ms < self.graph_onset_ms {
            GpuEngine::Persistent
        } else {
            GpuEngine::Graph
        }
    }
}

fn path() -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("hark")
        .join("cuda-engine.json")
}

/// The cached calibration for `device` made by this version of Hark, if any.
pub fn cached(device: &str) -> Option<Calibration> {
    let c: Calibration = serde_json::from_slice(&std::fs::read(path()).ok()?).ok()?;
    (c.device == device && c.version == env!("CARGO_PKG_VERSION")).then_some(c)
}

/// Stores a calibration (best effort: a cache that cannot be written is not an error).
pub fn store(device: &str, graph_onset_ms: f64, persistent_onset_ms: f64) {
    let c = Calibration {
        device: device.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        graph_onset_ms,
        persistent_onset_ms,
    };
    let p = path();
    if let (Some(dir), Ok(json)) = (p.parent(), serde_json::to_vec_pretty(&c))
        && std::fs::create_dir_all(dir).is_ok()
    {
        let _ = std::fs::write(p, json);
    }
}

/// The engine `choice` means on `device`.
pub fn resolve(choice: GpuEngine, device: &str) -> GpuEngine {
    match choice {
        GpuEngine::Auto => cached(device).map_or(GpuEngine::Graph, |c| c.faster()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_faster_onset_wins_and_ties_keep_graphs() {
        let mut c = Calibration {
            device: "d".into(),
            version: "v".into(),
            graph_onset_ms: 5.0,
            persistent_onset_ms: 4.0,
        };
        assert_eq!(c.faster(), GpuEngine::Persistent);
        c.persistent_onset_ms = 5.0;
        assert_eq!(c.faster(), GpuEngine::Graph);
        assert_eq!(resolve(GpuEngine::Persistent, "d"), GpuEngine::Persistent);
        assert_eq!(resolve(GpuEngine::Graph, "d"), GpuEngine::Graph);
    }
}
