//! Integration tests: engine.
mod cli_speak;
mod streaming_engine;
mod words_and_rates;
