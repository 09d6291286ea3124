//! Speed and pitch: the engine setting ([`Settings::speed`](crate::Settings), a multiple of
//! normal speed, and [`Settings::pitch`](crate::Settings), semitones), split between the
//! model's length scale and a time-scale stage on the PCM ([`Tempo`], libsonic).
//!
//! The length scale slows speech down and speeds it up only so far: durations are whole
//! frames (`ceil(exp(logw) · length_scale)`, at least one per phoneme id, and half of the ids
//! are pads), so a length scale of 0.5 makes speech only ≈ 1.58× as fast, and no length scale
//! reaches 2×. [`split`] asks the length scale for what it does cleanly, through a measured
//! curve of real speed against length scale ([`LENGTH_CURVE`]), and sonic for the rest. The
//! curve only chooses the length scale: how much faster it really made a sentence comes from
//! the sentence's own durations at 1× ([`length_speed_of`], from the model's logw), so sonic
//! makes each sentence `1/speed` as long as at 1× (pauses included), and [`Tempo`] holds
//! sonic to the length it was asked for. At speed 1 and pitch 0 nothing changes: the length
//! scale is the voice's own and no sample goes through sonic.

mod sonic;
mod split;
mod stage;

pub use split::{
    LENGTH_CURVE, LENGTH_FACTOR_MIN, PITCH_MAX, SPEED_MAX, SPEED_MIN, Split, clamp_speed,
    length_speed, length_speed_of, pitch_factor, split,
};
pub use stage::Tempo;
