//! Text front-end: raw text → clauses → espeak-ng IPA → the voice's phoneme ids.
