//! Segmenter for the streaming engine: normalised text cut into sentences, long sentences cut
//! at clause boundaries, and a short first segment for a fast onset.
//!
//! Cutting the *normalised* text is what keeps it from being fooled: abbreviations, decimals,
//! initials, URLs and mid-sentence ellipses no longer contain a full stop there (the
//! normaliser decided), so every remaining `.` `?` `!` before a space is a sentence end.
//! Cuts are made only between normaliser pieces, so each segment maps back to whole input
//! characters.

use std::collections::VecDeque;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::normalize::{BLOCK_BYTES, NormalizeOptions, Normalized, next_block, normalize_block};

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
    /// Normalised text to phonemise.
    pub text: String,
}

/// Words before which a long clause may be cut.
const CONJUNCTIONS: &[&str] = &[
    "and", "but", "or", "so", "because", "which", "while", "although", "though", "whereas",
    "unless", "until", "when", "where", "yet", "since", "if",
];

/// Normalise and segment `text`.
pub fn segments(text: &str, opts: &SegmentOptions) -> Vec<Segment> {
    Segments::new(text, opts).collect()
}

/// The segments of a text, normalised and cut one block ([`BLOCK_BYTES`]) at a time as they
/// are asked for: the memory held does not grow with the text, and the first segment of a
/// long text is ready as soon as its first block is normalised. Yields what [`segments`]
/// returns.
pub struct Segments<'a> {
    text: &'a str,
    opts: SegmentOptions,
    /// Input bytes already normalised.
    at: usize,
    /// Cut from the blocks so far, not yet handed out.
    ready: VecDeque<Segment>,
    /// The last segment handed out runs to the start of the next one: held until that exists.
    held: Option<Segment>,
    started: bool,
}

impl<'a> Segments<'a> {
    pub fn new(text: &'a str, opts: &SegmentOptions) -> Self {
        Self {
            text,
            opts: opts.clone(),
            at: 0,
            ready: VecDeque::new(),
            held: None,
            started: false,
        }
    }

    /// Normalises and cuts the next block into `ready`.
    fn fill(&mut self) {
        let block = next_block(self.text, self.at, BLOCK_BYTES);
        let n = normalize_block(self.text, &block, &self.opts.normalize);
        let base = block.range.start;
        for mut s in segments_of(&n, block.range.len(), &self.opts) {
            s.range = base + s.range.start..base + s.range.end;
            self.ready.push_back(s);
        }
        if !self.ready.is_empty() {
            // Only the text's first segment gets the short budget.
            self.opts.first_max_chars = self.opts.max_chars;
        }
        self.at = block.range.end;
    }
}

impl Iterator for Segments<'_> {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        loop {
            if let Some(mut next) = self.ready.pop_front() {
                if !self.started {
                    // Segments tile the text from its start.
                    next.range.start = 0;
                    self.started = true;
                }
                let start = next.range.start;
                if let Some(mut done) = self.held.replace(next) {
                    done.range.end = start;
                    return Some(done);
                }
                continue;
            }
            if self.at >= self.text.len() {
                let mut last = self.held.take()?;
                last.range.end = self.text.len();
                return Some(last);
            }
            self.fill();
        }
    }
}

/// Segment already-normalised text; `input_len` is the length of the original text.
pub fn segments_of(n: &Normalized, input_len: usize, opts: &SegmentOptions) -> Vec<Segment> {
    let out = n.text.as_str();
    let mut cuts: Vec<usize> = Vec::new();
    let mut first = true;
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
            let src = n.source_range(a + lead..a + lead + text.len());
            segs.push((src.start, text.to_string()));
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_long_text_is_segmented_lazily_block_by_block() {
        let opts = SegmentOptions::default();
        let para = "The cat sat on the mat. It was happy, and the dog was not.\n\n";
        let text = para.repeat(4 * BLOCK_BYTES / para.len());
        let mut it = Segments::new(&text, &opts);
        let first = it.next().unwrap();
        assert!(it.at <= BLOCK_BYTES, "only the first block is normalised");
        assert_eq!(first.range.start, 0);
        let mut all = vec![first];
        all.extend(it);
        assert_tiles(&text, &all);
        assert_eq!(all.len(), 2 * text.matches(para).count());
        // The short first budget applies to the text's first segment only.
        let whole = segments(&text, &opts);
        assert_eq!(whole, all);
    }

    #[test]
    fn silent_blocks_and_long_runs_keep_the_tiling() {
        let opts = SegmentOptions::default();
        let text = format!(
            "Hello there.\n{}\n{} and after.",
            ". ".repeat(BLOCK_BYTES),
            "x".repeat(3 * BLOCK_BYTES)
        );
        let segs = segments(&text, &opts);
        assert_tiles(&text, &segs);
        let texts: Vec<&str> = segs.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Hello there.",
                "one hundred ninety-six thousand six hundred eight characters skipped.",
                "and after."
            ]
        );
        assert!(segments("", &opts).is_empty());
        assert!(segments(&" ".repeat(2 * BLOCK_BYTES), &opts).is_empty());
    }
}
