//! Real audio: `hark speak` plays through the default device (a PipeWire null sink in CI) and
//! what reaches the sink matches Hark's own WAV of the same text.
//! Needs a sound server: `.ci/run` starts one and sets HARK_AUDIO_TESTS=1.

use testkit::audio::{
    DETERMINISTIC, audio_tests_enabled, best_alignment, cli_reference, piecewise_match,
    record_while, retry_on_fresh_server, windows_match,
};
use testkit::installed_voices_dir;

const HARK: &str = env!("CARGO_BIN_EXE_hark");
#[test]
fn speech_reaches_the_sink_intact() {
    if !audio_tests_enabled() {
        return;
    }
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let _sink = crate::sink_lock();
    let text = "Hello from Hark. This sentence is played through the speakers.";
    let reference = cli_reference(HARK, voices, text);
    let det = DETERMINISTIC;

    retry_on_fresh_server(|| {
        let mut play = vec!["speak"];
        play.extend(det);
        play.push(text);
        let recording = record_while(HARK, &play, voices);
        let rms =
            (recording.iter().map(|s| s * s).sum::<f32>() / recording.len().max(1) as f32).sqrt();
        assert!(rms > 0.005, "the sink heard silence (RMS {rms})");
        // Align the start, then follow the speech window by window: the sound server may slip
        // a period on a busy machine without Hark sending anything different.
        let (lag, corr) = best_alignment(&reference, &recording);
        let (windows, _) = piecewise_match(&reference, &recording, lag);
        let mean = windows.iter().sum::<f64>() / windows.len().max(1) as f64;
        eprintln!(
            "recorded {} samples, lag {lag}, start correlation {corr:.4}, window mean {mean:.4}",
            recording.len()
        );
        assert!(
            windows_match(&windows),
            "recorded audio does not match Hark's WAV window by window (mean {mean:.3})"
        );
    });
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
