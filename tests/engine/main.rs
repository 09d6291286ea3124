//! Integration tests: engine.
mod bounded;
mod captions;
mod cli_speak;
mod cpu_bench;
mod espeak_isolation;
mod export;
mod languages;
mod navigation;
mod soak;
mod ssml_speak;
mod streaming_engine;
mod words_and_rates;
