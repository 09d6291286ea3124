//! Voices: Piper ONNX import, Hark's voice folder (voice.json + voice.safetensors), discovery.
pub mod config;
pub mod dims;
pub mod import;
pub mod mapping;
pub mod onnx;
pub mod store;
pub mod weights;

pub use config::{InferenceDefaults, ModelDims, VoiceConfig};
pub use import::{ImportError, ImportReport, WeightDtype, import_piper, import_piper_report};
pub use store::{DEFAULT_VOICE, Voice, VoiceError, VoiceInfo, list, voices_dir};
pub use weights::{Weights, WeightsError};
