//! Audio output: WAV files and the default playback device.
pub mod playback;
pub mod wav;

pub use playback::{AudioError, Player};
pub use wav::{WavFormat, WavSink};
