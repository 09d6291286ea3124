//! Subtitle files (WebVTT, SubRip) as any bytes: parsing never panics, cues come in time
//! order within their bounds, and a timeline over them, run on a simulated clock, says each
//! cue at most once at a speed within the limits.
#![no_main]

use hark_sources::subtitles::{
    Action, Limits, MAX_CUE_BYTES, MAX_CUES, Overflow, Position, Timeline, parse,
};
use libfuzzer_sys::fuzz_target;
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let cues = parse(&text);
    assert!(cues.len() <= MAX_CUES);
    for c in &cues {
        assert!(
            !c.text.is_empty() && c.text.len() <= MAX_CUE_BYTES,
            "{:?}",
            c.text
        );
        assert!(c.end >= c.start);
        assert!(!c.text.contains('\n'));
    }
    assert!(cues.windows(2).all(|w| w[0].start <= w[1].start));
    let Some(last) = cues.last().map(|c| c.end) else {
        return;
    };
    let limits = Limits {
        speed: 1.0,
        max_speed: 3.0,
    };
    let mut t = Timeline::new(cues.clone(), limits, Overflow::Shorten);
    let mut said = std::collections::HashSet::new();
    let mut media = Duration::ZERO;
    // Steps of 250 ms up to the last cue's end (at most a few thousand polls).
    let step = Duration::from_millis(250).max(last / 4000);
    while media <= last + step {
        let mut length = |s: &str| Duration::from_millis(60 * s.len() as u64);
        for a in t.poll(Position::at(media), &mut length) {
            if let Action::Speak { cue, speed, .. } = a {
                assert!(said.insert(cue), "cue {cue} said twice");
                assert!((1.0..=3.0).contains(&speed), "{speed}");
            }
        }
        media += step;
    }
});
