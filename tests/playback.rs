//! Real audio: `hark speak` plays through the default device (a PipeWire null sink in CI) and
//! what reaches the sink matches Hark's own WAV of the same text.
//! Needs a sound server: `.ci/run` starts one and sets HARK_AUDIO_TESTS=1.
mod common;

use common::{installed_voices_dir, read_wav};
use std::process::{Command, Stdio};
use std::time::Duration;

const HARK: &str = env!("CARGO_BIN_EXE_hark");
const REC_RATE: usize = 48_000;

fn audio_tests_enabled() -> bool {
    if std::env::var("HARK_AUDIO_TESTS").as_deref() == Ok("1") {
        return true;
    }
    eprintln!(
        "skipped: no sound server (source scripts/start-audio.sh and set HARK_AUDIO_TESTS=1)"
    );
    false
}

/// Records the null sink's monitor while `hark speak` plays; returns mono samples at 48 kHz.
fn record_while(args: &[&str], voices: &std::path::Path) -> Vec<f32> {
    let dir = tempfile::tempdir().expect("tempdir");
    let raw = dir.path().join("rec.raw");
    let mut rec = Command::new("parec")
        .args([
            "--device=ci_sink.monitor",
            "--rate=48000",
            "--channels=2",
            "--format=s16le",
        ])
        .args(["--latency-msec=20", "--raw"])
        .stdout(std::fs::File::create(&raw).expect("create recording"))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("parec (pulseaudio-utils) must be installed");
    std::thread::sleep(Duration::from_millis(400));
    let out = Command::new(HARK)
        .args(args)
        .env("HARK_VOICES_DIR", voices)
        .output()
        .expect("run hark");
    assert!(
        out.status.success(),
        "hark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_millis(400));
    Command::new("kill")
        .args(["-INT", &rec.id().to_string()])
        .status()
        .ok();
    rec.wait().ok();
    let bytes = std::fs::read(&raw).expect("read recording");
    bytes
        .chunks_exact(4)
        .map(|f| {
            let l = i16::from_le_bytes([f[0], f[1]]) as f32;
            let r = i16::from_le_bytes([f[2], f[3]]) as f32;
            (l + r) / 2.0 / 32768.0
        })
        .collect()
}

/// Linear-interpolation resampling; plenty for a correlation check.
fn resample_linear(x: &[f32], from: usize, to: usize) -> Vec<f32> {
    let n = x.len() * to / from;
    (0..n)
        .map(|i| {
            let pos = i as f64 * from as f64 / to as f64;
            let j = pos.floor() as usize;
            let frac = (pos - j as f64) as f32;
            let a = x[j.min(x.len() - 1)];
            let b = x[(j + 1).min(x.len() - 1)];
            a + (b - a) * frac
        })
        .collect()
}

fn normalised_correlation(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x as f64) * (*y as f64))
        .sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// Best normalised correlation of `reference` against `recording` over all alignments:
/// a coarse search on 8× decimated signals, then a fine one around the best lag.
fn best_alignment(reference: &[f32], recording: &[f32]) -> (usize, f64) {
    assert!(
        recording.len() > reference.len(),
        "recording shorter than the speech"
    );
    let decimate =
        |x: &[f32]| -> Vec<f32> { x.chunks(8).map(|c| c.iter().sum::<f32>() / 8.0).collect() };
    let (r8, s8) = (decimate(reference), decimate(recording));
    let coarse = (0..=s8.len() - r8.len())
        .map(|lag| (lag, normalised_correlation(&r8, &s8[lag..lag + r8.len()])))
        .fold((0, f64::MIN), |best, c| if c.1 > best.1 { c } else { best });
    let centre = coarse.0 * 8;
    let lo = centre.saturating_sub(16);
    let hi = (centre + 16).min(recording.len() - reference.len());
    (lo..=hi)
        .map(|lag| {
            (
                lag,
                normalised_correlation(reference, &recording[lag..lag + reference.len()]),
            )
        })
        .fold((0, f64::MIN), |best, c| if c.1 > best.1 { c } else { best })
}

#[test]
fn speech_reaches_the_sink_intact() {
    if !audio_tests_enabled() {
        return;
    }
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let text = "Hello from Hark. This sentence is played through the speakers.";
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = dir.path().join("ref.wav");
    let det = ["--noise-scale", "0", "--noise-w", "0"];
    let mut args = vec![
        "speak",
        "--out",
        wav.to_str().expect("path"),
        "--format",
        "f32",
    ];
    args.extend(det);
    args.push(text);
    let o = Command::new(HARK)
        .args(&args)
        .env("HARK_VOICES_DIR", voices)
        .output()
        .expect("hark");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (rate, reference) = read_wav(&wav);
    let reference = resample_linear(&reference, rate as usize, REC_RATE);

    let mut play = vec!["speak"];
    play.extend(det);
    play.push(text);
    let recording = record_while(&play, voices);
    let rms = (recording.iter().map(|s| s * s).sum::<f32>() / recording.len().max(1) as f32).sqrt();
    assert!(rms > 0.005, "the sink heard silence (RMS {rms})");
    let (lag, corr) = best_alignment(&reference, &recording);
    eprintln!(
        "recorded {} samples, lag {lag}, correlation {corr:.4}",
        recording.len()
    );
    assert!(
        corr >= 0.9,
        "recorded audio does not match Hark's WAV: correlation {corr:.3}"
    );
}

#[test]
fn correlation_check_can_fail() {
    // Guard against a check that always passes: unrelated signals must not correlate.
    let a: Vec<f32> = (0..4000).map(|i| (i as f32 * 0.05).sin()).collect();
    let b: Vec<f32> = (0..9000)
        .map(|i| ((i * 7919 % 113) as f32 / 113.0) - 0.5)
        .collect();
    assert!(best_alignment(&a, &b).1 < 0.5);
}
