//! `hark speak --ssml --out`: what SSML changes in the audio (breaks, rate, pitch, volume),
//! measured on the real voice with zero noise.

use super::cli_speak::speak_to_wav;
use testkit::installed_voices_dir;

const HARK: &str = env!("CARGO_BIN_EXE_hark");
const RATE: f64 = 22_050.0;
const TEXT: &str = "The birch canoe slid on the smooth planks.";
const QUIET: [&str; 4] = ["--noise-scale", "0", "--noise-w", "0"];

fn ssml(voices: &std::path::Path, doc: &str) -> Vec<f32> {
    let mut args = QUIET.to_vec();
    args.push("--ssml");
    speak_to_wav(voices, &args, doc)
}

/// TEXT inside `<prosody ATTRS>`.
fn prosody(voices: &std::path::Path, attrs: &str) -> Vec<f32> {
    ssml(
        voices,
        &format!("<speak><prosody {attrs}>{TEXT}</prosody></speak>"),
    )
}

fn rms(s: &[f32]) -> f64 {
    (s.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / s.len().max(1) as f64).sqrt()
}

/// The median pitch of the voiced 40 ms frames (autocorrelation, 70–400 Hz).
fn median_f0(s: &[f32]) -> f64 {
    let n = (0.04 * RATE) as usize;
    let (lo, hi) = ((RATE / 400.0) as usize, (RATE / 70.0) as usize);
    let mut f0s = Vec::new();
    for frame in s.chunks_exact(n) {
        if rms(frame) < 0.02 {
            continue;
        }
        let energy: f64 = frame.iter().map(|&v| (v as f64).powi(2)).sum();
        let (lag, r) = (lo..hi)
            .map(|lag| {
                let r: f64 = frame[lag..]
                    .iter()
                    .zip(frame)
                    .map(|(&a, &b)| a as f64 * b as f64)
                    .sum();
                (lag, r / energy)
            })
            .fold((0, f64::MIN), |a, b| if b.1 > a.1 { b } else { a });
        if r > 0.5 {
            f0s.push(RATE / lag as f64);
        }
    }
    assert!(f0s.len() >= 5, "too few voiced frames: {}", f0s.len());
    f0s.sort_by(f64::total_cmp);
    f0s[f0s.len() / 2]
}

#[test]
fn ssml_breaks_rate_pitch_and_volume_change_the_audio_as_asked() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let plain = ssml(voices, &format!("<speak>{TEXT}</speak>"));
    // A break is that much silence, between the two halves.
    let broken = ssml(
        voices,
        "<speak>The birch canoe slid<break time=\"700ms\"/> on the smooth planks.</speak>",
    );
    let extra = (broken.len() as f64 - plain.len() as f64) / RATE;
    assert!(
        (0.55..1.0).contains(&extra),
        "the break added {extra:.2} s (700 ms asked; the halves are cut as two sentences)"
    );
    // Twice the rate: clearly shorter.
    let fast = prosody(voices, "rate=\"200%\"");
    let ratio = plain.len() as f64 / fast.len() as f64;
    assert!(
        (1.4..2.3).contains(&ratio),
        "200% rate: {ratio:.2}× shorter"
    );
    // Four semitones up: the pitch moves by 2^(4/12), the length stays.
    let high = prosody(voices, "pitch=\"+4st\"");
    let (f_plain, f_high) = (median_f0(&plain), median_f0(&high));
    let want = 2f64.powf(4.0 / 12.0);
    eprintln!(
        "pitch: {f_plain:.0} Hz → {f_high:.0} Hz (×{:.3}, want ×{want:.3}); length ×{:.3}",
        f_high / f_plain,
        high.len() as f64 / plain.len() as f64
    );
    assert!(
        (f_high / f_plain / want - 1.0).abs() < 0.08,
        "+4 st: {f_plain:.0} → {f_high:.0} Hz"
    );
    let len = high.len() as f64 / plain.len() as f64;
    assert!(
        (0.85..1.15).contains(&len),
        "+4 st changed the length ×{len:.2}"
    );
    // −6 dB: half the amplitude.
    let soft = prosody(voices, "volume=\"-6dB\"");
    let gain = rms(&soft) / rms(&plain);
    assert!((0.45..0.56).contains(&gain), "-6 dB: ×{gain:.2}");
}
