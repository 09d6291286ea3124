//! Real audio: `hark speak` plays through the default device (a PipeWire null sink in CI) and
//! what reaches the sink matches Hark's own WAV of the same text.
//! Needs a sound server: `.ci/run` starts one and sets HARK_AUDIO_TESTS=1.

use std::process::Command;
use testkit::audio::{
    DETERMINISTIC, ForcedQuantum, Recorder, audio_tests_enabled, best_alignment, ci_sound_server,
    cli_reference, piecewise_match, record_while, retry_on_fresh_server, windows_match,
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

/// A sound server that runs in longer cycles than Hark's 10 ms buffer (PipeWire forced to
/// 1024 frames): a 480-frame buffer is played dry every cycle, and before Hark grew its buffer
/// the sink heard 745 gaps in 4 s of speech (stop 34). Hark sees its buffer drained at start
/// and reopens a larger one, and the speech reaches the sink.
#[test]
fn a_server_cycle_longer_than_the_buffer_gets_a_larger_buffer() {
    if !audio_tests_enabled() {
        return;
    }
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    if !ci_sound_server() {
        eprintln!("skipped: not the tests' own sound server, whose settings this test changes");
        return;
    }
    let _sink = crate::sink_lock();
    let text = "Hello from Hark. This sentence is played through the speakers.";
    let reference = cli_reference(HARK, voices, text);
    retry_on_fresh_server(|| {
        let _quantum = ForcedQuantum::set(1024);
        let rec = Recorder::start();
        // Hark's own default buffer: no HARK_AUDIO_BUFFER_MS.
        let out = Command::new(HARK)
            .arg("speak")
            .args(DETERMINISTIC)
            .arg(text)
            .env("HARK_VOICES_DIR", voices)
            .env("RUST_LOG", "hark_audio=info")
            .env("NO_COLOR", "1")
            .output()
            .expect("run hark");
        let recording = rec.stop();
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "hark failed: {log}");
        let opened: Vec<&str> = log.lines().filter(|l| l.contains("audio out:")).collect();
        let (lag, _) = best_alignment(&reference, &recording);
        let (windows, _) = piecewise_match(&reference, &recording, lag);
        let mean = windows.iter().sum::<f64>() / windows.len().max(1) as f64;
        eprintln!("{opened:?}; window mean {mean:.3}");
        assert!(
            windows_match(&windows),
            "the sink's audio does not match Hark's WAV (window mean {mean:.3})"
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
