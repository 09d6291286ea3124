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

/// The speed and pitch a run is said at: the settings' with the run's own (SSML `prosody`:
/// its rate multiplies the speed, its pitch adds semitones), within the engine's limits.
pub(crate) fn for_run(speed: f32, pitch: f32, prosody: &hark_text::ssml::Prosody) -> (f32, f32) {
    let rate = if prosody.rate.is_finite() && prosody.rate > 0.0 {
        prosody.rate
    } else {
        1.0
    };
    let pitch = pitch
        + if prosody.pitch.is_finite() {
            prosody.pitch
        } else {
            0.0
        };
    (
        clamp_speed(speed * rate),
        pitch.clamp(-PITCH_MAX, PITCH_MAX),
    )
}

/// A whole clip `semitones` higher, as long as it was (sd_hark's keys at another pitch, a
/// capital letter's rise).
pub fn pitched(samples: &[f32], rate: u32, semitones: f32) -> Vec<f32> {
    if pitch_factor(semitones) == 1.0 {
        return samples.to_vec();
    }
    let mut stage = Tempo::new(rate);
    stage.aim(1.0, semitones, 1.0);
    let mut out = Vec::with_capacity(samples.len() + 1024);
    stage.process(samples, &mut out);
    stage.finish(&mut out);
    out
}
