//! Integration tests: engine.
mod bounded;
mod cli_speak;
mod streaming_engine;
