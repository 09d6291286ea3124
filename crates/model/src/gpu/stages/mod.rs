//! The host side of each stage family, one file per kernel file in the top-level `kernels/`
//! (`encoder.rs` ↔ `encoder.cu`, …): the stage's kernels (from the [`super::registry`]), the
//! device buffers it writes, their shared-memory sizes and its launch sequence. The model
//! ([`super::model`]) allocates, orders the stages and keeps the utterance's state; the
//! persistent kernel runs the same stage bodies and takes the same buffers.

pub mod decoder;
pub mod duration;
pub mod encoder;
pub mod flow;
