//! The phonemiser loop of both synthesis paths: input → segments → phoneme ids, one sentence
//! at a time and only as they are asked for, so a text of any length is read as it is spoken
//! (the streaming engine's phonemiser thread, and [`crate::Synthesizer`]).

use hark_text::TextError;
use hark_text::segment::{Segment, Segmenter, Segments};
use hark_text::ssml::{Document, Item, Prosody};
use hark_voice::VoiceConfig;
use std::collections::VecDeque;
use std::ops::Range;

/// What to speak.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Input<'a> {
    /// Text, segmented and phonemised.
    Text(&'a str),
    /// The voice's phoneme ids, spoken as they are (one sentence; no text front-end).
    Ids(&'a [i64]),
    /// An SSML document (`hark_text::ssml`): text runs with their prosody, IPA runs as ids,
    /// breaks as silence, marks as `Event::Mark`.
    Document(&'a Document),
}

/// One sentence for the backend.
#[derive(Clone, Debug, PartialEq)]
pub struct Phonemes {
    pub ids: Vec<i64>,
    /// The bytes of the input text it says (through the normaliser's span map, so a sentence
    /// of normalised text points at the input it came from). Empty for `Input::Ids`.
    pub range: Range<usize>,
    /// Sentence number within the utterance: its noise seed is `seed + index`, so any
    /// sentence can be synthesised again alone.
    pub index: usize,
    /// How it is said (a document's prosody; neutral otherwise).
    pub prosody: Prosody,
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

/// One piece of an utterance, in order: a sentence, a break, or a mark.
#[derive(Clone, Debug, PartialEq)]
pub enum Piece {
    Speech(Phonemes),
    Silence { ms: u32 },
    Mark(String),
}

/// The pieces of `input`: its sentences ([`sentences`]) and, for a document, its breaks
/// and marks in order. Text runs of a document are segmented one after another (a mark
/// between two runs cuts the text there), IPA runs are mapped to ids directly.
pub fn pieces<'a>(
    voice: &'a VoiceConfig,
    segmenter: &'a Segmenter,
    input: Input<'a>,
    first: bool,
    index: usize,
) -> Pieces<'a> {
    let (doc, inner) = match input {
        Input::Document(d) => (Some(d), None),
        other => (None, Some(sentences(voice, segmenter, other, first, index))),
    };
    Pieces {
        voice,
        segmenter,
        doc,
        next_item: 0,
        inner,
        prosody: Prosody::NEUTRAL,
        first,
        index,
    }
}

/// See [`pieces`].
pub struct Pieces<'a> {
    voice: &'a VoiceConfig,
    segmenter: &'a Segmenter,
    doc: Option<&'a Document>,
    next_item: usize,
    inner: Option<Sentences<'a>>,
    /// The prosody of the text run `inner` reads.
    prosody: Prosody,
    first: bool,
    index: usize,
}

impl Iterator for Pieces<'_> {
    type Item = Result<Piece, TextError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(inner) = self.inner.as_mut() {
                match inner.next() {
                    Some(Ok(mut p)) => {
                        p.prosody = self.prosody;
                        self.index = p.index + 1;
                        return Some(Ok(Piece::Speech(p)));
                    }
                    Some(Err(e)) => return Some(Err(e)),
                    None => self.inner = None,
                }
            }
            let doc = self.doc?;
            let item = doc.items.get(self.next_item)?;
            self.next_item += 1;
            match item {
                Item::Text { text, prosody } => {
                    if text.trim().is_empty() {
                        continue;
                    }
                    self.prosody = *prosody;
                    let input = Input::Text(text);
                    self.inner = Some(sentences(
                        self.voice,
                        self.segmenter,
                        input,
                        self.first,
                        self.index,
                    ));
                    self.first = false;
                }
                Item::Ipa { ipa, prosody } => {
                    let chars: Vec<char> = ipa.chars().filter(|c| *c != '\n').collect();
                    let (ids, _) = hark_text::phoneme_ids(&chars, &self.voice.phoneme_id_map);
                    // BOS, PAD, EOS alone: nothing to say.
                    if ids.len() <= 3 {
                        continue;
                    }
                    self.index += 1;
                    self.first = false;
                    return Some(Ok(Piece::Speech(Phonemes {
                        ids,
                        range: 0..0,
                        index: self.index - 1,
                        prosody: *prosody,
                        words: Vec::new(),
                    })));
                }
                Item::Break { ms } => return Some(Ok(Piece::Silence { ms: *ms })),
                Item::Mark { name } => return Some(Ok(Piece::Mark(name.clone()))),
            }
        }
    }
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
        // Sentences only; `pieces` reads a document with its breaks and marks.
        Input::Document(_) => (None, None),
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
            prosody: Prosody::NEUTRAL,
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
