//! The fused CUDA engine (issue 3): the whole voice on an NVIDIA GPU through Hark's own
//! kernels (`kernels/*.cu`), compiled at run time by NVRTC with the voice's dimensions as
//! constants. Without a usable GPU every entry point returns [`GpuError`] instead of
//! panicking, and the engine falls back to the CPU reference.
//!
//! Precision: the front half (encoder, duration predictor) is f32; flow and decoder weights
//! are f16, their convolutions run on tensor cores with activations rounded to f16 and f32
//! accumulation; everything is f32 (FMA) with [`GpuOptions::all_f32`] (parity debugging).
//!
//! Layout: [`registry`] names every kernel once; the module cache (`modules.rs`) compiles
//! them ([`compile`]) once each and hands them out; [`stages`] holds one host file per kernel
//! file (its buffers, shared memory and launches); [`model`] orders the stages for one
//! utterance and captures windows into CUDA graphs (held in a capped [`graph_cache`]);
//! [`backend`] is the `Backend` over it, [`persist`] the persistent kernel; [`options`] the
//! switches all of them take. `hooks` (feature `test-hooks`, parity tests only) drives one
//! stage at a time.

pub mod backend;
pub mod compile;
pub mod device;
pub mod graph_cache;
#[cfg(feature = "test-hooks")]
pub mod hooks;
pub mod model;
pub(crate) mod modules;
pub mod options;
pub mod persist;
pub mod registry;
pub mod stages;
pub mod weights;

pub use backend::CudaBackend;
pub use model::GpuModel;
pub use modules::{Loaded, prepare_kernels};
pub use options::{GpuOptions, Mma};

#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("CUDA unavailable: {0}")]
    Unavailable(String),
    #[error("CUDA kernel compilation failed: {0}")]
    Compile(String),
    #[error("CUDA error: {0}")]
    Driver(String),
    #[error("voice weights: {0}")]
    Weights(String),
    #[error(transparent)]
    Model(#[from] crate::cpu::ModelError),
}

impl From<cudarc::driver::DriverError> for GpuError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        GpuError::Driver(e.to_string())
    }
}
