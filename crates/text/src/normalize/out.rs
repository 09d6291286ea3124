//! The normaliser's output: speakable text plus a map from output bytes to input bytes.

use std::ops::Range;

/// One emitted piece: `out` in the output text came from `src` in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub out: Range<usize>,
    pub src: Range<usize>,
}

/// Characters the output may contain: letters (any script) and combining marks, spaces, and
/// the punctuation espeak uses for prosody.
pub fn is_speakable(c: char) -> bool {
    c.is_alphabetic()
        || unicode_normalization::char::is_combining_mark(c)
        || matches!(c, ' ' | '.' | ',' | '?' | '!' | ';' | ':' | '\'' | '-')
}

fn is_terminal(c: char) -> bool {
    matches!(c, '.' | '?' | '!')
}

fn is_punct(c: char) -> bool {
    matches!(c, '.' | ',' | '?' | '!' | ';' | ':')
}

#[derive(Default)]
pub struct Out {
    pub text: String,
    pub spans: Vec<Span>,
    /// The next word attaches without a space (after a joining hyphen).
    glue: bool,
}

impl Out {
    fn push_span(&mut self, start: usize, src: Range<usize>) {
        if self.text.len() > start {
            self.spans.push(Span {
                out: start..self.text.len(),
                src,
            });
        }
    }

    /// Append words, separated from what came before by one space. Characters that are not
    /// speakable become spaces, so no rule can leak a digit or symbol into the output.
    pub fn word(&mut self, w: &str, src: Range<usize>) {
        let w = w.trim();
        if w.is_empty() {
            return;
        }
        if !self.glue && !self.text.is_empty() && !self.text.ends_with(' ') {
            self.text.push(' ');
        }
        self.glue = false;
        let start = self.text.len();
        let mut space = false;
        for c in w.chars() {
            if is_speakable(c) && c != ' ' {
                if space && self.text.len() > start {
                    self.text.push(' ');
                }
                space = false;
                self.text.push(c);
            } else {
                space = true;
            }
        }
        self.push_span(start, src);
    }

    /// A punctuation mark attached to the previous word. Repeats collapse; a stronger mark
    /// replaces a weaker one; nothing is emitted before the first word.
    pub fn punct(&mut self, p: char, src: Range<usize>) {
        debug_assert!(is_punct(p));
        self.glue = false;
        let trimmed = self.text.trim_end_matches(' ').len();
        self.text.truncate(trimmed);
        let Some(last) = self.text.chars().last() else {
            return;
        };
        if is_punct(last) {
            if is_terminal(last) || !is_terminal(p) {
                return;
            }
            // A sentence end overrides a clause mark.
            self.text.pop();
            if let Some(s) = self.spans.last_mut() {
                s.out.end = s.out.end.min(self.text.len());
            }
        } else if !last.is_alphabetic() && !unicode_normalization::char::is_combining_mark(last) {
            return;
        }
        let start = self.text.len();
        self.text.push(p);
        self.push_span(start, src);
    }

    /// A short pause: a comma unless some punctuation is already there.
    pub fn pause(&mut self, src: Range<usize>) {
        self.punct(',', src);
    }

    /// A sentence end.
    pub fn stop(&mut self, src: Range<usize>) {
        self.punct('.', src);
    }

    /// A hyphen joining the previous word to the next one ("well-known", "five-year").
    pub fn hyphen(&mut self, src: Range<usize>) {
        if self.text.ends_with(|c: char| c.is_alphabetic()) {
            let start = self.text.len();
            self.text.push('-');
            self.push_span(start, src);
            self.glue = true;
        }
    }

    /// The last word emitted, if the text ends with one.
    pub fn last_word(&self) -> Option<&str> {
        let t = self.text.trim_end_matches(' ');
        if !t.ends_with(|c: char| c.is_alphabetic()) {
            return None;
        }
        t.rsplit([' ', '-']).next()
    }

    pub fn ends_with_word(&self) -> bool {
        self.text.ends_with(|c: char| c.is_alphabetic())
    }
}
