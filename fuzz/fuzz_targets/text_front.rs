//! Normaliser + segmenter + espeak phonemiser on arbitrary bytes: no panic, no crash, only
//! speakable output, segments that tile the input.
#![no_main]

use hark_text::normalize::{
    DateOrder, EmojiMode, NormalizeOptions, PunctuationVerbosity, UrlMode, is_speakable,
};
use hark_text::segment::{SegmentOptions, segments};
use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        // A machine without this build's folder (the device host) names espeak-ng's data.
        if let Some(dir) = std::env::var_os("HARK_ESPEAK_DATA") {
            hark_text::espeak::set_data_dir(dir.into());
        }
    },
    |data: &[u8]| {
        let Some((&flags, rest)) = data.split_first() else {
            return;
        };
        let text = String::from_utf8_lossy(rest);
        let normalize = NormalizeOptions {
            verbosity: match flags & 3 {
                0 => PunctuationVerbosity::None,
                1 => PunctuationVerbosity::Some,
                2 => PunctuationVerbosity::Most,
                _ => PunctuationVerbosity::All,
            },
            urls: if flags & 4 != 0 {
                UrlMode::Link
            } else {
                UrlMode::Compact
            },
            emoji: if flags & 8 != 0 {
                EmojiMode::Skip
            } else {
                EmojiMode::Name
            },
            date_order: if flags & 16 != 0 {
                Some(DateOrder::MonthDay)
            } else {
                None
            },
            locale: if flags & 32 != 0 {
                "en-us".into()
            } else {
                String::new()
            },
            dictionary: Vec::new(),
        };
        let opts = SegmentOptions {
            normalize,
            first_max_chars: 8 + usize::from(flags >> 5) * 10,
            ..Default::default()
        };
        let segs = segments(&text, &opts);
        let mut at = 0;
        for s in &segs {
            assert_eq!(s.range.start, at);
            assert!(text.is_char_boundary(s.range.end));
            assert!(s.text.chars().all(is_speakable));
            at = s.range.end;
            // espeak is slow: phonemise short inputs only.
            if text.len() <= 512 {
                hark_text::phonemize(&s.text, "en-us").expect("phonemise normalised text");
            }
        }
        if !segs.is_empty() {
            assert_eq!(at, text.len());
        }
    }
);
