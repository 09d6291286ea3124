//! Property tests: any input → no panic, only speakable output, segments that tile the input
//! on char boundaries, a span map that stays inside the input.

use hark_text::normalize::{NormalizeOptions, PunctuationVerbosity, is_speakable, normalize};
use hark_text::segment::{SegmentOptions, segments};
use proptest::prelude::*;

/// Pieces that trigger the rules, glued in random order.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{1,12}",
        "[A-Z]{1,6}",
        "[a-z]{1,8}",
        Just(" ".to_string()),
        Just("\n".to_string()),
        Just("\n\n".to_string()),
        prop::sample::select(vec![
            ".", ",", ":", ";", "-", "–", "/", "$", "€", "£", "%", "°", "#", "@", "&", "+", "=",
            "*", "_", "`", "```", "[", "]", "(", ")", "!", "?", "...", "…", "'", "\"", "½", "²",
            "👍", "🇫🇷", "\u{200D}", "\u{FE0F}", "Mr.", "St.", "e.g.", "https://", "www.", ".com",
            "pm", "a.m.", "Nov", "Chapter", "II", "I", "x", "km", "USD", "0x", "<br>", "- ", "# ",
            "1. ", "ﬁ", "Ⅻ", "\u{0301}", "\r", "\t", "\u{0}", "\u{FFFD}",
        ])
        .prop_map(str::to_string),
    ]
}

fn glued() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..40).prop_map(|v| v.concat())
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "\\PC{0,200}", glued()]
}

fn opts() -> impl Strategy<Value = NormalizeOptions> {
    prop::sample::select(vec![
        PunctuationVerbosity::None,
        PunctuationVerbosity::Some,
        PunctuationVerbosity::Most,
        PunctuationVerbosity::All,
    ])
    .prop_map(|verbosity| NormalizeOptions {
        verbosity,
        ..Default::default()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn output_is_speakable(text in any_text(), o in opts()) {
        let n = normalize(&text, &o);
        let bad: Vec<char> = n.text.chars().filter(|&c| !is_speakable(c)).collect();
        prop_assert!(bad.is_empty(), "unspeakable {bad:?}");
        prop_assert!(!n.text.chars().any(|c| c.is_ascii_digit()));
        let mut last = 0;
        for s in &n.spans {
            prop_assert!(s.src.start <= s.src.end && s.src.end <= text.len());
            prop_assert!(text.is_char_boundary(s.src.start) && text.is_char_boundary(s.src.end));
            prop_assert!(s.src.start >= last, "spans go backwards");
            last = s.src.start;
            prop_assert!(s.out.end <= n.text.len());
        }
    }

    #[test]
    fn segments_tile_the_input(text in any_text(), first in 8usize..80, max in 8usize..300) {
        let o = SegmentOptions { first_max_chars: first, max_chars: max, ..Default::default() };
        let segs = segments(&text, &o);
        let mut at = 0;
        for s in &segs {
            prop_assert_eq!(s.range.start, at);
            prop_assert!(s.range.end >= s.range.start);
            prop_assert!(text.is_char_boundary(s.range.end));
            prop_assert!(s.text.chars().any(char::is_alphabetic));
            prop_assert!(s.text.chars().all(is_speakable));
            at = s.range.end;
        }
        if !segs.is_empty() {
            prop_assert_eq!(at, text.len());
        }
        // Nothing speakable is lost: the segments hold all the normalised words that have a
        // letter (a lone combining mark, say, is not a word and no segment is made for it).
        let joined: Vec<String> = segs.iter().map(|s| s.text.clone()).collect();
        let all = normalize(&text, &o.normalize).text;
        let joined = joined.join(" ");
        let has_letter = |w: &&str| w.chars().any(char::is_alphabetic);
        let a: Vec<&str> = joined.split_whitespace().filter(has_letter).collect();
        let b: Vec<&str> = all.split_whitespace().filter(has_letter).collect();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn deterministic(text in glued()) {
        let o = NormalizeOptions::default();
        prop_assert_eq!(normalize(&text, &o), normalize(&text, &o));
    }
}
