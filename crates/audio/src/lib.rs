//! Audio out: files (WAV, FLAC, Ogg Opus, MP3; subtitles beside them), and the engine's streaming output on the sound card (cpal, rubato, a
//! lock-free ring to a callback that never blocks) or a simulated device. It implements the
//! output interface that `hark_engine::output` defines.
mod callback;
mod clock;
pub mod export;
pub mod out;
mod partial;
pub mod resample;
pub mod wav;

pub use export::{Encoder, ExportError, ExportFormat};
pub use hark_engine::output::{AudioError, Output};
pub use out::{DEFAULT_BUFFER_MS, DeviceSink, device, device_tapped, simulated, simulated_at};
pub use partial::remove_partial_on_signals;
pub use wav::{WavFormat, WavSink};
