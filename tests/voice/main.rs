//! Integration tests: voice.
mod voice_import;
