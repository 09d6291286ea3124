//! Integration tests: sd_hark, the speech-dispatcher module. `module.rs` drives the binary
//! over its pipes as speech-dispatcher does (simulated audio, no server needed);
//! `dispatcher.rs` goes through Debian's real speech-dispatcher to the CI null sink
//! (`source scripts/start-audio.sh; source scripts/start-speechd.sh; HARK_AUDIO_TESTS=1`).
mod dispatcher;
mod install;
mod module;
mod sd;
