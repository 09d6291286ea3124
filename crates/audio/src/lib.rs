//! Audio out: WAV files, and the engine's streaming output on the sound card (cpal, rubato, a
//! lock-free ring to a callback that never blocks) or a simulated device. It implements the
//! output interface that `hark_engine::output` defines.
mod callback;
mod clock;
pub mod out;
pub mod resample;
pub mod wav;

pub use hark_engine::output::{AudioError, Output};
pub use out::{DEFAULT_BUFFER_MS, DeviceSink, device, simulated, simulated_at};
pub use wav::{WavFormat, WavSink, remove_partial_on_signals};
