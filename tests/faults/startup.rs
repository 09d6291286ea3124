//! libnvrtc missing (`HARK_FAULT=nvrtc-missing`, as on a machine with the NVIDIA driver but
//! without the CUDA toolkit's NVRTC): `--backend auto` says once, at info level, that it
//! uses the CPU and why; `--backend cuda` fails with a clear error and exit code 1.

use crate::{HARK, voices};
use std::process::Output;

const NVRTC: &str = "NVRTC (libnvrtc) not found";

fn speak(voices: &std::path::Path, backend: &str, verbose: bool) -> (Output, String) {
    let out = tempfile::tempdir().expect("tempdir");
    let wav = out.path().join("a.wav");
    let mut cmd = std::process::Command::new(HARK);
    cmd.args(["speak", "--backend", backend, "--out"])
        .arg(&wav)
        .arg("Hello there.")
        .env("HARK_VOICES_DIR", voices)
        .env("HARK_FAULT", "nvrtc-missing")
        .env_remove("RUST_LOG");
    if verbose {
        cmd.arg("-v");
    }
    let o = cmd.output().expect("run hark");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    if o.status.success() {
        let bytes = std::fs::metadata(&wav).map_or(0, |m| m.len());
        assert!(bytes > 10_000, "a {bytes}-byte WAV; {stderr}");
    }
    (o, stderr)
}

#[test]
fn nvrtc_missing_auto_says_once_at_info_that_the_cpu_speaks() {
    let Some(voices) = voices() else {
        return;
    };
    let (o, stderr) = speak(&voices, "auto", true);
    assert!(o.status.success(), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(NVRTC)).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("INFO") && lines[0].contains("using the CPU backend"),
        "{stderr}"
    );
    assert!(!stderr.contains("WARN"), "{stderr}");
    // Without -v: nothing at all (the normal case on a machine without NVIDIA).
    let (o, stderr) = speak(&voices, "auto", false);
    assert!(o.status.success() && stderr.trim().is_empty(), "{stderr}");
}

#[test]
fn nvrtc_missing_cuda_is_a_clear_error() {
    let Some(voices) = voices() else {
        return;
    };
    let (o, stderr) = speak(&voices, "cuda", false);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("hark: error: ") && last.contains(NVRTC) && last.contains("--backend cpu"),
        "{stderr}"
    );
}
