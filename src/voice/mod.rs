//! Voices: Piper ONNX import, Hark's voice folder (voice.json + voice.safetensors), discovery.
pub mod config;
pub mod weights;

pub use config::{InferenceDefaults, ModelDims, VoiceConfig};
pub use weights::{Weights, WeightsError};
