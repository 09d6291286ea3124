//! Unit tests of the test-only `.npy` reader.
mod common;
