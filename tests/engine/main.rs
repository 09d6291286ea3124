//! Integration tests: engine.
mod bounded;
mod cli_speak;
mod espeak_isolation;
mod soak;
mod streaming_engine;
mod words_and_rates;
