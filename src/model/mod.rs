//! The VITS model. `cpu` is the f32 reference that every other backend must match.
pub mod backend;
pub mod cpu;
pub mod gpu;
pub mod tensor;

use serde::{Deserialize, Serialize};

/// Piper's three inference scales.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scales {
    /// Prior noise (variation in voice quality); 0 makes synthesis deterministic.
    pub noise_scale: f32,
    /// Duration multiplier: > 1 is slower speech.
    pub length_scale: f32,
    /// Duration noise (variation in rhythm).
    pub noise_w: f32,
}

impl From<crate::voice::InferenceDefaults> for Scales {
    fn from(d: crate::voice::InferenceDefaults) -> Self {
        Self {
            noise_scale: d.noise_scale,
            length_scale: d.length_scale,
            noise_w: d.noise_w,
        }
    }
}
