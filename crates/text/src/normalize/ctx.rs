//! The scanner state shared by the rules, and token look-ups. Every look-up is bounds-checked
//! and returns `None`/`false` past the end, so rules can peek freely without panicking.

use std::ops::Range;

use super::lexer::{Kind, Tok};
use super::out::Out;
use super::{DateOrder, NormalizeOptions, PunctuationVerbosity};

/// What kind of line the scanner is in (for the pause at its end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    Prose,
    /// A heading or list item: its end is a sentence end.
    Block,
}

pub struct Ctx<'a> {
    pub t: Vec<Tok>,
    pub opts: &'a NormalizeOptions,
    pub out: Out,
    /// Inside a fenced code block.
    pub code: bool,
    /// Inside `inline code`.
    pub inline_code: bool,
    pub line: Line,
    /// Markdown link targets to skip: at token `.0`, jump to `.1`.
    pub skips: Vec<(usize, usize)>,
    /// Token index just after the last number-like reading (for ranges, units, "per").
    pub num_end: usize,
    /// Replacement texts of the user dictionary, already normalised.
    pub replacements: Vec<String>,
    /// The order of ambiguous numeric dates (the setting, or the locale's).
    pub date_order: DateOrder,
}

impl<'a> Ctx<'a> {
    pub fn new(t: Vec<Tok>, opts: &'a NormalizeOptions, replacements: Vec<String>) -> Self {
        Self {
            t,
            opts,
            out: Out::default(),
            code: false,
            inline_code: false,
            line: Line::Prose,
            skips: Vec::new(),
            num_end: usize::MAX,
            replacements,
            date_order: opts.resolved_date_order(),
        }
    }

    pub fn len(&self) -> usize {
        self.t.len()
    }

    pub fn kind(&self, i: usize) -> Option<Kind> {
        self.t.get(i).map(|t| t.kind)
    }

    pub fn text(&self, i: usize) -> &str {
        self.t.get(i).map_or("", |t| t.text.as_str())
    }

    pub fn num(&self, i: usize) -> Option<&str> {
        match self.kind(i)? {
            Kind::Num => Some(self.text(i)),
            _ => None,
        }
    }

    pub fn word(&self, i: usize) -> Option<&str> {
        match self.kind(i)? {
            Kind::Word => Some(self.text(i)),
            _ => None,
        }
    }

    pub fn sym(&self, i: usize) -> Option<char> {
        match self.kind(i)? {
            Kind::Sym(c) => Some(c),
            _ => None,
        }
    }

    pub fn is_sym(&self, i: usize, c: char) -> bool {
        self.sym(i) == Some(c)
    }

    pub fn is_word(&self, i: usize, w: &str) -> bool {
        self.word(i) == Some(w)
    }

    /// Whitespace within a line.
    pub fn gap(&self, i: usize) -> bool {
        matches!(self.kind(i), Some(Kind::Space { newlines: 0 }))
    }

    /// Any whitespace, or the start/end of the text.
    pub fn boundary(&self, i: usize) -> bool {
        matches!(self.kind(i), None | Some(Kind::Space { .. }))
    }

    /// Index of the token after an optional in-line gap at `j`.
    pub fn skip_gap(&self, j: usize) -> usize {
        if self.gap(j) { j + 1 } else { j }
    }

    /// `p`, or the token before it when `p` is an in-line gap.
    pub fn skip_gap_back(&self, p: usize) -> usize {
        if self.gap(p) { p.saturating_sub(1) } else { p }
    }

    /// The word just before `i`, possibly across one in-line gap.
    pub fn prev_word(&self, i: usize) -> Option<&str> {
        let p = i.checked_sub(1)?;
        if self.gap(p) {
            self.word(p.checked_sub(1)?)
        } else {
            self.word(p)
        }
    }

    /// Up to `n` words before token `i`, nearest first, lower-cased. Only in-line gaps and the
    /// marks `: # , -` may come between them; anything else ends the look-back.
    pub fn words_before(&self, i: usize, n: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut k = i;
        // Bounded: a few tokens per word.
        let floor = i.saturating_sub(4 * n + 2);
        while out.len() < n && k > floor {
            k -= 1;
            match self.kind(k) {
                Some(Kind::Word) => out.push(self.text(k).to_lowercase()),
                Some(Kind::Space { newlines: 0 }) | Some(Kind::Sym(':' | '#' | ',' | '-')) => {}
                _ => break,
            }
        }
        out
    }

    /// The token before `i` is whitespace, an opening bracket/quote, or nothing.
    pub fn starts_chunk(&self, i: usize) -> bool {
        match i.checked_sub(1) {
            None => true,
            Some(p) => {
                self.boundary(p)
                    || (matches!(self.sym(p), Some('(' | '[' | '{' | '"' | '\'' | '<'))
                        && p.checked_sub(1).is_none_or(|q| self.boundary(q)))
            }
        }
    }

    pub fn at_line_start(&self, i: usize) -> bool {
        match i.checked_sub(1) {
            None => true,
            Some(p) => matches!(self.kind(p), Some(Kind::Space { newlines }) if newlines > 0),
        }
    }

    /// Input byte range of tokens `a..b` (`b > a`).
    pub fn src(&self, a: usize, b: usize) -> Range<usize> {
        let n = self.t.len();
        if n == 0 {
            return 0..0;
        }
        let a = a.min(n - 1);
        let b = b.clamp(a + 1, n);
        self.t[a].src.start..self.t[b - 1].src.end
    }

    /// Emit `words` as the reading of tokens `a..b`.
    pub fn emit(&mut self, words: &str, a: usize, b: usize) {
        let src = self.src(a, b);
        self.out.word(words, src);
    }

    pub fn verbosity(&self) -> PunctuationVerbosity {
        if self.code || self.inline_code {
            self.opts.verbosity.max(PunctuationVerbosity::Most)
        } else {
            self.opts.verbosity
        }
    }

    /// After a `.` ending at `j`, what comes next.
    pub fn next_start(&self, j: usize) -> Next {
        let k = match self.kind(j) {
            None => return Next::End,
            Some(Kind::Space { newlines }) if newlines >= 2 => return Next::End,
            Some(Kind::Space { .. }) => j + 1,
            _ => return Next::Attached,
        };
        match self.kind(k) {
            None => Next::End,
            Some(Kind::Word) => {
                let w = self.text(k);
                if w.starts_with(char::is_uppercase) {
                    if STARTERS.contains(&w) {
                        Next::Starter
                    } else {
                        Next::Upper
                    }
                } else {
                    Next::Lower
                }
            }
            Some(Kind::Num) => Next::Lower,
            _ => Next::Upper,
        }
    }
}

/// What follows a full stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// End of text or paragraph.
    End,
    /// No space: part of the same token run ("e.g.", "U.S.A.").
    Attached,
    /// A capitalised word that usually starts a sentence ("The", "It").
    Starter,
    /// Another capitalised word or symbol (a name after an initial, say).
    Upper,
    /// A lower-case word or a number.
    Lower,
}

/// Capitalised words that almost always start a sentence rather than continue a name.
const STARTERS: &[&str] = &[
    "A", "After", "All", "Also", "Although", "An", "And", "Are", "As", "At", "Because", "Before",
    "But", "By", "Can", "Could", "Did", "Do", "Does", "Each", "Every", "For", "From", "He", "Her",
    "Here", "His", "How", "However", "I", "If", "In", "Is", "It", "Its", "Just", "Let", "Many",
    "Most", "My", "No", "Not", "Now", "Of", "On", "Once", "One", "Or", "Our", "Please", "She",
    "Since", "So", "Some", "Still", "Such", "Than", "Thank", "Thanks", "That", "The", "Their",
    "Then", "There", "These", "They", "This", "Those", "To", "Today", "Was", "We", "Were", "What",
    "When", "Where", "Which", "While", "Who", "Why", "Will", "With", "Would", "Yes", "Yet", "You",
    "Your",
];
