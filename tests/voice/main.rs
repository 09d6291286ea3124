//! Integration tests: voice.
mod catalogue;
mod voice_import;
