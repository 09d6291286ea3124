//! Sentence navigation: previous/next/repeat sentence and back/forward by seconds, on the
//! utterance being heard. The engine thread keeps the recent sentences' audio ([`Kept`], as
//! it went into the speed stage), so a step back replays from memory: [`land`] says where a
//! step lands among the kept sentences and the one still being synthesised, or that it goes
//! past what is synthesised (then synthesis goes on at the next sentence boundary).

use crate::api::UtteranceId;
use crate::timing::SpokenWord;
use std::collections::VecDeque;
use std::ops::Range;

/// A navigation request, relative to what is being heard.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Nav {
    /// −1 the previous sentence, 0 the same one again, +1 the next.
    Sentence(i32),
    /// Seconds of speech at normal speed: back (< 0) or forward.
    Skip(f32),
}

/// What is being heard: the latest `Progress` and `Word` marks to reach the callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Heard {
    pub id: UtteranceId,
    pub sentence: Range<usize>,
    pub word: Option<Range<usize>>,
}

/// A sentence as [`land`] sees it: kept, or being synthesised (the last one).
pub(crate) struct Span<'a> {
    pub id: UtteranceId,
    pub range: &'a Range<usize>,
    pub words: &'a [SpokenWord],
    /// Model samples cut before its audio (the skipped lead-in).
    pub skipped: u64,
    /// Samples of its audio that are there (all of it, once synthesised).
    pub len: usize,
    /// How much faster than 1× its length scale made it.
    pub length_speed: f32,
}

impl Span<'_> {
    /// Where a model sample of the sentence is in its kept audio.
    fn at(&self, model: u64) -> usize {
        (model.saturating_sub(self.skipped) as usize).min(self.len)
    }

    /// The word that `pos` (a sample of its audio) falls in: its index and first sample
    /// (the sentence's start before its first word).
    fn word_at(&self, pos: usize) -> (usize, usize) {
        let n = self
            .words
            .partition_point(|w| self.at(w.model.start) <= pos);
        match n.checked_sub(1) {
            Some(k) => (k, self.at(self.words[k].model.start)),
            None => (0, 0),
        }
    }
}

/// Where a step lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Landing {
    /// Play sentence `from` of the spans from sample `offset` of its audio (the start of its
    /// word `word`), then the spans after it.
    Replay {
        from: usize,
        offset: usize,
        word: usize,
    },
    /// Past what is synthesised: drop the sentence in synthesis, go on with the next.
    NextBoundary,
    /// The sentence heard is not among the spans (nothing is playing, or it was dropped).
    Nowhere,
}

/// Where `nav` lands, from `heard`, among `spans` (the kept sentences in the order they were
/// synthesised, then the one in synthesis). Back never leaves the heard utterance: it stops
/// at its first kept sentence. `rate` is the voice's sample rate.
pub(crate) fn land(spans: &[Span], heard: &Heard, nav: Nav, rate: f64) -> Landing {
    let Some(p) = spans
        .iter()
        .position(|s| s.id == heard.id && *s.range == heard.sentence)
    else {
        return Landing::Nowhere;
    };
    let first = (0..=p)
        .rev()
        .take_while(|&i| spans[i].id == heard.id)
        .last()
        .unwrap_or(p);
    match nav {
        Nav::Sentence(d) => {
            let t = p as i64 + d as i64;
            if t >= spans.len() as i64 {
                return Landing::NextBoundary;
            }
            Landing::Replay {
                from: t.max(first as i64) as usize,
                offset: 0,
                word: 0,
            }
        }
        Nav::Skip(seconds) => {
            let s = &spans[p];
            let word = heard
                .word
                .as_ref()
                .and_then(|r| s.words.iter().position(|w| w.text == *r))
                .unwrap_or(0);
            let pos = s.words.get(word).map_or(0, |w| s.at(w.model.start));
            // Samples of speech at 1× still to step over.
            let need = seconds.abs() as f64 * rate;
            let (i, pos) = if seconds < 0.0 {
                back(spans, first, p, pos, need)
            } else {
                match forward(spans, p, pos, need) {
                    Some(at) => at,
                    None => return Landing::NextBoundary,
                }
            };
            let (word, offset) = spans[i].word_at(pos);
            Landing::Replay {
                from: i,
                offset,
                word,
            }
        }
    }
}

fn back(
    spans: &[Span],
    first: usize,
    mut i: usize,
    mut pos: usize,
    mut need: f64,
) -> (usize, usize) {
    loop {
        let speed = spans[i].length_speed.max(0.01) as f64;
        let have = pos as f64 * speed;
        if need <= have {
            return (i, pos - (need / speed) as usize);
        }
        need -= have;
        if i == first {
            return (i, 0);
        }
        i -= 1;
        pos = spans[i].len;
    }
}

fn forward(spans: &[Span], mut i: usize, mut pos: usize, mut need: f64) -> Option<(usize, usize)> {
    loop {
        let speed = spans[i].length_speed.max(0.01) as f64;
        let have = spans[i].len.saturating_sub(pos) as f64 * speed;
        if need < have {
            return Some((i, pos + (need / speed).ceil() as usize));
        }
        need -= have;
        i += 1;
        if i >= spans.len() {
            return None;
        }
        pos = 0;
    }
}

/// The recent sentences' audio, oldest first, at most `cap` samples in all (a sentence
/// longer than that is not kept, and the ones before it are dropped, so what is kept is
/// always a run of consecutive sentences).
pub(crate) struct Kept<T> {
    items: VecDeque<(T, usize)>,
    samples: usize,
    cap: usize,
}

/// Sentences kept at most, whatever their length.
const KEPT_SENTENCES: usize = 256;

impl<T> Kept<T> {
    pub fn new(cap: usize) -> Self {
        Self {
            items: VecDeque::new(),
            samples: 0,
            cap,
        }
    }

    /// Keeps `item` of `len` samples, dropping the oldest to stay within the cap.
    pub fn push(&mut self, item: T, len: usize) {
        if len > self.cap {
            self.clear();
            return;
        }
        while self.samples + len > self.cap || self.items.len() >= KEPT_SENTENCES {
            let Some((_, n)) = self.items.pop_front() else {
                break;
            };
            self.samples -= n;
        }
        self.samples += len;
        self.items.push_back((item, len));
    }

    pub fn clear(&mut self) {
        self.items.clear();
        self.samples = 0;
    }

    pub fn samples(&self) -> usize {
        self.samples
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter().map(|(t, _)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: f64 = 1000.0;

    fn words(starts: &[u64], first_char: usize) -> Vec<SpokenWord> {
        starts
            .iter()
            .enumerate()
            .map(|(k, &s)| SpokenWord {
                model: s..s + 100,
                text: first_char + k * 10..first_char + k * 10 + 5,
            })
            .collect()
    }

    struct Fixture {
        ranges: Vec<Range<usize>>,
        words: Vec<Vec<SpokenWord>>,
    }

    /// Utterance 1: sentences 0..100, 100..200, 200..300, each 1000 samples (1 s at
    /// `RATE`), words every 250 samples; then utterance 2's first sentence.
    fn fixture() -> Fixture {
        let ranges = vec![0..100, 100..200, 200..300, 0..50];
        let words = ranges
            .iter()
            .map(|r| words(&[0, 250, 500, 750], r.start))
            .collect();
        Fixture { ranges, words }
    }

    fn spans(f: &Fixture) -> Vec<Span<'_>> {
        (0..4)
            .map(|i| Span {
                id: if i < 3 { 1 } else { 2 },
                range: &f.ranges[i],
                words: &f.words[i],
                skipped: 0,
                len: 1000,
                length_speed: 1.0,
            })
            .collect()
    }

    fn heard(sentence: Range<usize>, word: Option<Range<usize>>) -> Heard {
        Heard {
            id: 1,
            sentence,
            word,
        }
    }

    fn replay(from: usize, offset: usize, word: usize) -> Landing {
        Landing::Replay { from, offset, word }
    }

    #[test]
    fn sentence_steps_land_on_whole_sentences_and_back_stays_in_the_utterance() {
        let f = fixture();
        let s = spans(&f);
        let h = heard(100..200, Some(120..125));
        assert_eq!(land(&s, &h, Nav::Sentence(-1), RATE), replay(0, 0, 0));
        assert_eq!(land(&s, &h, Nav::Sentence(0), RATE), replay(1, 0, 0));
        assert_eq!(land(&s, &h, Nav::Sentence(1), RATE), replay(2, 0, 0));
        let first = heard(0..100, None);
        assert_eq!(land(&s, &first, Nav::Sentence(-1), RATE), replay(0, 0, 0));
        // The next utterance's first sentence is the next sentence; past it, synthesis.
        let last = heard(200..300, None);
        assert_eq!(land(&s, &last, Nav::Sentence(1), RATE), replay(3, 0, 0));
        let other = Heard {
            id: 2,
            sentence: 0..50,
            word: None,
        };
        assert_eq!(
            land(&s, &other, Nav::Sentence(1), RATE),
            Landing::NextBoundary
        );
        // Back from the next utterance's first sentence stays in it.
        assert_eq!(land(&s, &other, Nav::Sentence(-1), RATE), replay(3, 0, 0));
        assert_eq!(
            land(&s, &heard(5..6, None), Nav::Sentence(-1), RATE),
            Landing::Nowhere
        );
    }

    #[test]
    fn skips_count_seconds_from_the_word_heard_and_snap_to_a_word_start() {
        let f = fixture();
        let s = spans(&f);
        // Heard: sentence 2's third word (sample 500). Back 0.6 s: sentence 1, sample 900,
        // in its fourth word (from 750).
        let h = heard(200..300, Some(220..225));
        assert_eq!(land(&s, &h, Nav::Skip(-0.6), RATE), replay(1, 750, 3));
        // Back further than the utterance holds: its start.
        assert_eq!(land(&s, &h, Nav::Skip(-60.0), RATE), replay(0, 0, 0));
        // Forward 0.3 s: sample 800, the fourth word.
        assert_eq!(land(&s, &h, Nav::Skip(0.3), RATE), replay(2, 750, 3));
        // Forward 0.6 s crosses into the next sentence (sample 100, its first word).
        assert_eq!(land(&s, &h, Nav::Skip(0.6), RATE), replay(3, 0, 0));
        assert_eq!(land(&s, &h, Nav::Skip(5.0), RATE), Landing::NextBoundary);
    }

    #[test]
    fn a_faster_length_scale_holds_more_speech_per_sample() {
        let f = fixture();
        let mut s = spans(&f);
        s[1].length_speed = 2.0;
        // Back 0.6 s at 1× from sentence 2's start: 300 samples of sentence 1's audio at 2×,
        // sample 700, in its third word.
        let h = heard(200..300, None);
        assert_eq!(land(&s, &h, Nav::Skip(-0.6), RATE), replay(1, 500, 2));
        assert_eq!(land(&s, &h, Nav::Skip(-1.4), RATE), replay(1, 250, 1));
    }

    #[test]
    fn kept_audio_stays_within_its_cap() {
        let mut k = Kept::new(1000);
        for i in 0..10 {
            k.push(i, 300);
            assert!(k.samples() <= 1000);
        }
        assert_eq!(k.iter().copied().collect::<Vec<_>>(), [7, 8, 9]);
        // Too long to keep: nothing before it is kept either (the run stays unbroken).
        k.push(10, 2000);
        assert_eq!((k.samples(), k.iter().count()), (0, 0));
    }
}
