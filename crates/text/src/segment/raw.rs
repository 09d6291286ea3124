//! Raw-text segments (normalisation off): sentences as espeak-ng would cut them, with a long
//! first sentence cut at its first clause boundary so the first audio comes quickly while the
//! clause keeps its prosody.

use super::Segment;

/// Longest sentence phonemised in one go.
const MAX_SENTENCE_CHARS: usize = 2000;
/// …a first clause is not cut off before this many characters, so it is still a phrase.
const FIRST_MIN_CHARS: usize = 12;

/// Raw-text segments of `text`; `first_max_chars`: a first sentence longer than this is cut
/// at its first clause boundary (`None`: not cut).
pub(super) fn segments(text: &str, first_max_chars: Option<usize>) -> Vec<Segment> {
    let mut out = Vec::new();
    for (i, range) in crate::split_sentences(text, MAX_SENTENCE_CHARS)
        .into_iter()
        .enumerate()
    {
        let cut = first_max_chars
            .filter(|_| i == 0)
            .and_then(|max| first_clause_end(&text[range.clone()], max));
        match cut {
            Some(c) => {
                let mid = range.start + c;
                out.push(range.start..mid);
                out.push(mid..range.end);
            }
            None => out.push(range),
        }
    }
    out.into_iter()
        .map(|range| Segment {
            text: text[range.clone()].to_string(),
            spans: token_spans(&text[range.clone()], range.start),
            range,
        })
        .collect()
}

/// Verbatim text: one span per whitespace-separated token, at offset `base` in the input.
fn token_spans(text: &str, base: usize) -> Vec<super::Span> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (c.is_whitespace(), start) {
            (true, Some(a)) => {
                spans.push(super::Span {
                    out: a..i,
                    src: base + a..base + i,
                });
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    spans
}

/// Byte offset just after the first clause of a sentence longer than `max_chars` (after `,`
/// `;` `:` and the whitespace that follows), or `None` when the sentence is short or has no
/// such boundary.
fn first_clause_end(sentence: &str, max_chars: usize) -> Option<usize> {
    if sentence.chars().count() <= max_chars {
        return None;
    }
    let mut chars = sentence.char_indices().peekable();
    let mut count = 0;
    while let Some((_, c)) = chars.next() {
        count += 1;
        let next_is_space = chars.peek().is_some_and(|&(_, n)| n.is_whitespace());
        if matches!(c, ',' | ';' | ':') && next_is_space && count >= FIRST_MIN_CHARS {
            // Keep the whitespace with the first clause; cut where the next word starts.
            while let Some(&(j, n)) = chars.peek() {
                if !n.is_whitespace() {
                    return Some(j);
                }
                chars.next();
            }
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FIRST: Option<usize> = Some(60);

    #[test]
    fn long_first_sentence_is_cut_after_its_first_clause() {
        let t = "The quick brown fox jumps over the lazy dog, while the old farmer watches from his porch. Then rain, at last, came.";
        let s = segments(t, FIRST);
        assert_eq!(s[0].text, "The quick brown fox jumps over the lazy dog, ");
        assert!(s[1].text.starts_with("while"));
        // Only the first sentence is cut.
        assert_eq!(
            s.last().map(|x| x.text.as_str()),
            Some("Then rain, at last, came.")
        );
        assert_eq!(segments(t, None)[0].range, 0..s[1].range.end);
    }

    #[test]
    fn short_first_sentence_and_decimals_are_not_cut() {
        assert_eq!(segments("Hello, world.", FIRST).len(), 1);
        let t =
            "It costs 1,000 dollars and the whole sentence is rather long without a clause break.";
        assert_eq!(segments(t, FIRST).len(), 1);
    }

    proptest! {
        #[test]
        fn segments_tile_the_text_on_word_boundaries(t in "[a-z ,.;:!?\n]{0,200}") {
            let s = segments(&t, FIRST);
            let mut at = 0;
            for seg in &s {
                prop_assert_eq!(seg.range.start, at);
                prop_assert_eq!(&t[seg.range.clone()], seg.text.as_str());
                // Never mid-word: a cut is preceded by whitespace or punctuation.
                if at > 0 {
                    let prev = t[..at].chars().last().unwrap_or(' ');
                    prop_assert!(!prev.is_alphanumeric(), "cut mid-word at {at}");
                }
                at = seg.range.end;
            }
            prop_assert_eq!(at, t.len());
        }
    }
}
