//! The fused CUDA engine (issue 3): the whole voice on an NVIDIA GPU through Hark's own
//! kernels (`kernels/*.cu`), compiled at run time by NVRTC with the voice's dimensions as
//! constants. Without a usable GPU every entry point returns [`GpuError`] instead of
//! panicking, and the engine falls back to the CPU reference.
//!
//! Precision: the front half (encoder, duration predictor) is f32; flow and decoder weights
//! are f16 with f32 accumulation, or f32 when `HARK_CUDA_F32=1` (parity debugging).

pub mod backend;
pub mod compile;
pub mod device;
pub mod model;
pub mod weights;

pub use backend::CudaBackend;
pub use model::GpuModel;

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
    Model(#[from] crate::model::cpu::ModelError),
}

impl From<cudarc::driver::DriverError> for GpuError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        GpuError::Driver(e.to_string())
    }
}

/// Whether the all-f32 parity mode is requested (`HARK_CUDA_F32=1`).
pub fn f32_mode_requested() -> bool {
    std::env::var("HARK_CUDA_F32").is_ok_and(|v| v == "1")
}
