//! The VITS model. `cpu` is the f32 reference that every other backend must match.
pub mod cpu;
pub mod tensor;
