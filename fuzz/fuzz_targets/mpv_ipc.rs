//! mpv's IPC messages as any bytes: parsing never panics and every JSON object is read as some
//! message.
#![no_main]

use hark_sources::mpv::parse_message;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let parsed = parse_message(line);
        let is_object =
            serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v.is_object());
        assert_eq!(
            parsed.is_some(),
            is_object && line.len() <= 256 * 1024,
            "{line:?}"
        );
    }
});
