//! End to end through the `hark` binary: text in, WAV out, compared with onnxruntime running
//! Piper's original ONNX; plus the bad inputs the README promises to handle.

use hark_voice::tensor::rel_l2;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use testkit::{Oracle, installed_voices_dir, read_wav};

const HARK: &str = env!("CARGO_BIN_EXE_hark");

fn hark(voices: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(HARK)
        .args(args)
        .env("HARK_VOICES_DIR", voices)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hark");
    let mut pipe = child.stdin.take().expect("stdin");
    if let Some(bytes) = stdin {
        pipe.write_all(bytes).expect("write stdin");
    }
    drop(pipe);
    child.wait_with_output().expect("wait hark")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn speak_to_wav(voices: &Path, extra: &[&str], text: &str) -> Vec<f32> {
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = dir.path().join("x.wav");
    let wav_s = wav.to_str().expect("utf-8 path");
    let mut args = vec!["speak", "--out", wav_s, "--format", "f32"];
    args.extend_from_slice(extra);
    args.push(text);
    let o = hark(voices, &args, None);
    assert!(o.status.success(), "hark speak failed: {}", stderr(&o));
    read_wav(&wav).1
}

#[test]
fn deterministic_speech_matches_onnxruntime() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let Some(oracle) = Oracle::load_or_skip() else {
        return;
    };
    let cases: Vec<_> = oracle
        .cases
        .iter()
        .filter(|c| c.scales[0] == 0.0 && c.scales[2] == 0.0)
        .collect();
    assert!(
        cases.len() >= 3,
        "the oracle should have at least 3 zero-noise cases"
    );
    for case in cases {
        let sentence = oracle.manifest["cases"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == case.name.as_str()))
            .and_then(|c| c["sentence"].as_str())
            .expect("case sentence")
            .to_string();
        let ls = case.scales[1].to_string();
        let got = speak_to_wav(
            voices,
            &[
                "--noise-scale",
                "0",
                "--noise-w",
                "0",
                "--length-scale",
                &ls,
            ],
            &sentence,
        );
        let want = case.tensor("audio").data;
        assert_eq!(got.len(), want.len(), "case {}: audio length", case.name);
        let err = rel_l2(&got, &want);
        eprintln!("{}: {} samples, rel L2 {err:.2e}", case.name, got.len());
        assert!(err <= 1e-4, "case {}: rel L2 {err:.2e} > 1e-4", case.name);
    }
}

/// Speech-like: not silent, not clipped noise, with pauses.
fn assert_speech(samples: &[f32], what: &str) {
    let rms = (samples.iter().map(|s| (s * s) as f64).sum::<f64>() / samples.len() as f64).sqrt();
    let peak = samples.iter().fold(0f32, |m, s| m.max(s.abs()));
    assert!(
        rms > 0.01 && rms < 0.3,
        "{what}: RMS {rms} is not speech-like"
    );
    assert!(peak < 1.0, "{what}: clipped (peak {peak})");
    // Speech has quiet gaps: some 30 ms windows far below the loudest.
    let win = 661;
    let energies: Vec<f64> = samples
        .chunks(win)
        .map(|c| c.iter().map(|s| (s * s) as f64).sum::<f64>() / c.len() as f64)
        .collect();
    let loudest = energies.iter().cloned().fold(0.0, f64::max);
    let quiet = energies.iter().filter(|&&e| e < loudest * 1e-3).count();
    assert!(quiet >= 1, "{what}: no pauses at all, not speech");
}

#[test]
fn length_scale_changes_duration_with_default_noise() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let text = "The quick brown fox jumps over the lazy dog, and then it rests.";
    let normal = speak_to_wav(voices, &[], text);
    assert_speech(&normal, "length scale 1");
    // Durations are ceil(w · scale) and every id keeps at least one frame, so halving the scale
    // shortens speech by less than half; doubling it lengthens it by a little less than double.
    for (ls, lo, hi) in [("0.5", 0.5, 0.8), ("2.0", 1.7, 2.1)] {
        let audio = speak_to_wav(voices, &["--length-scale", ls], text);
        assert_speech(&audio, &format!("length scale {ls}"));
        let got = audio.len() as f64 / normal.len() as f64;
        eprintln!("length scale {ls}: duration ratio {got:.3}");
        assert!(
            (lo..=hi).contains(&got),
            "length scale {ls}: duration ratio {got:.2}, expected {lo}..{hi}"
        );
    }
}

#[test]
fn empty_and_unspeakable_text_fail_clearly() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    for (text, msg) in [
        ("", "empty"),
        ("   \n\t ", "empty"),
        ("...", "no speakable"),
        (". . .", "no speakable"),
    ] {
        let o = hark(voices, &["speak", "--out", "/dev/null", text], None);
        assert!(!o.status.success(), "{text:?} should fail");
        let e = stderr(&o);
        assert!(e.contains(msg) && !e.contains("panicked"), "{text:?}: {e}");
    }
}

#[test]
fn junk_input_is_spoken_without_panic() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = dir.path().join("j.wav");
    let wav_s = wav.to_str().expect("path");
    let inputs: [&[u8]; 4] = [
        b"Hello \xff\xfe world, \x00 with \x07 bells.\n",
        "Emoji 😀🎉 and arrows ⇒ here.".as_bytes(),
        "Right to left: שלום עולם, and back.".as_bytes(),
        b"\x1b[31mred\x1b[0m text and tabs\t\tend.",
    ];
    for input in inputs {
        let o = hark(voices, &["speak", "--out", wav_s, "-"], Some(input));
        let e = stderr(&o);
        assert!(o.status.success(), "input {input:?}: {e}");
        assert!(!e.contains("panicked"), "{e}");
        assert!(
            read_wav(&wav).1.len() > 1000,
            "input {input:?} produced no audio"
        );
    }
    let o = hark(
        voices,
        &["speak", "--out", wav_s, "-"],
        Some(b"ok \xc3\x28 fine."),
    );
    assert!(stderr(&o).contains("not valid UTF-8"), "{}", stderr(&o));
}

#[test]
fn missing_voice_says_how_to_install() {
    let empty = tempfile::tempdir().expect("tempdir");
    let o = hark(
        empty.path(),
        &["speak", "--out", "/dev/null", "Hello."],
        None,
    );
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("hark voice import"), "{e}");
}

#[test]
fn no_audio_device_is_a_clear_error_and_out_still_works() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    // An ALSA configuration with no devices at all, and no sound server to find.
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = dir.path().join("asound.conf");
    std::fs::write(&conf, "").expect("write conf");
    let o = Command::new(HARK)
        .args(["speak", "Hello."])
        .env("HARK_VOICES_DIR", voices)
        .env("ALSA_CONFIG_PATH", &conf)
        .env("PULSE_SERVER", "unix:/nonexistent")
        .env("PIPEWIRE_REMOTE", "/nonexistent")
        .stdin(Stdio::null())
        .output()
        .expect("run hark");
    let e = stderr(&o);
    assert!(!o.status.success(), "playing with no device should fail");
    assert!(
        e.contains("audio") && e.contains("--out") && !e.contains("panicked"),
        "{e}"
    );
    let wav = dir.path().join("y.wav");
    let o = hark(
        voices,
        &["speak", "--out", wav.to_str().expect("path"), "Hello."],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_megabyte_of_text_streams_to_the_file() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let sentence = "This is one of many sentences in a very long text that must stream. ";
    let text = sentence.repeat(1_000_000 / sentence.len() + 1);
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = dir.path().join("big.wav");
    let mut child = Command::new(HARK)
        .args(["speak", "--out", wav.to_str().expect("path"), "-"])
        .env("HARK_VOICES_DIR", voices)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    // Audio must appear long before the whole text could have been synthesised.
    let start = std::time::Instant::now();
    let mut grew = false;
    let mut max_rss_kb = 0u64;
    while start.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
            && let Some(kb) = status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        {
            max_rss_kb = max_rss_kb.max(kb);
        }
        // The WAV grows in its partial file; it gets its name when complete.
        let written: u64 = std::fs::read_dir(dir.path())
            .expect("read dir")
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum();
        if written > 1_000_000 {
            grew = true;
            break;
        }
        assert!(
            child.try_wait().expect("wait").is_none(),
            "hark exited early"
        );
    }
    child.kill().ok();
    child.wait().ok();
    assert!(grew, "no audio was written within 120 s");
    assert!(
        !wav.exists(),
        "an interrupted WAV must not appear under its name"
    );
    // Weights (~63 MB) plus working buffers; a giant tensor for 1 MB of text would be far more.
    assert!(max_rss_kb < 600_000, "memory grew to {max_rss_kb} kB");
}

/// A folder with the multi-speaker test voice (`scripts/make_multispeaker_voice.py`, under
/// `$HARK_TEST_DATA/multispeaker`) imported by `hark voice import`; `None` after the skip line.
fn multi_speaker_voices() -> Option<tempfile::TempDir> {
    let onnx = testkit::multi_speaker_onnx_or_skip()?;
    let dir = tempfile::tempdir().expect("tempdir");
    let o = hark(
        dir.path(),
        &["voice", "import", onnx.to_str().expect("utf-8 path")],
        None,
    );
    assert!(o.status.success(), "import: {}", stderr(&o));
    Some(dir)
}

#[test]
fn a_multi_speaker_voice_speaks_as_the_speaker_asked_for() {
    let Some(voices) = multi_speaker_voices() else {
        return;
    };
    let v = voices.path();
    let list = hark(v, &["voice", "list"], None);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        listed.contains("hark-multi") && listed.contains("3 speakers: ada, brian, chloe"),
        "{listed}"
    );
    let det = [
        "--voice",
        "hark-multi",
        "--noise-scale",
        "0",
        "--noise-w",
        "0",
    ];
    let say = |speaker: &str| {
        let mut args = det.to_vec();
        args.extend(["--speaker", speaker]);
        speak_to_wav(v, &args, "Hello world.")
    };
    let (ada, chloe) = (say("ada"), say("chloe"));
    for (x, who) in [(&ada, "ada"), (&chloe, "chloe")] {
        let rms = (x.iter().map(|s| (s * s) as f64).sum::<f64>() / x.len() as f64).sqrt();
        assert!(x.iter().all(|s| s.is_finite() && s.abs() < 1.0), "{who}");
        assert!(
            rms > 0.005 && x.len() > 22_050 / 4,
            "{who}: RMS {rms}, {} samples",
            x.len()
        );
    }
    // By name or by id, the same speaker; another speaker, other audio.
    assert_eq!(say("2"), chloe, "--speaker 2 is chloe");
    assert_eq!(
        speak_to_wav(v, &det, "Hello world."),
        ada,
        "speaker 0 by default"
    );
    let n = ada.len().min(chloe.len());
    assert!(
        ada.len() != chloe.len() || rel_l2(&ada[..n], &chloe[..n]) > 0.1,
        "ada and chloe sound the same"
    );

    // Refused, with a clear message and no panic: a speaker the voice does not have (the
    // error lists those it has), and the CUDA backend, which does not condition on a speaker
    // (on any machine: the voice is refused before a device is looked for).
    let refused = |extra: &[&str]| {
        let mut args = vec!["speak", "--out", "/dev/null", "--voice", "hark-multi"];
        args.extend_from_slice(extra);
        args.push("Hi.");
        let o = hark(v, &args, None);
        assert!(!o.status.success(), "{extra:?} should fail");
        let e = stderr(&o);
        assert!(!e.contains("panicked"), "{e}");
        e
    };
    let e = refused(&["--speaker", "zed"]);
    assert!(
        e.contains("\"zed\"") && e.contains("0 ada, 1 brian, 2 chloe"),
        "{e}"
    );
    let e = refused(&["--backend", "cuda"]);
    assert!(e.contains("speaker") && e.contains("--backend cpu"), "{e}");
}

#[test]
fn a_single_speaker_voice_takes_only_speaker_zero() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let o = hark(
        voices,
        &["speak", "--out", "/dev/null", "--speaker", "1", "Hello."],
        None,
    );
    let e = stderr(&o);
    assert!(!o.status.success());
    assert!(e.contains("single speaker"), "{e}");
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = dir.path().join("z.wav");
    let o = hark(
        voices,
        &[
            "speak",
            "--out",
            wav.to_str().expect("path"),
            "--speaker",
            "0",
            "Hello.",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
}
