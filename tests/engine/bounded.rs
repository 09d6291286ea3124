//! Memory bounded by design, and `--out` never leaves a broken file (docs/RELIABILITY.md):
//! pathological inputs through `hark speak --out`, each run with its address space limited
//! (so a regression fails the test instead of eating the machine) and its peak RSS read back.

use std::path::Path;
use std::process::Command;
use testkit::installed_voices_dir;
use testkit::limits::{Limited, is_root, run_limited};

const HARK: &str = env!("CARGO_BIN_EXE_hark");
/// The address space a run may have: a safety net well above what a bounded run needs.
const LIMIT_MB: u64 = 2048;
/// docs/RELIABILITY.md's bound on peak resident memory.
const MAX_RSS_KB: u64 = 400 * 1024;

fn speak(voices: &Path, out: &Path, extra: &[&str], input: &[u8]) -> Limited {
    let mut cmd = Command::new(HARK);
    cmd.args(["speak", "--backend", "cpu", "--out"])
        .arg(out)
        .args(extra)
        .arg("-")
        .env("HARK_VOICES_DIR", voices);
    run_limited(cmd, input, LIMIT_MB)
}

/// Asserts that `dir` holds no file at all.
fn assert_empty(dir: &Path) {
    let left = files_in(dir);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Asserts that the run failed and said `what`.
fn assert_failed(r: &Limited, what: &str) {
    assert!(
        !r.status.success() && r.stderr.contains(what),
        "{}",
        r.stderr
    );
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The voices folder, a temp dir and a WAV path in it, or `None` (skipped: no voice).
fn setup(name: &str) -> Option<(&'static Path, tempfile::TempDir, std::path::PathBuf)> {
    let voices = installed_voices_dir(HARK)?;
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = dir.path().join(name);
    Some((voices, dir, wav))
}

#[test]
fn pathological_inputs_stay_within_400_mb() {
    let Some((voices, _dir, wav)) = setup("p.wav") else {
        return;
    };
    let digits: Vec<u8> = testkit::junk_bytes(1 << 20, 7)
        .iter()
        .map(|b| b'0' + b % 10)
        .collect();
    let capitals = format!("{} ", "W".repeat(90)).repeat(8).into_bytes();
    let inputs: [(&str, Vec<u8>, &[&str]); 5] = [
        ("one 2 MB word", vec![b'x'; 2 << 20], &[]),
        ("1 MB of digits", digits, &[]),
        (
            "nested brackets",
            [vec![b'['; 1 << 19], vec![b']'; 1 << 19]].concat(),
            &[],
        ),
        ("85 capital W's", vec![b'W'; 85], &[]),
        // Not words by `assess`, read when asked: each is spelled, "W.W.W…".
        ("eight 90-letter capital words", capitals, &["--any-text"]),
    ];
    // The playing path too: the streaming engine, its audio dropped (no device here).
    for input in [vec![b'x'; 2 << 20], vec![b'W'; 85]] {
        let mut cmd = Command::new(HARK);
        cmd.args(["speak", "--backend", "cpu", "--discard", "-"])
            .env("HARK_VOICES_DIR", voices);
        let r = run_limited(cmd, &input, LIMIT_MB);
        assert!(r.status.success(), "engine: {:?}: {}", r.status, r.stderr);
        assert!(
            r.max_rss_kb <= MAX_RSS_KB,
            "engine: {} kB peak",
            r.max_rss_kb
        );
    }
    for (what, input, extra) in inputs {
        let r = speak(voices, &wav, extra, &input);
        eprintln!("{what}: {} kB peak", r.max_rss_kb);
        assert!(r.status.success(), "{what}: {:?}: {}", r.status, r.stderr);
        assert!(!r.stderr.contains("panicked"), "{what}: {}", r.stderr);
        assert!(
            r.max_rss_kb <= MAX_RSS_KB,
            "{what}: {} kB peak",
            r.max_rss_kb
        );
        let reader = hound::WavReader::open(&wav).expect("a valid WAV");
        let seconds = reader.duration() as f64 / reader.spec().sample_rate as f64;
        assert!(
            seconds > 0.5 && seconds < 120.0,
            "{what}: {seconds} s of audio"
        );
    }
}

#[test]
fn text_that_is_mostly_not_words_is_refused_unless_asked() {
    let Some((voices, dir, wav)) = setup("r.wav") else {
        return;
    };
    let r = speak(voices, &wav, &[], &testkit::junk_bytes(256 << 10, 11));
    assert_failed(&r, "mostly not words");
    assert!(r.stderr.contains("--any-text"), "{}", r.stderr);
    assert_empty(dir.path());
    // Asked for, a little junk is read.
    let r = speak(voices, &wav, &["--any-text"], &testkit::junk_bytes(300, 11));
    assert!(r.status.success(), "{}", r.stderr);
    assert!(hound::WavReader::open(&wav).is_ok());
}

#[test]
fn a_failed_out_leaves_no_file_and_keeps_an_old_one() {
    let Some((voices, dir, wav)) = setup("f.wav") else {
        return;
    };
    // Nothing speakable: an error, and no file at all.
    let r = speak(voices, &wav, &[], b"... ?!");
    assert_failed(&r, "no speakable");
    assert_empty(dir.path());
    // An older file is left as it was.
    std::fs::write(&wav, b"old").expect("write");
    let r = speak(voices, &wav, &[], b"... ?!");
    assert!(!r.status.success());
    assert_eq!(std::fs::read(&wav).expect("read"), b"old");
    assert_eq!(files_in(dir.path()), ["f.wav"]);
    // A folder that is not one, or (when not root) one that cannot be written: a clear error.
    let r = speak(voices, &wav.join("x.wav"), &[], b"Hello.");
    assert_failed(&r, "cannot write WAV file");
    if !is_root() {
        use std::os::unix::fs::PermissionsExt;
        let ro = dir.path().join("ro");
        std::fs::create_dir(&ro).expect("mkdir");
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).expect("chmod");
        let r = speak(voices, &ro.join("x.wav"), &[], b"Hello.");
        assert!(
            !r.status.success() && r.stderr.contains("cannot write WAV file"),
            "{}",
            r.stderr
        );
        assert!(files_in(&ro).is_empty());
    }
}

#[test]
fn an_interrupted_out_leaves_nothing_behind() {
    let Some((voices, dir, wav)) = setup("i.wav") else {
        return;
    };
    let text = "A sentence among many, long enough to be interrupted. ".repeat(400);
    for signal in ["TERM", "INT"] {
        let mut child = Command::new(HARK)
            .args(["speak", "--backend", "cpu", "--out"])
            .arg(&wav)
            .arg(&text)
            .env("HARK_VOICES_DIR", voices)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        // Wait for the partial file to hold some audio, then interrupt.
        let start = std::time::Instant::now();
        while files_in(dir.path()).is_empty() && start.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(
            files_in(dir.path()).len(),
            1,
            "a partial file while writing"
        );
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
        let status = child.wait().expect("wait");
        assert!(!status.success(), "SIG{signal}: {status:?}");
        assert!(
            files_in(dir.path()).is_empty(),
            "SIG{signal}: {:?}",
            files_in(dir.path())
        );
    }
}
