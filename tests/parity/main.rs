//! Integration tests: parity. The backend table (`backend_ops`: every stage case on every
//! backend present against the CPU reference), focused GPU tests (`kernels`, `persistent`),
//! and the CPU reference against onnxruntime's dumps (`parity_front`, `parity_back`).
mod backend_ops;
mod common;
mod kernels;
mod parity_back;
mod parity_front;
mod parity_speakers;
mod persistent;
