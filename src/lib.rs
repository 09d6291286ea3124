//! Hark: a read-aloud engine for a Piper (VITS) voice.
//!
//! Data flows one way through the modules:
//! `text` (normalise, phonemise) → `voice` (config, weights) → `model` (CPU reference, GPU)
//! → `audio` (WAV, playback). The `cli` module wires them into the `hark` command.

pub mod audio;
pub mod cli;
pub mod engine;
pub mod model;
pub mod text;
pub mod voice;
