//! Other languages end to end: the real voice with its `voice.json`'s espeak voice set to
//! Arabic, Hindi, Chinese or German speaks text of that language through the `hark` binary
//! (espeak-ng in its child process, the voice's espeak voice, the model). There is no Piper
//! voice of these languages here, so the English voice says their phonemes: the test asks
//! that the phonemes are the language's (equal to the library's for that espeak voice) and
//! that the audio is speech of a plausible length, not that it sounds native.

use std::path::Path;
use std::process::Command;
use testkit::{installed_voices_dir, read_wav};

const HARK: &str = env!("CARGO_BIN_EXE_hark");

/// A copy of the installed voice named `name`, whose espeak voice is `espeak`.
fn voice_speaking(from: &Path, to: &Path, name: &str, espeak: &str) {
    let src = std::fs::read_dir(from)
        .expect("voices dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("voice.json").is_file())
        .expect("an installed voice");
    let dst = to.join(name);
    std::fs::create_dir_all(&dst).expect("mkdir");
    for f in std::fs::read_dir(&src).expect("voice folder").flatten() {
        std::fs::copy(f.path(), dst.join(f.file_name())).expect("copy voice file");
    }
    let path = dst.join("voice.json");
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read voice.json")).expect("json");
    config["name"] = name.into();
    config["espeak_voice"] = espeak.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&config).expect("json")).expect("write");
}

fn run(voices: &Path, args: &[&str]) -> String {
    let o = Command::new(HARK)
        .args(args)
        .env("HARK_VOICES_DIR", voices)
        .output()
        .expect("run hark");
    assert!(
        o.status.success(),
        "hark {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

#[test]
fn a_voice_of_another_language_speaks_its_text() {
    testkit::use_espeak_data();
    let Some(installed) = installed_voices_dir(HARK) else {
        return;
    };
    let voices = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("ar", "صباح الخير، كيف حالك؟"),
        ("hi", "नमस्ते, आप कैसे हैं?"),
        ("cmn", "我想买一张去北京的火车票。"),
        ("de", "Der Zug fährt um 7 Uhr ab."),
    ];
    for (espeak, text) in cases {
        let name = format!("{espeak}-joe-medium");
        voice_speaking(installed, voices.path(), &name, espeak);
        // The phonemes are the language's: those of the library with that espeak voice
        // (the CLI's espeak-ng runs in its child; this process runs its own).
        let printed = run(
            voices.path(),
            &["text", "--phonemes", "--voice", &name, text],
        );
        let lines: Vec<&str> = printed.lines().collect();
        let want: Vec<String> = hark_text::phonemize(text, espeak)
            .expect("phonemize")
            .iter()
            .map(|s| s.iter().collect())
            .collect();
        let got: Vec<String> = lines.iter().step_by(2).map(|l| l.to_string()).collect();
        assert_eq!(got, want, "{espeak}: hark text --phonemes");
        // On Latin text the English voice would read it otherwise (on other scripts
        // espeak-ng's English switches to the script's language, so it may agree).
        if espeak == "de" {
            let english: Vec<String> = hark_text::phonemize(text, "en-us")
                .expect("phonemize")
                .iter()
                .map(|s| s.iter().collect())
                .collect();
            assert_ne!(want, english, "{espeak}: the voice's espeak voice is used");
        }
        let phonemes: usize = want.iter().map(|s| s.chars().count()).sum();

        // Spoken through the model: speech of about the phonemes' length.
        let dir = tempfile::tempdir().expect("tempdir");
        let wav = dir.path().join("x.wav");
        let wav_s = wav.to_str().expect("utf-8 path");
        run(
            voices.path(),
            &[
                "speak", "--voice", &name, "--out", wav_s, "--format", "f32", text,
            ],
        );
        let (rate, samples) = read_wav(&wav);
        let seconds = samples.len() as f64 / f64::from(rate);
        let per_phoneme = seconds / phonemes as f64;
        assert!(
            (0.02..0.3).contains(&per_phoneme),
            "{espeak}: {seconds:.2} s for {phonemes} phonemes"
        );
        let rms = testkit::audio::rms(&samples);
        assert!(rms > 0.01, "{espeak}: silent ({rms})");
        println!("{espeak}: {phonemes} phonemes, {seconds:.2} s, rms {rms:.3}");
    }
}
