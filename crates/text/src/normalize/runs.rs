//! Bounds on what one piece of input can cost: long runs without a space are announced, not
//! read, and the input is normalised in blocks of bounded size (docs/TEXT.md, "Long runs").

use std::ops::Range;

use super::ctx::Ctx;
use super::words::cardinal_u;
use super::{MAX_RUN_CHARS, abbrev, urls};

/// What is said instead of a run of `chars` characters without a space.
pub fn notice(chars: usize) -> String {
    format!("{} characters skipped", cardinal_u(chars as u64))
}

/// The run of non-space tokens starting at `i`: the token index after it and its length in
/// characters. The targets of markdown links (`](…)`) do not count: the link rule skips them.
fn extent(cx: &Ctx, i: usize) -> (usize, usize) {
    let (mut j, mut chars) = (i, 0usize);
    while j < cx.len() && !cx.boundary(j) {
        if cx.is_sym(j, ']') && cx.is_sym(j + 1, '(') {
            j += 2;
            while j < cx.len() && !cx.boundary(j) && !cx.is_sym(j, ')') {
                j += 1;
            }
            continue;
        }
        chars += cx.text(j).chars().count().max(1);
        j += 1;
    }
    (j, chars)
}

/// At the start of a run (after whitespace): a run longer than [`MAX_RUN_CHARS`] characters
/// is announced as "N characters skipped", unless it is a web or e-mail address or a code
/// (perhaps in brackets), which the URL rule reads briefly at any length.
pub fn try_long_run(cx: &mut Ctx, i: usize) -> Option<usize> {
    if i > 0 && !cx.boundary(i - 1) {
        return None;
    }
    let (end, chars) = extent(cx, i);
    if chars <= MAX_RUN_CHARS {
        return None;
    }
    if let Some(j) = urls::try_url(cx, i) {
        return Some(j);
    }
    if matches!(cx.sym(i), Some('(' | '[' | '{' | '"' | '\'' | '<'))
        && let Some(j) = urls::try_url(cx, i + 1)
    {
        return Some(j);
    }
    let src = cx.src(i, end);
    cx.out.pause(src.start..src.start);
    cx.emit(&notice(chars), i, end);
    // A pause before what follows; at the end the final stop comes instead.
    if !cx.boundary(end) || cx.kind(end + 1).is_some() {
        cx.out.pause(src.end..src.end);
    }
    Some(end)
}

/// The next block of `text` from byte `from`: at most `max` bytes, cut after the last
/// paragraph break in it, else the last line break, else the last sentence end (not after a
/// possible abbreviation), else the last whitespace. A window without whitespace lies inside a run longer than any block: the block
/// is then that whole run (to the next whitespace), and `Block::run` gives its length.
pub fn next_block(text: &str, from: usize, max: usize) -> Block {
    let rest = &text[from..];
    if rest.len() <= max {
        return Block {
            range: from..text.len(),
            run: None,
        };
    }
    let mut w = max;
    while !rest.is_char_boundary(w) {
        w -= 1;
    }
    let window = &rest[..w];
    // After `.` `?` `!` and one whitespace character, unless the stop may end an abbreviation.
    let sentence_end = || {
        window
            .match_indices(['.', '?', '!'])
            .rev()
            .find_map(|(k, mark)| {
                let space = window[k + 1..]
                    .chars()
                    .next()
                    .filter(|c| c.is_whitespace())?;
                let word = window[..k].rsplit(char::is_whitespace).next().unwrap_or("");
                (mark != "." || !abbrev::may_be_abbreviation(word))
                    .then_some(k + 1 + space.len_utf8())
            })
    };
    let cut = window
        .rfind("\n\n")
        .map(|k| k + 2)
        .or_else(|| window.rfind('\n').map(|k| k + 1))
        .or_else(sentence_end)
        .or_else(|| {
            window
                .char_indices()
                .rev()
                .find(|(_, c)| c.is_whitespace())
                .map(|(k, c)| k + c.len_utf8())
        });
    match cut {
        Some(k) if k > 0 => Block {
            range: from..from + k,
            run: None,
        },
        _ => {
            let len = rest.find(char::is_whitespace).unwrap_or(rest.len());
            Block {
                range: from..from + len,
                run: Some(rest[..len].chars().count()),
            }
        }
    }
}

/// A piece of input normalised on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub range: Range<usize>,
    /// `Some(chars)`: the block is one run without whitespace, longer than any block.
    pub run: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::super::{BLOCK_BYTES, MAX_RUN_CHARS, NormalizeOptions, normalize};
    use super::*;

    fn norm(t: &str) -> String {
        normalize(t, &NormalizeOptions::default()).text
    }

    #[test]
    fn long_runs_are_announced_not_read() {
        let blob = format!("See {} now.", "xy.z;".repeat(30));
        let brackets = format!("{}x{}", "[".repeat(100), "]".repeat(100));
        for (input, said) in [
            (
                "x".repeat(200_000),
                "two hundred thousand characters skipped.",
            ),
            ("7".repeat(1_000_000), "one million characters skipped."),
            (blob, "See, one hundred fifty characters skipped, now."),
            // A code (base64, a digest) of any length stays "a long code".
            (
                format!("See {} now.", "aB3+/".repeat(30)),
                "See a long code now.",
            ),
            // Punctuation, emoji and nested brackets count as characters too.
            ("!?".repeat(60), "one hundred twenty characters skipped."),
            ("😀".repeat(101), "one hundred one characters skipped."),
            (brackets, "two hundred one characters skipped."),
        ] {
            let start: String = input.chars().take(40).collect();
            assert_eq!(norm(&input), said, "{start}");
        }
        // Up to the limit a run is read as before.
        let word = "a".repeat(MAX_RUN_CHARS);
        assert!(norm(&word).contains(&word));
    }

    #[test]
    fn addresses_and_link_targets_are_not_long_runs() {
        let path = "a/".repeat(80);
        assert_eq!(
            norm(&format!("Go to https://www.example.com/{path} now.")),
            "Go to example dot com now."
        );
        assert_eq!(
            norm(&format!(
                "Read [the docs](https://example.com/{path}) first."
            )),
            "Read the docs first."
        );
        assert_eq!(
            norm(&format!("(https://example.com/{path})")),
            norm("(https://example.com/a)")
        );
    }

    #[test]
    fn blocks_cut_at_the_best_boundary_within_the_limit() {
        let para = "One sentence here. Another one there!\n".repeat(4);
        let text = format!("{para}\n{para}");
        let b = next_block(&text, 0, para.len() + 10);
        assert_eq!(
            &text[b.range.clone()],
            &format!("{para}\n"),
            "paragraph break"
        );
        let line = "word ".repeat(30);
        let text = format!("{line}\n{line}");
        assert_eq!(
            next_block(&text, 0, 200).range,
            0..line.len() + 1,
            "line break"
        );
        let text = "Short one. ".repeat(30);
        assert_eq!(next_block(&text, 0, 100).range.end, 99, "sentence end");
        let text = "It was Dr. Smith. ".repeat(10);
        assert_eq!(
            &text[next_block(&text, 0, 30).range],
            "It was Dr. Smith. ",
            "not after Dr."
        );
        let text = "word ".repeat(100);
        assert!(
            text[next_block(&text, 0, 103).range].ends_with(' '),
            "whitespace"
        );
        // No whitespace in the window: the whole run is one block.
        let text = format!("{} tail", "é".repeat(1000));
        let b = next_block(&text, 0, 100);
        assert_eq!((b.range, b.run), (0..2000, Some(1000)));
        // Blocks tile the text.
        let text = format!(
            "{}{} end",
            "Hello there. ".repeat(20_000),
            "z".repeat(200_000)
        );
        let mut at = 0;
        while at < text.len() {
            let b = next_block(&text, at, BLOCK_BYTES);
            assert_eq!(b.range.start, at);
            assert!(b.range.len() <= BLOCK_BYTES || b.run.is_some());
            at = b.range.end;
        }
    }

    #[test]
    fn a_long_text_normalises_block_by_block_with_spans_into_the_input() {
        let sentence = "Dr. Smith paid $3.50 on 12 May. ";
        let text = sentence.repeat(3 * BLOCK_BYTES / sentence.len());
        let n = normalize(&text, &NormalizeOptions::default());
        let one = norm(sentence);
        assert_eq!(
            n.text.matches(&one[..one.len() - 1]).count(),
            3 * BLOCK_BYTES / sentence.len()
        );
        for w in n.spans.windows(2) {
            assert!(w[0].src.end <= w[1].src.start && w[0].out.end <= w[1].out.start);
        }
        assert!(n.spans.last().unwrap().src.end <= text.len());
    }
}
