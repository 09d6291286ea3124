//! Voices: Piper ONNX import, Hark's voice folder (voice.json + voice.safetensors), discovery,
//! the tensors weights are read into, and the architecture's dimensions.
pub mod config;
pub mod dims;
pub mod import;
pub mod mapping;
pub mod onnx;
pub mod scales;
pub mod store;
pub mod tensor;
pub mod weights;

pub use config::{Architecture, ModelDims, VoiceConfig};
pub use import::{ImportError, ImportReport, WeightDtype, import_piper, import_piper_report};
pub use scales::Scales;
pub use store::{DEFAULT_VOICE, Voice, VoiceError, VoiceInfo, list};
pub use weights::{Weights, WeightsError};
