//! Real-audio helpers: recording the CI null sink's monitor and comparing signals.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const REC_RATE: usize = 48_000;

/// True when a sound server with the `ci_sink` null sink is up (HARK_AUDIO_TESTS=1); otherwise
/// prints the visible skip line.
pub fn audio_tests_enabled() -> bool {
    if std::env::var("HARK_AUDIO_TESTS").as_deref() == Ok("1") {
        return true;
    }
    eprintln!(
        "skipped: no sound server (source scripts/start-audio.sh and set HARK_AUDIO_TESTS=1)"
    );
    false
}

/// Records `ci_sink.monitor` (48 kHz stereo s16) until `stop`.
pub struct Recorder {
    child: Child,
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl Recorder {
    pub fn start() -> Self {
        Self::start_on(&[], "ci_sink.monitor")
    }

    /// Records `device` with extra environment (another sound server's XDG_RUNTIME_DIR).
    pub fn start_on(env: &[(&str, &std::ffi::OsStr)], device: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("rec.raw");
        let child = Command::new("parec")
            .envs(env.iter().copied())
            .arg(format!("--device={device}"))
            .args(["--rate=48000", "--channels=2", "--format=s16le"])
            .args(["--latency-msec=20", "--raw"])
            .stdout(std::fs::File::create(&path).expect("create recording"))
            .stderr(Stdio::inherit())
            .spawn()
            .expect("parec (pulseaudio-utils) must be installed");
        // The recorder is the instrument, not the thing tested: real-time priority where allowed
        // (root in CI), so a busy machine does not make it miss samples as the sound server's
        // own threads (which PipeWire runs real-time) never do.
        let _ = Command::new("chrt")
            .args(["--all-tasks", "--fifo", "--pid", "20"])
            .arg(child.id().to_string())
            .stderr(Stdio::null())
            .status();
        // Nothing plays until the recording runs: 400 ms of it on file (a fixed sleep was too
        // short for parec to connect on a loaded runner, and the speech's start went missing).
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let running = REC_RATE as u64 * 4 * 2 / 5;
        while std::fs::metadata(&path).map_or(0, |m| m.len()) < running
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child,
            _dir: dir,
            path,
        }
    }

    /// Stops after a short tail; returns mono samples at 48 kHz.
    pub fn stop(mut self) -> Vec<f32> {
        std::thread::sleep(Duration::from_millis(400));
        Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .ok();
        self.child.wait().ok();
        let bytes = std::fs::read(&self.path).expect("read recording");
        bytes
            .chunks_exact(4)
            .map(|f| {
                let l = i16::from_le_bytes([f[0], f[1]]) as f32;
                let r = i16::from_le_bytes([f[2], f[3]]) as f32;
                (l + r) / 2.0 / 32768.0
            })
            .collect()
    }
}

/// The device buffer the tests of what reaches the sink ask for (HARK_AUDIO_BUFFER_MS), where
/// the latency tests keep the 10 ms default. Hark's 10 ms buffer has ALSA periods of 2.5 ms,
/// so PipeWire runs the whole graph (null sink, monitor, recorder) in 128-frame cycles; a
/// 2-core runner then drops whole cycles in the server (exact zeros in place of speech that
/// Hark's callback did hand over, seen on stop 34 by tapping the callback), which no engine
/// fix can prevent. 40 ms gives ALSA periods of 10 ms, as docs/STREAMING.md advises for
/// such systems; the engine's path is the same.
pub const INTEGRITY_BUFFER_MS: u32 = 40;

/// Records while `args` run through the hark binary (which must succeed), at the
/// [`INTEGRITY_BUFFER_MS`] device buffer.
pub fn record_while(hark: &str, args: &[&str], voices: &std::path::Path) -> Vec<f32> {
    let rec = Recorder::start();
    let out = Command::new(hark)
        .args(args)
        .env("HARK_VOICES_DIR", voices)
        .env("HARK_AUDIO_BUFFER_MS", INTEGRITY_BUFFER_MS.to_string())
        .output()
        .expect("run hark");
    assert!(
        out.status.success(),
        "hark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    rec.stop()
}

/// Linear-interpolation resampling; plenty for a correlation check.
pub fn resample_linear(x: &[f32], from: usize, to: usize) -> Vec<f32> {
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

pub fn normalised_correlation(a: &[f32], b: &[f32]) -> f64 {
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

/// Best normalised correlation of `reference` against `recording[from..to]` over all lags (a
/// coarse search on 8× decimated signals, then a fine one around the best): (lag, corr).
pub fn best_alignment_in(
    reference: &[f32],
    recording: &[f32],
    from: usize,
    to: usize,
) -> (usize, f64) {
    let to = to.min(recording.len());
    assert!(
        to > from && to - from > reference.len(),
        "recording shorter than the speech"
    );
    let decimate =
        |x: &[f32]| -> Vec<f32> { x.chunks(8).map(|c| c.iter().sum::<f32>() / 8.0).collect() };
    let (r8, s8) = (decimate(reference), decimate(&recording[from..to]));
    let coarse = (0..=s8.len() - r8.len())
        .map(|lag| (lag, normalised_correlation(&r8, &s8[lag..lag + r8.len()])))
        .fold((0, f64::MIN), |best, c| if c.1 > best.1 { c } else { best });
    let centre = from + coarse.0 * 8;
    let lo = centre.saturating_sub(16).max(from);
    let hi = (centre + 16).min(to - reference.len());
    (lo..=hi)
        .map(|lag| {
            (
                lag,
                normalised_correlation(reference, &recording[lag..lag + reference.len()]),
            )
        })
        .fold((0, f64::MIN), |best, c| if c.1 > best.1 { c } else { best })
}

pub fn best_alignment(reference: &[f32], recording: &[f32]) -> (usize, f64) {
    best_alignment_in(reference, recording, 0, recording.len())
}

/// True when at least 90% of the windows correlate ≥ 0.9 and their mean is ≥ 0.9.
pub fn windows_match(windows: &[f64]) -> bool {
    let good = windows.iter().filter(|&&c| c >= 0.9).count();
    let mean = windows.iter().sum::<f64>() / windows.len().max(1) as f64;
    !windows.is_empty() && good * 10 >= windows.len() * 9 && mean >= 0.9
}

/// Digital silence as the recording holds it: a sample that rounds to 0 in 16 bits.
fn digitally_silent(s: f32) -> bool {
    (s * 32768.0).round() == 0.0
}

/// The shortest run of digital silence that is not speech: 2 ms (speech never holds one).
pub const SILENCE_RUN: usize = REC_RATE / 500;

/// The longest run of samples of `x` that are digital silence.
pub fn longest_digital_silence(x: &[f32]) -> usize {
    let (mut best, mut run) = (0, 0);
    for &s in x {
        run = if digitally_silent(s) { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// `x` without its runs of digital silence at least `min_run` samples long, and how many
/// samples went. An underrun (the engine's or the sound server's) and a pause insert such
/// runs; speech never holds one of 2 ms (checked on the reference, which loses none), so what
/// is left is the speech alone, and comparing it with the reference's finds lost or repeated
/// samples while the silence a busy machine inserts is not counted as either.
pub fn without_digital_silence(x: &[f32], min_run: usize) -> (Vec<f32>, usize) {
    let mut out = Vec::with_capacity(x.len());
    let mut run = 0..0;
    for (i, &s) in x.iter().enumerate() {
        if digitally_silent(s) {
            if run.is_empty() {
                run = i..i;
            }
            run.end = i + 1;
            continue;
        }
        if run.len() < min_run {
            out.extend_from_slice(&x[run.clone()]);
        }
        run = i..i;
        out.push(s);
    }
    if run.len() < min_run {
        out.extend_from_slice(&x[run]);
    }
    let removed = x.len() - out.len();
    (out, removed)
}

pub fn rms(x: &[f32]) -> f32 {
    (x.iter().map(|s| s * s).sum::<f32>() / x.len().max(1) as f32).sqrt()
}

/// Matches `reference` against `recording` near `lag` in 50 ms windows, each allowed to slip
/// up to ±30 ms from the one before: on a busy machine the sound server's own buffers can
/// drop or repeat a period (alsa-lib logs "underrun occurred"), which shifts everything after
/// it without changing what Hark sent. Returns the correlation of each window that has sound
/// in the reference, and the lag at the end of the reference.
pub fn piecewise_match(reference: &[f32], recording: &[f32], lag: usize) -> (Vec<f64>, usize) {
    const WIN: usize = REC_RATE / 20;
    const SLIP: isize = (REC_RATE * 3 / 100) as isize;
    // An underrun on a loaded machine inserts silence: the rest of the speech then comes later,
    // intact and in order. A window that meets silence where its speech should be is looked for
    // up to this far ahead (never behind, so reordered or repeated audio still fails).
    const GAP: isize = (REC_RATE / 2) as isize;
    let mut lag = lag as isize;
    let mut corrs = Vec::new();
    let best_in = |r: &[f32], lag: isize, k: usize, lo: isize, hi: isize| {
        (lo..=hi)
            .filter_map(|d| {
                let at = lag + d + k as isize;
                (at >= 0 && at as usize + WIN <= recording.len()).then(|| {
                    (
                        d,
                        normalised_correlation(r, &recording[at as usize..at as usize + WIN]),
                    )
                })
            })
            .fold((0, f64::MIN), |b, c| if c.1 > b.1 { c } else { b })
    };
    for k in (0..reference.len().saturating_sub(WIN)).step_by(WIN) {
        let r = &reference[k..k + WIN];
        if rms(r) < 0.01 {
            continue;
        }
        let mut best = best_in(r, lag, k, -SLIP, SLIP);
        if best.1 < 0.9 {
            let at =
                (lag + k as isize).clamp(0, recording.len().saturating_sub(WIN) as isize) as usize;
            let quiet = rms(&recording[at..(at + WIN).min(recording.len())]) < rms(r) / 10.0;
            if quiet {
                let ahead = best_in(r, lag, k, SLIP, GAP);
                if ahead.1 >= 0.9 {
                    best = ahead;
                }
            }
        }
        lag += best.0;
        corrs.push(best.1);
    }
    (corrs, (lag.max(0) as usize) + reference.len())
}

/// Runs a recording check up to three times. On a shared machine the sound server
/// occasionally drops or inserts a period under load (alsa-lib: "underrun occurred"), which
/// no engine fix can prevent; a real defect fails every attempt. Each failed attempt's
/// message is printed.
pub fn retry(check: impl Fn()) {
    const ATTEMPTS: usize = 3;
    for attempt in 1..=ATTEMPTS {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(&check)) {
            Ok(()) => return,
            Err(e) if attempt == ATTEMPTS => std::panic::resume_unwind(e),
            Err(_) => eprintln!("attempt {attempt} failed (message above); trying again"),
        }
    }
}

/// Restarts the CI sound server (`scripts/start-sound-server.sh`), so the check after it
/// begins on a fresh one; does nothing where the server is not the one that script started
/// (no pid file in XDG_RUNTIME_DIR), so a developer's own sound server is never touched. Seen
/// on stop 34 (cause not established): a PipeWire 0.3.65 that had been up for minutes dropped
/// 128-frame cycles (exact zeros in place of speech Hark's callback did hand over, 20 to 60
/// per 4 s utterance), where the first three runs after each of three starts were clean.
pub fn fresh_sound_server() {
    if !ci_sound_server() {
        return;
    }
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/start-sound-server.sh");
    let ok = Command::new("bash")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "could not restart the CI sound server");
}

/// True when the sound server is the one the tests started ([`fresh_sound_server`] can
/// restart it, and a test may change its settings), never a developer's own.
pub fn ci_sound_server() -> bool {
    std::env::var_os("XDG_RUNTIME_DIR")
        .is_some_and(|d| std::path::Path::new(&d).join("pipewire.pid").exists())
}

/// PipeWire's graph forced to cycles of `frames` (`clock.force-quantum`) until dropped, as a
/// user's setting, a Bluetooth output or a JACK program can make it. Only on the CI server.
pub struct ForcedQuantum;

impl ForcedQuantum {
    pub fn set(frames: u32) -> Self {
        let ok = Command::new("pw-metadata")
            .args([
                "-n",
                "settings",
                "0",
                "clock.force-quantum",
                &frames.to_string(),
            ])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "pw-metadata could not set the quantum");
        // The graph takes the new quantum at its next cycles.
        std::thread::sleep(Duration::from_millis(200));
        ForcedQuantum
    }
}

impl Drop for ForcedQuantum {
    fn drop(&mut self) {
        let _ = Command::new("pw-metadata")
            .args(["-n", "settings", "0", "clock.force-quantum", "0"])
            .stdout(Stdio::null())
            .status();
    }
}

/// [`retry`], each attempt on a fresh CI sound server ([`fresh_sound_server`]).
pub fn retry_on_fresh_server(check: impl Fn()) {
    retry(|| {
        fresh_sound_server();
        check()
    })
}

/// Deterministic flags (no noise) shared by a reference WAV and the playback compared with it.
pub const DETERMINISTIC: [&str; 4] = ["--noise-scale", "0", "--noise-w", "0"];

/// Hark's own deterministic WAV of `text` (`hark speak --out … --format f32`), resampled to the
/// recording rate: the reference a recording from the sink is matched against.
pub fn cli_reference(hark: &str, voices: &std::path::Path, text: &str) -> Vec<f32> {
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = dir.path().join("ref.wav");
    let mut args = vec![
        "speak",
        "--out",
        wav.to_str().expect("path"),
        "--format",
        "f32",
    ];
    args.extend(DETERMINISTIC);
    args.push(text);
    let o = Command::new(hark)
        .args(&args)
        .env("HARK_VOICES_DIR", voices)
        .output()
        .expect("hark");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (rate, reference) = super::read_wav(&wav);
    resample_linear(&reference, rate as usize, REC_RATE)
}
