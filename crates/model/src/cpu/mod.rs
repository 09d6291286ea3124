//! CPU f32 reference implementation of Piper's VITS, one function per stage, so that every
//! GPU kernel can be checked against its CPU twin stage by stage.
pub mod decoder;
pub mod direct;
pub mod duration;
pub mod durations;
pub mod encoder;
pub mod flow;
pub mod isa;
pub mod noise;
pub mod ops;
pub mod pipeline;
pub mod polyphase;
pub mod speaker;
pub mod spline;
pub mod team;
#[cfg(test)]
pub(crate) mod testutil;
mod tiles;
mod upsample;
pub mod vmath;
pub mod winograd;

use hark_voice::WeightsError;

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Weights(#[from] WeightsError),
    #[error("invalid model input: {0}")]
    Input(String),
    /// A cancellable computation was asked to stop (its result is no longer wanted).
    #[error("cancelled")]
    Cancelled,
}

/// Asked between the stages of a long computation; `true` abandons it with
/// [`ModelError::Cancelled`] (e.g. a streaming chunk whose audio was stopped).
pub type CancelFn<'a> = &'a (dyn Fn() -> bool + Sync + 'a);

/// Never cancels.
pub const NEVER: CancelFn<'static> = &|| false;

pub(crate) fn check_cancel(cancel: CancelFn) -> Result<()> {
    if cancel() {
        Err(ModelError::Cancelled)
    } else {
        Ok(())
    }
}

pub type Result<T> = std::result::Result<T, ModelError>;
