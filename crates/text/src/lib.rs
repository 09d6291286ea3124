//! Text front-end: raw text → clauses → espeak-ng IPA → the voice's phoneme ids.

mod assess;
pub mod chapters;
mod clause;
pub mod espeak;
pub mod espeak_child;
pub mod normalize;
pub mod phonemes;
pub mod segment;
pub mod ssml;
mod words;

pub use assess::{MIN_ASSESSED_CHARS, MIN_WORD_SHARE, Verdict, assess};
pub use espeak::espeak_version;
pub use phonemes::{
    MAX_SENTENCE_PHONEMES, Sentence, Word, phoneme_ids, phonemize, split_sentences, text_to_ids,
};

/// Errors of the text front-end. Messages never contain the user's text.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TextError {
    /// espeak-ng could not start (missing data files, wrong library).
    #[error("espeak-ng failed to initialise: {0}")]
    EspeakInit(String),
    /// The espeak-ng voice could not be selected.
    #[error("espeak-ng voice {voice:?} could not be selected: {message}")]
    Voice { voice: String, message: String },
    /// espeak-ng reported a problem while phonemising.
    #[error("espeak-ng: {0}")]
    Espeak(String),
    /// espeak-ng, in its child process, died or hung on this text (it is restarted for the
    /// next): the text is lost, nothing else.
    #[error("{0}")]
    EspeakCrashed(String),
    /// The text still contained NUL after sanitising (a bug).
    #[error("text contains a NUL character")]
    InteriorNul,
}
