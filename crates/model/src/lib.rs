//! Piper's VITS model on each backend: `cpu` is the f32 reference that every other backend
//! must match, `gpu` the CUDA engine (graphs and the persistent kernel), and `backend` the
//! interface the engine drives.
pub mod backend;
pub mod cpu;
pub mod gpu;
