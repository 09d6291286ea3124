//! Integration tests: audio.
mod device_loss;
mod playback;
mod streaming_audio;
mod terminal_keys;

/// The one null sink of the session: every test that plays into it or records it takes this,
/// so that no test's speech lands in another's recording (tests run on parallel threads).
/// device_loss runs a PipeWire of its own and does not need it.
static SINK: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(crate) fn sink_lock() -> std::sync::MutexGuard<'static, ()> {
    SINK.lock().unwrap_or_else(|e| e.into_inner())
}
