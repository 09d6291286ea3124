//! `hark bench --normalize`: the normaliser and segmenter on 1 MB of mixed text. Time must
//! grow linearly with the input; the target is under 1 s for 1 MB.

use hark_text::normalize::{NormalizeOptions, normalize};
use hark_text::segment::{SegmentOptions, segments};
use std::time::Instant;

/// A paragraph touching most rules; repeated to 1 MB.
const SAMPLE: &str = "Mr. Smith paid $1,234.56 on Nov 29, 2026 at 6:15 pm for 3.5 kg of apples \
(about 20% off). Dr. Jones, who lives at 221B Baker St., read Chapter IV of World War II \
history. The FBI and NASA met at https://www.example.com/path?q=1; e-mail jane.doe@example.org. \
Call +1 555-123-4567! It was -5°C, i.e. cold... Version 1.5.2 fixed bug #42 in 3f2a9c1b4d5e6f7a8b9c. \
- item one\n- item **two** 👍 🔥\n\n## Heading\n\n```\nlet x = a + b * 2;\n```\n";

pub fn run(json: bool) -> anyhow::Result<()> {
    let mut text = String::with_capacity(1 << 20);
    while text.len() < 1 << 20 {
        text.push_str(SAMPLE);
    }
    let opts = NormalizeOptions::default();
    // Two sizes, to show that time is linear in the input.
    let mut cut = text.len() / 2;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let half = &text[..cut];
    let time = |t: &str| {
        let t0 = Instant::now();
        let n = normalize(t, &opts);
        (t0.elapsed().as_secs_f64(), n.text.len())
    };
    let _ = time(&text[..4096]);
    let (t_half, _) = time(half);
    let (t_full, out_len) = time(&text);
    let t0 = Instant::now();
    let segs = segments(&text, &SegmentOptions::default());
    let t_seg = t0.elapsed().as_secs_f64();
    let report = serde_json::json!({
        "input_bytes": text.len(),
        "output_bytes": out_len,
        "normalize_s": t_full,
        "normalize_half_s": t_half,
        "linearity_full_over_half": t_full / t_half.max(1e-9),
        "segments": segs.len(),
        "normalize_and_segment_s": t_seg,
        "target_s": 1.0,
    });
    if !json {
        println!(
            "normalise 1 MB: {t_full:.3} s (half: {t_half:.3} s, ratio {:.2}); normalise + segment: {t_seg:.3} s, {} segments",
            t_full / t_half.max(1e-9),
            segs.len()
        );
    }
    println!("{report}");
    Ok(())
}
