//! The fused CUDA engine (issue 3): the whole voice on an NVIDIA GPU through Hark's own
//! kernels (`kernels/*.cu`), compiled at run time by NVRTC with the voice's dimensions as
//! constants. Without a usable GPU every entry point returns [`GpuError`] instead of
//! panicking, and the engine falls back to the CPU reference.
//!
//! Precision: the front half (encoder, duration predictor) is f32; flow and decoder weights
//! are f16, their convolutions run on tensor cores with activations rounded to f16 and f32
//! accumulation; everything is f32 (FMA) when `HARK_CUDA_F32=1` (parity debugging).

pub mod backend;
pub mod compile;
pub mod device;
pub mod model;
pub mod persist;
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
    Model(#[from] crate::cpu::ModelError),
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

/// Whether backends warm up at start (`HARK_CUDA_WARMUP=0` skips it, e.g. under
/// compute-sanitizer, where every kernel runs hundreds of times slower).
pub fn warm_up_enabled() -> bool {
    std::env::var("HARK_CUDA_WARMUP").map_or(true, |v| v != "0")
}

/// How f16-weight convolutions run, from `HARK_CUDA_MMA`: 0 on the f32 FMA path; 1 on tensor
/// cores (`mma.sync`) with activations rounded to f16; 2 (the default) the same, except that
/// the flow keeps each activation as two f16 (value and rounding error) for f32-like inputs.
pub fn mma_mode() -> u8 {
    match std::env::var("HARK_CUDA_MMA").as_deref() {
        Ok("0") => 0,
        Ok("1") => 1,
        _ => 2,
    }
}

/// Whether f16-weight convolutions run on tensor cores (see [`mma_mode`]).
pub fn mma_enabled() -> bool {
    mma_mode() > 0
}
