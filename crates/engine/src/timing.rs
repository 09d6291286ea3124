//! Where each word and sentence is in the audio: from the model's durations (frames per
//! phoneme id, `hop` samples per frame), through the words the phonemiser carries along the
//! ids ([`WordIds`]), and through the speed stage ([`crate::tempo::Tempo`]). Both synthesis
//! paths report the same figures: [`crate::Synthesizer`] per sentence, the streaming engine
//! as `Event::Word` at the callback and in [`crate::Engine::timeline`].

use crate::phonemise::WordIds;
use serde::Serialize;
use std::ops::Range;

/// One word as heard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WordTiming {
    /// Byte range of the input text (the utterance's text for the streaming engine).
    pub range: Range<usize>,
    /// Samples (at the voice's rate) of the output: from the file's start for
    /// [`crate::Synthesizer`], from the utterance's first played sample for the engine.
    pub samples: Range<u64>,
}

/// One sentence (segment) as heard, with its words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SentenceTiming {
    /// Its number within the utterance (its seed offset).
    pub index: usize,
    /// Byte range of the input text.
    pub range: Range<usize>,
    /// Its samples, as for [`WordTiming::samples`].
    pub samples: Range<u64>,
    pub words: Vec<WordTiming>,
}

impl SentenceTiming {
    /// Sentence `index` (input text `range`) where it lies in the output (`samples`), with
    /// its `words` placed by `to_output` (a sample of the model's output for the sentence →
    /// the output sample it became, counted from the sentence's first).
    pub(crate) fn new(
        index: usize,
        range: Range<usize>,
        samples: Range<u64>,
        words: &[SpokenWord],
        to_output: impl Fn(u64) -> u64,
    ) -> Self {
        let len = samples.end - samples.start;
        let at = |model: u64| samples.start + to_output(model).min(len);
        Self {
            index,
            range,
            words: words
                .iter()
                .map(|w| WordTiming {
                    range: w.text.clone(),
                    samples: at(w.model.start)..at(w.model.end),
                })
                .collect(),
            samples,
        }
    }
}

/// A word of a sentence and where it is in the model's output for the sentence (before any
/// speed change).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SpokenWord {
    pub model: Range<u64>,
    /// Byte range of the input text.
    pub text: Range<usize>,
}

/// The sentence's words placed in the model's output: the frames of their ids times `hop`.
pub(crate) fn place_words(durations: &[usize], words: &[WordIds], hop: usize) -> Vec<SpokenWord> {
    word_samples(durations, words, hop)
        .into_iter()
        .zip(words)
        .map(|(model, w)| SpokenWord {
            model,
            text: w.range.clone(),
        })
        .collect()
}

/// Each word's samples in the model's output for the sentence: the frames of its ids times
/// `hop`.
fn word_samples(durations: &[usize], words: &[WordIds], hop: usize) -> Vec<Range<u64>> {
    let mut at = Vec::with_capacity(durations.len() + 1);
    let mut sum = 0u64;
    at.push(0);
    for &d in durations {
        sum += d as u64;
        at.push(sum);
    }
    let frame = |i: usize| at[i.min(at.len() - 1)] * hop as u64;
    words
        .iter()
        .map(|w| frame(w.ids.start)..frame(w.ids.end.max(w.ids.start)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_samples_sum_the_durations_of_their_ids() {
        let d = [2, 1, 3, 1, 4, 1, 2];
        let w = |ids: Range<usize>| WordIds { range: 0..0, ids };
        let got = word_samples(&d, &[w(2..4), w(4..6), w(6..6), w(6..9)], 10);
        assert_eq!(got, [30..70, 70..120, 120..120, 120..140]);
    }
}
