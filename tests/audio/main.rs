//! Integration tests: audio.
mod device_loss;
mod playback;
mod streaming_audio;
