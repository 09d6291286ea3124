//! Audio output: WAV files, the simple blocking player, and the engine's streaming output.
pub mod out;
pub mod playback;
pub mod resample;
pub mod wav;

pub use out::{AudioSink, DeviceSink, MarkFn, NullSink, Transport};
pub use playback::{AudioError, Player};
pub use wav::{WavFormat, WavSink};
