//! Splits input into words, digit runs, whitespace and single symbols, each with its byte
//! range in the input. Compatibility characters are folded (fullwidth letters, ligatures,
//! "bold" maths letters, curly quotes, Roman numeral signs) so later rules see plain text.

use std::ops::Range;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Letters and marks, with inner apostrophes ("don't").
    Word,
    /// ASCII digits.
    Num,
    /// A whitespace run; `newlines` counts its line breaks.
    Space { newlines: u32 },
    /// One symbol or punctuation character (after folding).
    Sym(char),
    /// A user-dictionary match; the value indexes the replacements.
    Dict(usize),
}

#[derive(Debug, Clone)]
pub struct Tok {
    pub kind: Kind,
    /// Folded text (may differ from the input slice).
    pub text: String,
    pub src: Range<usize>,
}

/// What one input character folds to.
fn fold(c: char, out: &mut Vec<char>) {
    let cp = c as u32;
    match c {
        '\u{2018}' | '\u{2019}' | '\u{02BC}' | '\u{2032}' => out.push('\''),
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{00AB}' | '\u{00BB}' | '\u{2033}' => {
            out.push('"')
        }
        '\u{2212}' => out.push('-'), // minus sign
        '\u{2010}' | '\u{2011}' => out.push('-'),
        '\u{2044}' | '\u{2215}' => out.push('/'),
        '\u{00AD}' | '\u{200B}' | '\u{2060}' | '\u{FEFF}' => {} // soft hyphen, zero widths
        _ if (0xFF01..=0xFF5E).contains(&cp)
            || (0xFB00..=0xFB06).contains(&cp)
            || (0x1D400..=0x1D7FF).contains(&cp)
            || (0x2160..=0x217F).contains(&cp) =>
        {
            out.extend(c.nfkc())
        }
        _ => out.push(c),
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphabetic() || is_combining_mark(c)
}

/// Tokenise `text`. `dict` holds sorted, non-overlapping byte ranges (on char boundaries)
/// that become [`Kind::Dict`] tokens.
pub fn lex(text: &str, dict: &[(Range<usize>, usize)]) -> Vec<Tok> {
    // Folded characters, each with the input range it came from.
    let mut chars: Vec<(char, Range<usize>)> = Vec::with_capacity(text.len());
    let mut buf = Vec::new();
    let mut d = 0;
    let mut toks = Vec::with_capacity(text.len() / 3 + 1);
    let mut iter = text.char_indices().peekable();
    // Dictionary tokens are emitted in place, so flush the pending characters first.
    while let Some(&(off, c)) = iter.peek() {
        if d < dict.len() && dict[d].0.start == off {
            tokenize(&chars, &mut toks);
            chars.clear();
            let (range, idx) = dict[d].clone();
            toks.push(Tok {
                kind: Kind::Dict(idx),
                text: String::new(),
                src: range.clone(),
            });
            while iter.peek().is_some_and(|&(o, _)| o < range.end) {
                iter.next();
            }
            d += 1;
            continue;
        }
        iter.next();
        buf.clear();
        fold(c, &mut buf);
        let r = off..off + c.len_utf8();
        chars.extend(buf.iter().map(|&f| (f, r.clone())));
    }
    tokenize(&chars, &mut toks);
    toks
}

fn tokenize(chars: &[(char, Range<usize>)], toks: &mut Vec<Tok>) {
    let n = chars.len();
    let mut i = 0;
    while i < n {
        let c = chars[i].0;
        let start = i;
        let kind = if c.is_ascii_digit() {
            while i < n && chars[i].0.is_ascii_digit() {
                i += 1;
            }
            Kind::Num
        } else if c.is_whitespace() {
            let mut newlines = 0;
            while i < n && chars[i].0.is_whitespace() {
                newlines += u32::from(chars[i].0 == '\n');
                i += 1;
            }
            Kind::Space { newlines }
        } else if c.is_alphabetic() {
            while i < n {
                let ch = chars[i].0;
                let inner_apostrophe =
                    ch == '\'' && i + 1 < n && chars[i + 1].0.is_alphabetic() && i > start;
                if is_word_char(ch) || inner_apostrophe {
                    i += 1;
                } else {
                    break;
                }
            }
            Kind::Word
        } else {
            i += 1;
            Kind::Sym(c)
        };
        let text: String = chars[start..i].iter().map(|(c, _)| *c).collect();
        let src = chars[start].1.start..chars[i - 1].1.end;
        // Folding can map one input char to several output chars that land in different
        // tokens; merge such a split so input ranges never overlap.
        if let Some(prev) = toks.last_mut()
            && prev.src.end > src.start
        {
            prev.text.push_str(&text);
            prev.src.end = prev.src.end.max(src.end);
            continue;
        }
        toks.push(Tok { kind, text, src });
    }
}
