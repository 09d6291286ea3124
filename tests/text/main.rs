//! Integration tests: text.
mod languages;
mod normalize_props;
mod normalize_table;
mod phonemes;
mod segment;
