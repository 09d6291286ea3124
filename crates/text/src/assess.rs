//! Is this text worth reading aloud? A cheap look at the whole input before it is spoken, so
//! that binary data, random bytes or a dump on the clipboard is not read out for an hour
//! unasked. The decision is the caller's: the CLI refuses such input unless told otherwise,
//! and the app can ask. docs/TEXT.md, "Text that is mostly not words".

use crate::normalize::MAX_RUN_CHARS;

/// Texts with fewer non-space characters than this are always read: a short oddity is over
/// quickly, and a few symbols or emoji are a normal message.
pub const MIN_ASSESSED_CHARS: usize = 200;

/// A text is read without asking when at least this share of its non-space characters are
/// in words.
pub const MIN_WORD_SHARE: f64 = 0.3;

/// The longest word of letters ("internationalisation" is 20), and the longest with digits or
/// inner punctuation in it ("COVID-19", "km/h", "3.50").
const MAX_WORD_CHARS: usize = 40;
const MAX_MIXED_WORD_CHARS: usize = 24;
/// Case changes a word may have from lower to upper ("iPhone", "LaTeX"); base64 has many.
const MAX_CASE_RISES: usize = 2;

/// What [`assess`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// Characters other than whitespace, outside long runs.
    pub chars: usize,
    /// Of those, the characters of words: see [`assess`].
    pub word_chars: usize,
    /// Runs without whitespace longer than [`MAX_RUN_CHARS`]: each is announced ("N
    /// characters skipped"), not read, so they are not counted in `chars`.
    pub long_runs: usize,
}

impl Verdict {
    /// The share of non-space characters that are in words (1 for an empty text).
    pub fn word_share(&self) -> f64 {
        if self.chars == 0 {
            1.0
        } else {
            self.word_chars as f64 / self.chars as f64
        }
    }

    /// Whether the text reads as text: short, or at least [`MIN_WORD_SHARE`] words. When
    /// false, the text is mostly not words (binary data, random characters, a dump) and
    /// should not be read without the user's say-so.
    pub fn mostly_words(&self) -> bool {
        self.chars < MIN_ASSESSED_CHARS || self.word_share() >= MIN_WORD_SHARE
    }
}

/// Looks at `text` once, in linear time and constant memory.
///
/// The text is split at whitespace. A piece, with punctuation, brackets, quotes and symbols
/// stripped from both ends, is a word when it is made of up to 40 letters (any script, with
/// marks and inner apostrophes, hyphens or dots: "don't", "well-known", "e.g") with at most
/// two rises from lower to upper case ("iPhone", "LaTeX"), or of up to 24 letters and digits
/// with inner `. , : / - ' %` and at most two changes between letters and digits
/// ("COVID-19", "3.50", "10:30", "mp3"). A word counts with the
/// punctuation around it ("(Hello)," is all words). Everything else (random bytes, U+FFFD,
/// base64, hex dumps, long codes, runs of symbols or emoji) is not words.
pub fn assess(text: &str) -> Verdict {
    let mut v = Verdict {
        chars: 0,
        word_chars: 0,
        long_runs: 0,
    };
    for piece in text.split(char::is_whitespace).filter(|p| !p.is_empty()) {
        let n = piece.chars().count();
        if n > MAX_RUN_CHARS {
            v.long_runs += 1;
            continue;
        }
        v.chars += n;
        let core = piece.trim_matches(|c: char| !c.is_alphanumeric());
        if is_word(core) {
            // The stripped punctuation counts with the word: "Hello," is all words.
            v.word_chars += n;
        }
    }
    v
}

fn is_word(core: &str) -> bool {
    if core.is_empty() {
        return false;
    }
    let inner = |c: char| matches!(c, '\'' | '’' | '-' | '.');
    let mark = unicode_normalization::char::is_combining_mark;
    let (mut count, mut switches, mut rises) = (0, 0, 0);
    let (mut letters_only, mut prev_digit, mut prev_lower) = (true, None, false);
    for c in core.chars() {
        count += 1;
        if c.is_alphabetic() || mark(c) || c.is_numeric() {
            let digit = c.is_numeric();
            letters_only &= !digit;
            if prev_digit.is_some_and(|p| p != digit) {
                switches += 1;
            }
            prev_digit = Some(digit);
            if prev_lower && c.is_uppercase() {
                rises += 1;
            }
            prev_lower = c.is_lowercase();
        } else if inner(c) {
            prev_lower = false;
        } else if matches!(c, ',' | ':' | '/' | '%') {
            letters_only = false;
        } else {
            return false;
        }
    }
    if letters_only {
        count <= MAX_WORD_CHARS && rises <= MAX_CASE_RISES
    } else {
        count <= MAX_MIXED_WORD_CHARS && switches <= 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(t: &str) -> f64 {
        assess(t).word_share()
    }

    #[test]
    fn prose_code_and_junk() {
        let prose = "Mr. Smith paid $3.50 at 6:15 pm on 2026-11-29 — COVID-19 (again); \
                     \"well-known\", isn't it? e.g. mp3, 50%, km/h… привет мир.";
        assert!(share(prose) > 0.9, "{}", share(prose));
        let code = r#"fn main() { let x = vec![1, 2, 3]; println!("{:?}", x.iter().map(|v| v * 2).collect::<Vec<_>>()); }"#;
        assert!(assess(&code.repeat(5)).mostly_words(), "{}", share(code));
        // Random-looking bytes: the top byte of a multiplicative hash of the index.
        let bytes: Vec<u8> = (0..20_000u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8)
            .collect();
        let random = String::from_utf8_lossy(&bytes);
        let v = assess(&random);
        assert!(!v.mostly_words(), "random bytes: {}", v.word_share());
        let base64 =
            "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgZGF0YSBvbiB0aGUgY2xpcGJvYXJk\n".repeat(20);
        assert!(!assess(&base64).mostly_words());
        let hex = "0x7f3a 0x9c12 0xdeadbeef 0x00ff 4f:3a:9c:12:ab:cd ".repeat(20);
        assert!(!assess(&hex).mostly_words(), "{}", share(&hex));
        assert!(!assess(&"!?;:., ".repeat(100)).mostly_words());
        assert!(!assess(&"😀👍🔥 ".repeat(100)).mostly_words());
        // A run without spaces is announced, not read: it does not count against the text.
        let v = assess(&"7".repeat(1_000_000));
        assert!(v.mostly_words() && v.long_runs == 1 && v.chars == 0);
        // Short texts are always read.
        assert!(assess("😀👍🔥!!!").mostly_words());
        assert!(assess("").mostly_words());
    }

    #[test]
    fn long_runs_are_counted() {
        let t = format!(
            "see {} and {}",
            "x".repeat(MAX_RUN_CHARS + 1),
            "y".repeat(MAX_RUN_CHARS)
        );
        assert_eq!(assess(&t).long_runs, 1);
    }
}
