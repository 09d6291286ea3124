//! Integration tests: text.
mod normalize_props;
mod normalize_table;
mod phonemes;
mod segment;
