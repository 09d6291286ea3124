//! The SSML parser (hark_text::ssml): any bytes, as speech-dispatcher or a client may send
//! them. It must never panic, and what it returns must hold together: prosody within its
//! limits, breaks no longer than the longest, the lenient fallback always a document.
#![no_main]
use hark_text::ssml::{self, Item, MAX_BREAK_MS, Prosody};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = ssml::looks_like_ssml(&text);
    let (doc, _err) = ssml::parse_lenient(&text);
    for item in &doc.items {
        match item {
            Item::Text { prosody, .. } | Item::Ipa { prosody, .. } => {
                assert!((Prosody::MIN_RATE..=Prosody::MAX_RATE).contains(&prosody.rate));
                assert!(prosody.pitch.abs() <= Prosody::MAX_PITCH);
                assert!((0.0..=Prosody::MAX_VOLUME).contains(&prosody.volume));
            }
            Item::Break { ms } => assert!(*ms <= MAX_BREAK_MS),
            Item::Mark { name } => assert!(name.len() <= 256),
        }
    }
    let _ = doc.is_empty();
    let _ = doc.text();
    // Spelling any text out never panics either.
    if text.len() < 256 {
        let _ = ssml::spell(&text);
    }
});
