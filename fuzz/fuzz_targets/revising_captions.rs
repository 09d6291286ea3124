//! The revising-captions protocol, one JSON message per line, as any bytes: a bad line is an
//! error, never a panic, and the words said (stable ones, then the final's rest) never
//! outnumber the words of the messages and come in the order the messages have them.
#![no_main]

use hark_sources::revise::{Stabiliser, parse_line};
use libfuzzer_sys::fuzz_target;
use std::time::{Duration, Instant};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut s = Stabiliser::default();
    let t0 = Instant::now();
    let (mut said, mut line_words, mut max_words) = (0usize, 0usize, 0usize);
    for (i, line) in text.lines().enumerate() {
        let Ok(msg) = parse_line(line) else { continue };
        let now = t0 + Duration::from_millis(100 * i as u64);
        let n = msg.text.split_whitespace().count();
        max_words = max_words.max(n);
        if let Some(words) = s.update(&msg, now) {
            assert!(!words.is_empty());
            line_words += words.split_whitespace().count();
        }
        if let Some(words) = s.tick(now + Duration::from_secs(1)) {
            line_words += words.split_whitespace().count();
        }
        // Within a line, never more words said than its longest message had.
        assert!(line_words <= max_words, "{line_words} said of {max_words}");
        if msg.is_final {
            said += line_words;
            line_words = 0;
            max_words = 0;
        }
    }
    let _ = said;
});
