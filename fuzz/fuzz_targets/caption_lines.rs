//! The caption follower's line handling on arbitrary bytes arriving in arbitrary chunks (the
//! first byte seeds the chunk sizes): the same lines whatever the chunking, no line longer
//! than the limit, and the bytes held back stay bounded.
#![no_main]

use hark_sources::caption::{MAX_LINE_BYTES, drain_lines};
use libfuzzer_sys::fuzz_target;

fn lines_of(data: &[u8], mut sizes: impl FnMut() -> usize) -> Vec<String> {
    let mut partial = Vec::new();
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let n = sizes().clamp(1, data.len() - at);
        partial.extend_from_slice(&data[at..at + n]);
        at += n;
        drain_lines(&mut partial, &mut |l: &str| out.push(l.to_string()));
        assert!(
            partial.len() <= MAX_LINE_BYTES,
            "{} bytes held back",
            partial.len()
        );
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, rest)) = data.split_first() else {
        return;
    };
    let mut state = u32::from(seed) | 1;
    let chunked = lines_of(rest, || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state % 97) as usize + 1
    });
    let whole = lines_of(rest, || usize::MAX);
    for l in &chunked {
        assert!(!l.contains('\n') && !l.trim().is_empty());
        // Invalid UTF-8 bytes become U+FFFD (three bytes) each.
        assert!(l.len() <= 3 * MAX_LINE_BYTES, "a line of {} bytes", l.len());
    }
    // Chunking may only move where an over-long line is cut.
    if !rest
        .split(|&b| b == b'\n')
        .any(|l| l.len() > MAX_LINE_BYTES / 2)
    {
        assert_eq!(chunked, whole);
    }
});
