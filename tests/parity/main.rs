//! Integration tests: parity.
mod gpu_parity;
mod parity_back;
mod parity_front;
