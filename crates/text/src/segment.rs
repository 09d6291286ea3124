//! The segmenter of both synthesis paths: normalised text cut into sentences, long sentences
//! cut at clause boundaries, and a short first segment for a fast onset ([`segments`]); or,
//! with normalisation off, raw sentences as espeak-ng reads them (`raw.rs`). [`Segmenter`]
//! picks one and reads a text of any length a window at a time ([`Segmenter::iter`]), so
//! the memory it holds does not grow with the text (docs/RELIABILITY.md).
//!
//! Cutting the *normalised* text is what keeps it from being fooled: abbreviations, decimals,
//! initials, URLs and mid-sentence ellipses no longer contain a full stop there (the
//! normaliser decided), so every remaining `.` `?` `!` before a space is a sentence end.
//! Cuts are made only between normaliser pieces, so each segment maps back to whole input
//! characters.

use std::collections::VecDeque;
use std::ops::Range;

use serde::{Deserialize, Serialize};

mod raw;

use super::normalize::{NormalizeOptions, Normalized, Span, normalize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SegmentOptions {
    pub normalize: NormalizeOptions,
    /// Longest segment, in characters of normalised text (≈ phonemes), before it is cut at a
    /// clause boundary, or failing that between words.
    pub max_chars: usize,
    /// Budget for the first segment: a long first sentence is cut at its first clause boundary
    /// (or between words) so audio starts quickly.
    pub first_max_chars: usize,
}

impl Default for SegmentOptions {
    fn default() -> Self {
        Self {
            normalize: NormalizeOptions::default(),
            max_chars: 220,
            first_max_chars: 60,
        }
    }
}

/// One piece to synthesise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Byte range in the original text. Ranges are in order and tile the text from 0 to its
    /// end (whitespace and silent characters go with the segment before them).
    pub range: Range<usize>,
    /// The text to phonemise (normalised, unless the segmenter sends raw text).
    pub text: String,
    /// Where the pieces of `text` came from: `out` is a byte range of `text`, `src` one of the
    /// original text, in order (the normaliser's span map for this segment; for raw text one
    /// span per whitespace-separated token).
    pub spans: Vec<Span>,
}

impl Segment {
    /// The original text's byte range that produced bytes `out` of [`Segment::text`]: the
    /// union of the spans it touches (a word of "three dollars" gives all of "$3"). Empty,
    /// where the next piece starts, when no span does.
    pub fn source_range(&self, out: Range<usize>) -> Range<usize> {
        source_of(&self.spans, out)
    }
}

/// The source range of output bytes `out` through `spans` (see [`Segment::source_range`]).
fn source_of(spans: &[Span], out: Range<usize>) -> Range<usize> {
    let first = spans.partition_point(|s| s.out.end <= out.start);
    let last = spans.partition_point(|s| s.out.start < out.end);
    if first >= last {
        let at = spans
            .get(first)
            .map_or_else(|| spans.last().map_or(0, |s| s.src.end), |s| s.src.start);
        return at..at;
    }
    let (a, b) = (&spans[first], &spans[last - 1]);
    a.src.start.min(b.src.start)..a.src.end.max(b.src.end)
}

/// The spans of output bytes `out`, relative to `out.start`.
fn spans_within(spans: &[Span], out: Range<usize>) -> Vec<Span> {
    let first = spans.partition_point(|s| s.out.end <= out.start);
    spans[first..]
        .iter()
        .take_while(|s| s.out.start < out.end)
        .map(|s| Span {
            out: s.out.start.max(out.start) - out.start..s.out.end.min(out.end) - out.start,
            src: s.src.clone(),
        })
        .collect()
}

/// Words before which a long clause may be cut.
const CONJUNCTIONS: &[&str] = &[
    "and", "but", "or", "so", "because", "which", "while", "although", "though", "whereas",
    "unless", "until", "when", "where", "yet", "since", "if",
];

/// Normalise and segment `text`, as [`Segmenter::segments`] does (a window at a time).
pub fn segments(text: &str, opts: &SegmentOptions) -> Vec<Segment> {
    Segmenter {
        normalize: true,
        options: opts.clone(),
    }
    .segments(text, true)
}

/// Segment already-normalised text; `input_len` is the length of the original text.
pub fn segments_of(n: &Normalized, input_len: usize, opts: &SegmentOptions) -> Vec<Segment> {
    cut_normalized(n, input_len, opts, true)
}

/// [`segments_of`], with the short first segment only when `first`.
fn cut_normalized(
    n: &Normalized,
    input_len: usize,
    opts: &SegmentOptions,
    mut first: bool,
) -> Vec<Segment> {
    let out = n.text.as_str();
    let mut cuts: Vec<usize> = Vec::new();
    for sentence in sentences(n) {
        let mut start = sentence.start;
        while start < sentence.end {
            let budget = if first {
                opts.first_max_chars
            } else {
                opts.max_chars
            }
            .max(8);
            let rest = &out[start..sentence.end];
            if rest.chars().nth(budget).is_none() {
                break;
            }
            let cut = if first {
                first_clause(n, start, sentence.end, budget)
            } else {
                clause_cut(n, start, sentence.end, budget)
            };
            match cut {
                Some(c) if c > start && c < sentence.end => {
                    cuts.push(c);
                    start = c;
                    first = false;
                }
                _ => break,
            }
        }
        first = false;
        cuts.push(sentence.end);
    }

    let mut segs = Vec::new();
    let mut a = 0;
    for &b in &cuts {
        let text = out[a..b].trim();
        if text.chars().any(char::is_alphabetic) {
            let lead = out[a..b].len() - out[a..b].trim_start().len();
            let range = a + lead..a + lead + text.len();
            let src = n.source_range(range.clone());
            segs.push((src.start, text.to_string(), spans_within(&n.spans, range)));
        }
        a = b;
    }
    // Tile the input: each segment runs to the start of the next.
    let mut result: Vec<Segment> = Vec::with_capacity(segs.len());
    let count = segs.len();
    let mut prev = 0;
    for k in 0..count {
        let start = if k == 0 {
            0
        } else {
            segs[k].0.clamp(prev, input_len)
        };
        let end = if k + 1 == count {
            input_len
        } else {
            segs[k + 1].0.clamp(start, input_len)
        };
        prev = end;
        result.push(Segment {
            range: start..end,
            text: std::mem::take(&mut segs[k].1),
            spans: std::mem::take(&mut segs[k].2),
        });
    }
    result
}

/// Sentence ranges of the output: after `.` `?` `!` and a space.
fn sentences(n: &Normalized) -> Vec<Range<usize>> {
    let b = n.text.as_bytes();
    let mut v = Vec::new();
    let mut start = 0;
    for k in 0..b.len() {
        if matches!(b[k], b'.' | b'?' | b'!')
            && b.get(k + 1) == Some(&b' ')
            && n.is_piece_boundary(k + 2)
        {
            v.push(start..k + 2);
            start = k + 2;
        }
    }
    if start < b.len() {
        v.push(start..b.len());
    }
    v
}

/// A possible cut: byte offset of a word start, its char offset and word count from the
/// segment start, and what precedes it.
#[derive(Debug, Clone, Copy)]
struct Cand {
    at: usize,
    chars: usize,
    words: usize,
    kind: Cut,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    Clause,
    Conjunction,
    Space,
}

/// Word starts after `start` that are piece boundaries, scanning no further than `budget`
/// characters, plus the first one beyond it (a fallback for one very long word). Bounded, so
/// segmenting stays linear.
fn candidates(n: &Normalized, start: usize, end: usize, budget: usize) -> Vec<Cand> {
    let text = &n.text[..end];
    let out = text.as_bytes();
    let mut v = Vec::new();
    let mut words = 0;
    for (count, (off, ch)) in text[start..].char_indices().enumerate().skip(1) {
        let k = start + off;
        if out[k - 1] != b' ' || ch == ' ' {
            continue;
        }
        words += 1;
        if !n.is_piece_boundary(k) {
            continue;
        }
        let kind = if k >= 2 && matches!(out[k - 2], b',' | b';' | b':') {
            Cut::Clause
        } else {
            let word_end = text[k..]
                .find(|c: char| !c.is_ascii_alphabetic())
                .map_or(end, |e| k + e);
            if CONJUNCTIONS.contains(&&text[k..word_end]) {
                Cut::Conjunction
            } else {
                Cut::Space
            }
        };
        v.push(Cand {
            at: k,
            chars: count,
            words,
            kind,
        });
        if count > budget {
            break;
        }
    }
    v
}

/// For a long sentence: the last clause mark within the budget (if it is not too early),
/// else the last conjunction, else the last word start.
fn clause_cut(n: &Normalized, start: usize, end: usize, budget: usize) -> Option<usize> {
    let all = candidates(n, start, end, budget);
    let within: Vec<&Cand> = all.iter().filter(|c| c.chars <= budget).collect();
    let early = budget / 3;
    let last = |kind: Cut| {
        within
            .iter()
            .rev()
            .find(|c| c.kind == kind && c.chars >= early)
            .map(|c| c.at)
    };
    last(Cut::Clause)
        .or_else(|| last(Cut::Conjunction))
        .or_else(|| within.last().map(|c| c.at))
        .or_else(|| all.first().map(|c| c.at))
}

/// For the first sentence: its first clause boundary within the budget, after at least two
/// words; else the last word start within the budget.
fn first_clause(n: &Normalized, start: usize, end: usize, budget: usize) -> Option<usize> {
    let all = candidates(n, start, end, budget);
    all.iter()
        .find(|c| c.kind != Cut::Space && c.words >= 2 && c.chars <= budget)
        .or_else(|| all.iter().rev().find(|c| c.chars <= budget))
        .or_else(|| all.first())
        .map(|c| c.at)
}

/// How text is cut for synthesis: the normalising segmenter, or (`normalize: false`) raw
/// sentences sent to espeak-ng as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segmenter {
    pub normalize: bool,
    /// Normaliser options and segment lengths (raw text uses `first_max_chars` only).
    pub options: SegmentOptions,
}

impl Default for Segmenter {
    fn default() -> Self {
        Self {
            normalize: true,
            options: SegmentOptions::default(),
        }
    }
}

/// Text the segmenter reads at a time: long enough for any sentence, short enough that the
/// first segment of a long text is ready at once (normalising 16 KB takes a few ms). Below
/// the normaliser's block ([`crate::normalize::BLOCK_BYTES`]), so a window is normalised in
/// one piece unless it is one long run.
const WINDOW_BYTES: usize = 16 * 1024;

impl Segmenter {
    /// The segments of `text`, read a window at a time as they are asked for, so a text of any
    /// length costs only its current window before its first segment. `first` asks for a short
    /// first segment (the start of an utterance).
    ///
    /// A window ends after whitespace, and its last segment is read again with the next one,
    /// after the segment before it (the normaliser's look-behind: "Dr." after a capitalised
    /// word reads "Drive"). So the segments are those of the whole text as long as no
    /// sentence is longer than a window and the normaliser looks back no further.
    ///
    /// A window without whitespace lies in a run longer than a window. Normalised, the window
    /// is then the whole run, which the normaliser announces once ("N characters skipped")
    /// without reading it; raw, it is cut at the window's end.
    pub fn iter<'a>(&'a self, text: &'a str, first: bool) -> Segments<'a> {
        self.iter_in_windows(text, first, WINDOW_BYTES)
    }

    /// All segments of `text` (as [`Segmenter::iter`] yields them).
    pub fn segments(&self, text: &str, first: bool) -> Vec<Segment> {
        self.iter(text, first).collect()
    }

    fn iter_in_windows<'a>(&'a self, text: &'a str, first: bool, window: usize) -> Segments<'a> {
        Segments {
            segmenter: self,
            text,
            pos: 0,
            context: 0,
            first,
            window: window.max(1),
            ready: VecDeque::new(),
            held: None,
        }
    }

    /// The segments of one window of text.
    fn cut(&self, text: &str, first: bool) -> Vec<Segment> {
        // The normaliser's rules are English; another language's text goes as written.
        if !self.normalize || !self.options.normalize.english_rules() {
            return raw::segments(text, first.then_some(self.options.first_max_chars));
        }
        let n = normalize(text, &self.options.normalize);
        cut_normalized(&n, text.len(), &self.options, first)
    }
}

/// The segments of a text, read a window at a time ([`Segmenter::iter`]).
pub struct Segments<'a> {
    segmenter: &'a Segmenter,
    text: &'a str,
    /// Where the next window starts.
    pos: usize,
    /// Where the next window's context starts (the last segment handed out).
    context: usize,
    first: bool,
    window: usize,
    ready: VecDeque<Segment>,
    /// The next segment to hand out, held until the one after it is known: a window with
    /// nothing to say (silent characters) goes with the segment before it, so the segments
    /// tile the text.
    held: Option<Segment>,
}

impl Segments<'_> {
    /// Bytes of the text read so far (the windows segmented).
    pub fn bytes_read(&self) -> usize {
        self.pos
    }

    /// Segments the next window. Its last segment may go on past the window, so unless the
    /// window ends the text, that segment is left to be read again with the next window. The
    /// segment before it is read again too, as context for the normaliser (and dropped).
    fn fill(&mut self) {
        let (pos, len) = (self.pos, self.text.len());
        let end = window_end(self.text, pos, self.window, self.segmenter.normalize);
        let mut segs = self.read(self.context, end);
        if self.context < pos && !segs.iter().any(|s| s.range.start == pos) {
            // With the context the segments fall differently: read on without it.
            segs = self.read(pos, end);
        }
        segs.retain(|s| s.range.start >= pos);
        self.first = false;
        let mut next = end;
        if end < len
            && let [.., last] = segs.as_slice()
            && last.range.start > pos
        {
            next = last.range.start;
            segs.pop();
        }
        self.context = segs.last().map_or(next, |s| s.range.start);
        self.ready.extend(segs);
        self.pos = next;
    }

    /// The segments of `text[from..end]`, with ranges in the whole text.
    fn read(&self, from: usize, end: usize) -> Vec<Segment> {
        let first = self.first && from == 0;
        let mut segs = self.segmenter.cut(&self.text[from..end], first);
        for s in &mut segs {
            s.range = from + s.range.start..from + s.range.end;
            for span in &mut s.spans {
                span.src = from + span.src.start..from + span.src.end;
            }
        }
        segs
    }
}

impl Iterator for Segments<'_> {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        loop {
            if let Some(mut next) = self.ready.pop_front() {
                let Some(mut done) = self.held.take() else {
                    // The first segment starts the text, silent windows before it included.
                    next.range.start = 0;
                    self.held = Some(next);
                    continue;
                };
                // What lies between them (silent windows too) goes with `done`.
                done.range.end = next.range.start;
                self.held = Some(next);
                return Some(done);
            }
            if self.pos >= self.text.len() {
                let mut last = self.held.take()?;
                last.range.end = self.text.len();
                return Some(last);
            }
            self.fill();
        }
    }
}

/// End of the window of at most `max` bytes from `start`: after its last whitespace when it
/// has some, always on a char boundary, and never empty. Without whitespace, the end of the
/// run when `whole_runs`, else the window's end.
fn window_end(text: &str, start: usize, max: usize, whole_runs: bool) -> usize {
    if text.len() - start <= max {
        return text.len();
    }
    let mut end = start + max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end == start {
        // One character longer than the window.
        return start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    match text[start..end].rfind(char::is_whitespace) {
        Some(i) if i > 0 => {
            let ws = text[start + i..].chars().next().map_or(1, char::len_utf8);
            start + i + ws
        }
        // No whitespace after the window's first character: the run goes on past `end`.
        _ if whole_runs => text[end..]
            .find(char::is_whitespace)
            .map_or(text.len(), |i| end + i),
        _ => end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long_text() -> String {
        let parts = [
            "Dr. Smith paid $3.50 on 12 May, then left. ",
            "The quick brown fox jumps over the lazy dog, while the old farmer watches from his porch and the rain falls. ",
            "Is it 2.5% or 3.14? Nobody knows!\n\n",
            "e.g. the U.S. economy grew; it was fine: mostly. ",
            "Ünïcödé text, ééé, and more words here. ",
        ];
        (0..250).map(|i| parts[i % parts.len()]).collect()
    }

    #[test]
    fn windows_cut_after_whitespace_and_on_char_boundaries() {
        let t = "aaaa bbbb cccc";
        assert_eq!(window_end(t, 0, 7, false), 5);
        assert_eq!(window_end(t, 5, 100, false), t.len());
        let u = "éééééééé";
        let e = window_end(u, 0, 5, false);
        assert!(u.is_char_boundary(e) && e <= 5 && e > 0);
        assert_eq!(window_end(u, 0, 1, false), 2);
        // A run longer than the window: whole, to its end, when normalising.
        let r = "x a bbbbbbbbbbbbbbbbbbbb c";
        assert_eq!(window_end(r, 0, 10, true), 4);
        assert_eq!(window_end(r, 4, 10, true), r.len() - 2);
        assert_eq!(window_end(r, 4, 10, false), 14);
        assert_eq!(window_end(&u[2..], 0, 5, true), u.len() - 2);
        assert_eq!(window_end(" xxxxxxxxxxxxxxx y", 0, 5, true), 16);
    }

    fn assert_tiles(text: &str, segs: &[Segment]) {
        let mut at = 0;
        for s in segs {
            assert_eq!(s.range.start, at);
            assert!(s.range.end > s.range.start && text.is_char_boundary(s.range.end));
            at = s.range.end;
        }
        assert_eq!(at, text.len());
    }

    #[test]
    fn silent_windows_and_long_runs_keep_the_tiling() {
        let opts = SegmentOptions::default();
        let block = crate::normalize::BLOCK_BYTES;
        let text = format!(
            "Hello there.\n{}\n{} and after.",
            ". ".repeat(block),
            "x".repeat(3 * block)
        );
        let segs = segments(&text, &opts);
        assert_tiles(&text, &segs);
        let texts: Vec<&str> = segs.iter().map(|s| s.text.as_str()).collect();
        // A run longer than the window is announced once, not once per window.
        assert_eq!(
            texts,
            [
                "Hello there.",
                "one hundred ninety-six thousand six hundred eight characters skipped.",
                "and after."
            ]
        );
        assert!(segments("", &opts).is_empty());
        assert!(segments(&" ".repeat(2 * block), &opts).is_empty());
        // Raw text reads a long run in pieces, never one window larger than the limit.
        let raw = Segmenter {
            normalize: false,
            options: opts,
        };
        let segs = raw.segments(&text, true);
        assert_tiles(&text, &segs);
        assert!(segs.iter().all(|s| s.text.len() <= WINDOW_BYTES));
    }

    #[test]
    fn text_for_a_voice_of_another_language_goes_as_written() {
        let text = "Am 3.4. kostet es 5 € bei Dr. Müller. Danach 10 km.";
        let seg = |locale: &str| {
            let mut options = SegmentOptions::default();
            options.normalize.locale = locale.to_string();
            let s = Segmenter {
                normalize: true,
                options,
            };
            let segs = s.segments(text, false);
            assert_tiles(text, &segs);
            segs.iter()
                .map(|s| s.text.clone())
                .collect::<Vec<_>>()
                .join(" ")
        };
        // German: no English rule runs; espeak-ng says the numbers and symbols in German.
        let german = seg("de");
        assert!(
            german.contains("5 €") && german.contains("10 km"),
            "{german}"
        );
        assert!(!german.contains("five"), "{german}");
        // English (and the unset default) keep the normaliser.
        for en in ["en-us", ""] {
            let said = seg(en);
            assert!(said.contains("five euros") && !said.contains('5'), "{said}");
        }
    }

    #[test]
    fn reading_in_windows_gives_the_segments_of_the_whole_text() {
        let t = long_text();
        for normalize in [true, false] {
            let s = Segmenter {
                normalize,
                options: SegmentOptions::default(),
            };
            for first in [true, false] {
                let whole: Vec<Segment> = s.cut(&t, first);
                for window in [300, 1000, 4096] {
                    assert!(t.len() > 3 * window);
                    let got: Vec<Segment> = s.iter_in_windows(&t, first, window).collect();
                    assert_eq!(
                        got, whole,
                        "normalize {normalize}, first {first}, window {window}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_long_text_is_read_one_window_at_a_time() {
        let t = long_text().repeat(12);
        assert!(t.len() > 10 * WINDOW_BYTES);
        let s = Segmenter::default();
        let mut it = s.iter(&t, true);
        assert!(it.next().is_some());
        assert!(
            it.bytes_read() <= WINDOW_BYTES,
            "read {} bytes",
            it.bytes_read()
        );
        // Segments tile the text to its end.
        let mut at = 0;
        for seg in s.segments(&t, true) {
            assert_eq!(seg.range.start, at);
            at = seg.range.end;
        }
        assert_eq!(at, t.len());
    }

    /// Each word of each segment and the input text it maps back to.
    fn word_sources(s: &Segmenter, t: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for seg in s.segments(t, true) {
            let mut at = 0;
            for w in seg.text.split(' ') {
                let w = w.trim_matches(|c: char| !c.is_alphanumeric());
                let start = at + seg.text[at..].find(w).unwrap();
                at = start + w.len();
                if w.is_empty() {
                    continue;
                }
                let src = seg.source_range(start..at);
                out.push((w.to_string(), t[src].to_string()));
            }
        }
        out
    }

    #[test]
    fn segment_words_map_back_to_the_input() {
        let t = "Dr. Smith paid $3.50 on 12 May, then left.";
        let got = word_sources(&Segmenter::default(), t);
        let find = |w: &str| got.iter().find(|(x, _)| x == w).unwrap().1.clone();
        assert_eq!(find("Doctor"), "Dr.");
        assert_eq!(find("Smith"), "Smith");
        assert_eq!(find("dollars"), "$3.50");
        assert_eq!(find("cents"), "$3.50");
        assert_eq!(find("twelfth"), "12 May");
        assert_eq!(find("left"), "left");
        let raw = Segmenter {
            normalize: false,
            ..Segmenter::default()
        };
        let got = word_sources(&raw, "Hello  there, world. Next one.");
        let srcs: Vec<&str> = got.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(srcs, ["Hello", "there,", "world.", "Next", "one."]);
    }

    proptest::proptest! {
        /// The span map of every segment points into the input, in order, and covers every
        /// word of the segment's text; windows do not change it.
        #[test]
        fn segment_spans_cover_their_words(
            sentences in proptest::collection::vec(
                (proptest::collection::vec(WORD, 1..12), "[.?!]"), 1..8),
        ) {
            let t = sentences_text(&sentences);
            for normalize in [true, false] {
                let s = Segmenter { normalize, options: SegmentOptions::default() };
                for seg in s.segments(&t, true) {
                    let mut last = 0;
                    for span in &seg.spans {
                        proptest::prop_assert!(span.src.start >= last && span.src.end <= t.len());
                        proptest::prop_assert!(span.out.end <= seg.text.len());
                        last = span.src.start;
                    }
                    for (i, c) in seg.text.char_indices() {
                        if c.is_alphanumeric() {
                            let src = seg.source_range(i..i + c.len_utf8());
                            proptest::prop_assert!(!src.is_empty(), "{:?} in {:?}", c, seg.text);
                        }
                    }
                }
            }
        }
    }

    /// Generated sentences (words and a terminator) as one text.
    fn sentences_text(sentences: &[(Vec<String>, String)]) -> String {
        sentences
            .iter()
            .map(|(words, end)| format!("{}{end} ", words.join(" ")))
            .collect()
    }

    /// Words, numbers and abbreviations that the normaliser and the splitters read
    /// differently, some followed by clause punctuation.
    const WORD: &str = "([a-z]{1,8}|[A-Z][a-z]{0,6}|[0-9]{1,4}|\\$[0-9]\\.[0-9]{2}|Dr\\.|Mr\\.|e\\.g\\.|U\\.S\\.|3\\.14)[,;:]?";

    proptest::proptest! {
        /// Reading in windows changes nothing while the windows are longer than the sentences.
        #[test]
        fn reading_in_windows_changes_no_segment(
            sentences in proptest::collection::vec(
                (proptest::collection::vec(WORD, 1..25), "[.?!]"), 0..60),
            window in 500usize..1500,
        ) {
            let t = sentences_text(&sentences);
            for normalize in [true, false] {
                let s = Segmenter { normalize, options: SegmentOptions::default() };
                let got: Vec<Segment> = s.iter_in_windows(&t, true, window).collect();
                proptest::prop_assert_eq!(got, s.cut(&t, true), "normalize {}", normalize);
            }
        }
    }
}
