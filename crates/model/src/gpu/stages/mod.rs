//! The host side of each stage family, one file per kernel file in the top-level `kernels/`
//! (`encoder.rs` ↔ `encoder.cu`, …): the stage's kernels (from the [`super::registry`]), the
//! device buffers it writes, their shared-memory sizes and its launch sequence. The model
//! ([`super::model`]) allocates, orders the stages and keeps the utterance's state; the
//! persistent kernel runs the same stage bodies and takes the same buffers.

pub mod decoder;
pub mod duration;
pub mod encoder;
pub mod flow;

use super::GpuError;
use super::device::{DBuf, Gpu};
use super::weights::GpuWeights;
use hark_voice::ModelDims;

/// What every stage's launch reads: the device, the voice's dimensions, its weights on the
/// device, and the grid barrier of the cooperative launches.
pub(crate) struct Launch<'a> {
    pub gpu: &'a Gpu,
    pub dims: &'a ModelDims,
    pub w: &'a GpuWeights,
    pub bar: u64,
}

/// A zeroed device buffer of `n` 4-byte values (f32 or i32).
pub(crate) fn words(g: &Gpu, n: usize) -> Result<Option<DBuf>, GpuError> {
    g.alloc(n * 4).map(Some)
}
