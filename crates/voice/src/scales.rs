//! Piper's three inference scales, and their defaults (written here once).

use serde::{Deserialize, Serialize};

/// Piper's three inference scales.
/// A missing field takes Piper's default (as Piper's own config reader does).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Scales {
    /// Prior noise (variation in voice quality); 0 makes synthesis deterministic.
    pub noise_scale: f32,
    /// Duration multiplier: > 1 is slower speech.
    pub length_scale: f32,
    /// Duration noise (variation in rhythm).
    pub noise_w: f32,
}

impl Scales {
    /// Piper's defaults, used when a voice's config has no `inference` section.
    pub const PIPER: Scales = Scales {
        noise_scale: 0.667,
        length_scale: 1.0,
        noise_w: 0.8,
    };
}

impl Default for Scales {
    fn default() -> Self {
        Self::PIPER
    }
}
