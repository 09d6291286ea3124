//! Segmenter behaviour on the cases that fool naive sentence splitters.

use hark_text::segment::{Segment, SegmentOptions, segments};

fn texts(text: &str, o: &SegmentOptions) -> Vec<String> {
    segments(text, o).into_iter().map(|s| s.text).collect()
}

fn wide() -> SegmentOptions {
    SegmentOptions {
        first_max_chars: 1000,
        max_chars: 1000,
        ..Default::default()
    }
}

#[test]
fn not_fooled() {
    let cases = [
        (
            "Mr. Smith met Dr. Jones at 3.14 p.m. today. Then they left.",
            2,
        ),
        ("See e.g. the list, i.e. this one. Next.", 2),
        ("J. R. R. Tolkien wrote it. Good.", 2),
        ("Wait... what is it? Nothing.", 2),
        ("He said \"Stop.\" Then left.", 2),
        ("Visit www.example.com. It is fine.", 2),
        ("Version 1.5.2 costs $3.50. Buy it.", 2),
        ("The U.S. economy grew. It was 2.5% in Q3.", 2),
    ];
    for (text, n) in cases {
        let t = texts(text, &wide());
        assert_eq!(t.len(), n, "{text:?} → {t:?}");
    }
}

#[test]
fn ranges_point_at_the_sentences() {
    let text = "Mr. Smith paid $5. Then he left!";
    let segs: Vec<Segment> = segments(text, &wide());
    assert_eq!(segs.len(), 2);
    assert_eq!(&text[segs[0].range.clone()], "Mr. Smith paid $5. ");
    assert_eq!(&text[segs[1].range.clone()], "Then he left!");
    assert_eq!(segs[0].text, "Mister Smith paid five dollars.");
}

#[test]
fn long_sentences_are_cut_at_clauses() {
    let text = "The quick brown fox jumps over the lazy dog, while the old farmer watches from his \
porch and wonders whether the rain will ever come back to the valley before the end of this long, \
dry summer, and the children play in the dust; nobody minds the heat.";
    let o = SegmentOptions {
        first_max_chars: 60,
        max_chars: 80,
        ..Default::default()
    };
    let t = texts(text, &o);
    assert!(t.len() >= 3, "{t:?}");
    // Fast onset: the first segment is the first clause.
    assert_eq!(t[0], "The quick brown fox jumps over the lazy dog,");
    for s in &t {
        assert!(s.chars().count() <= 80, "{s:?}");
    }
    // Never mid-word: every word of the input survives intact.
    let joined = t.join(" ");
    assert!(joined.contains("wonders whether"));
}

#[test]
fn first_segment_without_clause_marks_is_cut_between_words() {
    let text = "Supercalifragilistic words keep going on and on without any commas at all here";
    let o = SegmentOptions {
        first_max_chars: 30,
        max_chars: 200,
        ..Default::default()
    };
    let t = texts(text, &o);
    assert!(t[0].chars().count() <= 30, "{t:?}");
    assert_eq!(t.join(" ").split(' ').count(), text.split(' ').count());
}

#[test]
fn empty_and_silent_inputs() {
    assert!(segments("", &SegmentOptions::default()).is_empty());
    assert!(segments("  \n ** --- ", &SegmentOptions::default()).is_empty());
}
