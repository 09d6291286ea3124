//! The phonemiser loop of both synthesis paths: input → segments → phoneme ids, one sentence
//! at a time and only as they are asked for, so a text of any length is read as it is spoken
//! (the streaming engine's phonemiser thread, and [`crate::Synthesizer`]).

use hark_text::TextError;
use hark_text::segment::{Segment, Segmenter, Segments};
use hark_voice::VoiceConfig;
use std::collections::VecDeque;
use std::ops::Range;

/// What to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input<'a> {
    /// Text, segmented and phonemised.
    Text(&'a str),
    /// The voice's phoneme ids, spoken as they are (one sentence; no text front-end).
    Ids(&'a [i64]),
}

/// One sentence for the backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phonemes {
    pub ids: Vec<i64>,
    /// The bytes of the input text it says (through the normaliser's span map, so a sentence
    /// of normalised text points at the input it came from). Empty for `Input::Ids`.
    pub range: Range<usize>,
    /// Sentence number within the utterance: its noise seed is `seed + index`, so any
    /// sentence can be synthesised again alone.
    pub index: usize,
    /// Its words in order, each the input text it came from and the ids that say it (see
    /// [`WordIds`]). Empty for `Input::Ids`.
    pub words: Vec<WordIds>,
}

/// One word of a sentence as the input has it: a word of the normaliser's output (the
/// phonemiser's words, `hark_text::Word`) mapped back to the input, and consecutive words
/// from the same input merged ("three dollars and fifty cents" is one word, "$3.50").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WordIds {
    /// Byte range of the input text.
    pub range: Range<usize>,
    /// Range of [`Phonemes::ids`] that says it (empty if nothing does).
    pub ids: Range<usize>,
}

/// The input words of a sentence of segment `seg`.
fn input_words(seg: &Segment, words: &[hark_text::Word]) -> Vec<WordIds> {
    let mut out: Vec<WordIds> = Vec::with_capacity(words.len());
    for w in words {
        let range = seg.source_range(w.text.clone());
        match out.last_mut() {
            // From the same input (or overlapping it): one word.
            Some(last) if range.start < last.range.end || range == last.range => {
                last.range.end = last.range.end.max(range.end);
                last.ids.end = last.ids.end.max(w.ids.end);
            }
            _ => out.push(WordIds {
                range,
                ids: w.ids.clone(),
            }),
        }
    }
    out
}

/// The sentences of `input` with `voice`'s phonemes, numbered from `index`. `first`: the
/// start of an utterance (a short first segment). Sentences with nothing to say (only the
/// ids of BOS, PAD and EOS) are left out and not numbered. A segment espeak-ng fails on
/// yields its error, and the next call goes on with the next segment.
pub fn sentences<'a>(
    voice: &'a VoiceConfig,
    segmenter: &'a Segmenter,
    input: Input<'a>,
    first: bool,
    index: usize,
) -> Sentences<'a> {
    let (segments, ids) = match input {
        Input::Text(text) => (Some(segmenter.iter(text, first)), None),
        Input::Ids(ids) => (None, Some(ids)),
    };
    Sentences {
        voice,
        segments,
        ids,
        ready: VecDeque::new(),
        index,
    }
}

/// See [`sentences`].
pub struct Sentences<'a> {
    voice: &'a VoiceConfig,
    segments: Option<Segments<'a>>,
    ids: Option<&'a [i64]>,
    /// The sentences of the segment phonemised last.
    ready: VecDeque<Phonemes>,
    index: usize,
}

impl Sentences<'_> {
    fn number(&mut self, ids: Vec<i64>, range: Range<usize>, words: Vec<WordIds>) -> Phonemes {
        self.index += 1;
        Phonemes {
            ids,
            range,
            index: self.index - 1,
            words,
        }
    }
}

impl Iterator for Sentences<'_> {
    type Item = Result<Phonemes, TextError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(ids) = self.ids.take() {
            return Some(Ok(self.number(ids.to_vec(), 0..0, Vec::new())));
        }
        loop {
            if let Some(p) = self.ready.pop_front() {
                return Some(Ok(p));
            }
            let seg = self.segments.as_mut()?.next()?;
            if seg.text.trim().is_empty() {
                continue;
            }
            let cfg = self.voice;
            let said =
                match hark_text::text_to_ids(&seg.text, &cfg.espeak_voice, &cfg.phoneme_id_map) {
                    Ok(s) => s,
                    Err(e) => return Some(Err(e)),
                };
            for s in said {
                // BOS, PAD, EOS alone: nothing audible to say.
                if s.ids.len() <= 3 {
                    continue;
                }
                let range = seg.source_range(s.text_range.clone());
                let words = input_words(&seg, &s.words);
                let p = self.number(s.ids, range, words);
                self.ready.push_back(p);
            }
        }
    }
}
