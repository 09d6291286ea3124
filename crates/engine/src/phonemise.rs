//! The phonemiser loop of both synthesis paths: input → segments → phoneme ids, one sentence
//! at a time and only as they are asked for, so a text of any length is read as it is spoken
//! (the streaming engine's phonemiser thread, and [`crate::Synthesizer`]).

use hark_text::TextError;
use hark_text::segment::{Segmenter, Segments};
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
    /// The bytes of the input text it says: the sentence when its segment is the input
    /// verbatim, else (normalised text) its whole segment. Empty for `Input::Ids`.
    pub range: Range<usize>,
    /// Sentence number within the utterance: its noise seed is `seed + index`, so any
    /// sentence can be synthesised again alone.
    pub index: usize,
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
        Input::Text(text) => (Some((text, segmenter.iter(text, first))), None),
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
    segments: Option<(&'a str, Segments<'a>)>,
    ids: Option<&'a [i64]>,
    /// The sentences of the segment phonemised last.
    ready: VecDeque<Phonemes>,
    index: usize,
}

impl Sentences<'_> {
    fn number(&mut self, ids: Vec<i64>, range: Range<usize>) -> Phonemes {
        self.index += 1;
        Phonemes {
            ids,
            range,
            index: self.index - 1,
        }
    }
}

impl Iterator for Sentences<'_> {
    type Item = Result<Phonemes, TextError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(ids) = self.ids.take() {
            return Some(Ok(self.number(ids.to_vec(), 0..0)));
        }
        loop {
            if let Some(p) = self.ready.pop_front() {
                return Some(Ok(p));
            }
            let (text, segments) = self.segments.as_mut()?;
            let seg = segments.next()?;
            if seg.text.trim().is_empty() {
                continue;
            }
            let cfg = self.voice;
            let said =
                match hark_text::text_to_ids(&seg.text, &cfg.espeak_voice, &cfg.phoneme_id_map) {
                    Ok(s) => s,
                    Err(e) => return Some(Err(e)),
                };
            // Sub-ranges are only meaningful when the segment is the input verbatim (not
            // normalised); otherwise each sentence reports the whole segment.
            let verbatim = text.get(seg.range.clone()) == Some(seg.text.as_str());
            for s in said {
                // BOS, PAD, EOS alone: nothing audible to say.
                if s.ids.len() <= 3 {
                    continue;
                }
                let range = if verbatim {
                    seg.range.start + s.text_range.start..seg.range.start + s.text_range.end
                } else {
                    seg.range.clone()
                };
                let p = self.number(s.ids, range);
                self.ready.push_back(p);
            }
        }
    }
}
