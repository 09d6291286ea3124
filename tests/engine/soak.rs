//! `hark bench --soak`: a short soak (30 utterances, a sample every 3) through the real
//! streaming engine on a fast simulated device. Its JSON has the promised shape, every
//! utterance ends, and threads and open descriptors do not grow over the run.

use std::process::Command;
use testkit::installed_voices_dir;

const HARK: &str = env!("CARGO_BIN_EXE_hark");

#[test]
fn a_short_soak_reports_samples_and_leaks_nothing() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let out = Command::new(HARK)
        .args([
            "bench",
            "--soak",
            "30",
            "--soak-every",
            "3",
            "--soak-speed",
            "50",
        ])
        .args(["--backend", "cpu", "--json", "--seed", "3"])
        .env("HARK_VOICES_DIR", voices)
        .output()
        .expect("run hark bench --soak");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stdout
        .lines()
        .last()
        .unwrap_or_else(|| panic!("no JSON: {stderr}"));
    let r: serde_json::Value = serde_json::from_str(line).expect("JSON report");
    // 30 utterances are mostly warm-up (the allocator's arenas fill), so RSS may grow more
    // than the 5 % a long soak allows; the verdict and the exit status must agree with it.
    let rss_ok = r["rss_growth_pct"].as_f64().expect("rss_growth_pct") <= 5.0;
    assert_eq!(r["pass"], rss_ok, "{line}");
    assert_eq!(
        out.status.success(),
        rss_ok,
        "exit status: {line}\n{stderr}"
    );
    for key in ["rss_mb", "threads", "fds"] {
        let samples = r[key].as_array().unwrap_or_else(|| panic!("{key}: {line}"));
        assert_eq!(
            samples.len(),
            10,
            "{key}: one sample per 3 utterances: {line}"
        );
        assert!(samples.iter().all(|s| s.as_f64().is_some_and(|v| v > 0.0)));
    }
    assert!(
        r["gpu_mb"].is_null(),
        "no GPU memory on the CPU backend: {line}"
    );
    assert_eq!(r["requested"], 30);
    assert_eq!(r["utterances"], 30, "every utterance ends: {line}");
    assert_eq!(r["errors"], 0, "{line}");
    assert!(r["rss_growth_pct"].is_f64());
    assert!(r["elapsed_s"].as_f64().is_some_and(|s| s > 0.0));
    assert!(r["load_before"].is_string() && r["load_after"].is_string());
    // The leak checks, from the samples themselves.
    let first_last = |key: &str| {
        let v = r[key].as_array().expect("samples");
        (v[0].as_i64().expect("count"), v[9].as_i64().expect("count"))
    };
    for key in ["threads", "fds"] {
        let (first, last) = first_last(key);
        assert!(last <= first, "{key} grew {first} → {last}: {line}");
        assert_eq!(r[format!("{key}_growth")], last - first);
    }
}
