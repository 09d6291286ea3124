//! Hark: a read-aloud engine for a Piper (VITS) voice.
//!
//! Data flows one way through the modules:
//! `text` (normalise, phonemise) → `voice` (config, weights) → `model` (CPU reference, GPU)
//! → `engine` (streaming) → `audio` (WAV, playback) → `sources` (live captions). The `cli`
//! module wires them into the `hark` command; the desktop app (`src-tauri/`) uses the same API.

pub mod alloc;
pub mod audio;
pub mod cli;
pub mod engine;
pub mod model;
pub mod sources;
pub mod text;
pub mod voice;
