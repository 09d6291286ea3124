//! Piper's VITS model on each backend: `cpu` is the f32 reference that every other backend
//! must match, `gpu` the CUDA engine (graphs and the persistent kernel), and `backend` the
//! interface the engine drives. `fault` (feature `fault-inject`, tests only) injects faults.
pub mod backend;
pub mod cpu;
#[cfg(feature = "fault-inject")]
pub mod fault;
pub mod gpu;
