//! Integration tests: audio.
mod device_loss;
mod playback;
mod streaming_audio;
mod terminal_keys;

/// The one null sink of the session: every test that plays into it or records it takes this,
/// so that no test's speech lands in another's recording (tests run on parallel threads).
/// device_loss, which runs a PipeWire of its own, takes it too: a second real-time sound server
/// and a second speaking engine beside a recording made the 2-core runner's servers drop whole
/// cycles (stop 34: in 5 of 5 runs of this binary with the tests in parallel, a check failed all
/// 3 attempts; one by one, all passed at the first attempt).
static SINK: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(crate) fn sink_lock() -> std::sync::MutexGuard<'static, ()> {
    SINK.lock().unwrap_or_else(|e| e.into_inner())
}
