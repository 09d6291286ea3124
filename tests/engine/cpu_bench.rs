//! `hark bench --backend cpu`: Hark and onnxruntime interleaved, each thread count in its own
//! pool and each instruction-set cap in the same run. A short run (2 rounds) checks the
//! report's shape; the kernels' agreement across instruction sets is
//! `cpu::direct`'s unit tests, and the speed itself is judged in docs/BENCHMARKS.md, never here.

use std::path::PathBuf;
use std::process::Command;
use testkit::installed_voices_dir;

const HARK: &str = env!("CARGO_BIN_EXE_hark");

/// The reference venv's Python (scripts/install-deps.sh), when there is one.
fn reference_python() -> Option<PathBuf> {
    let py = testkit::workspace_root().join("build/venv/bin/python");
    py.is_file().then_some(py)
}

#[test]
fn the_cpu_bench_interleaves_hark_and_onnxruntime_per_thread_count_and_isa() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let onnx = std::env::var_os("HARK_TEST_ONNX").map(PathBuf::from);
    let ort = match (reference_python(), &onnx) {
        (Some(py), Some(onnx)) => Some((py, onnx.clone())),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI has the reference venv and the voice's ONNX"
            );
            eprintln!("onnxruntime not available: the anchor's columns are not checked");
            None
        }
    };
    let mut cmd = Command::new(HARK);
    cmd.args(["bench", "--backend", "cpu", "--json"])
        .args(["--full-runs", "2", "--runs", "2", "--threads", "1,2"])
        .env("HARK_VOICES_DIR", voices);
    match &ort {
        Some((py, onnx)) => {
            cmd.arg("--python").arg(py).arg("--onnx").arg(onnx);
        }
        None => {
            cmd.arg("--no-ort");
        }
    }
    let out = cmd.output().expect("run hark bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let line = stdout.lines().last().expect("a JSON line");
    let r: serde_json::Value = serde_json::from_str(line).expect("JSON report");
    assert_eq!(r["rounds"], 2);
    assert!(r["load_before"].is_string() && r["load_after"].is_string());
    assert!(r["quiet"].is_boolean());
    let arms = r["arms"].as_array().expect("arms");
    assert_eq!(arms.len(), 2, "one arm per thread count: {line}");
    for (arm, threads) in arms.iter().zip([1, 2]) {
        assert_eq!(arm["threads"], threads);
        let isa = arm["isa"].as_str().expect("isa");
        assert!(["avx512", "avx2", "scalar"].contains(&isa), "{line}");
        assert_eq!(isa, r["detected_isa"], "the widest by default: {line}");
        assert_eq!(arm["hark_full"]["runs"], 2, "{line}");
        // One whole-sentence pair and runs / rounds = 1 clause pair per round.
        assert_eq!(arm["hark_first_clause"]["runs"], 2, "{line}");
        let full = arm["hark_full"]["median_ms"].as_f64().unwrap();
        let clause = arm["hark_first_clause"]["median_ms"].as_f64().unwrap();
        assert!(clause > 0.0 && full > clause, "{line}");
        if ort.is_some() {
            assert_eq!(arm["ort_full"]["runs"], 2, "{line}");
            let ratio = arm["ratio_full"].as_f64().expect("ratio_full");
            assert!(ratio > 0.0 && ratio.is_finite(), "{line}");
        } else {
            assert!(arm["ratio_full"].is_null());
        }
    }
    // The ~10 s sentence of the voice notes.
    let audio = r["audio_seconds"].as_f64().unwrap();
    assert!((7.0..14.0).contains(&audio), "{line}");
    let scaling = r["scaling"].as_array().expect("scaling");
    assert_eq!(scaling.len(), 1, "2 threads against 1: {line}");
    assert_eq!(scaling[0]["threads"], 2);
    assert!(scaling[0]["hark"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_portable_kernels_run_when_capped_and_an_unknown_isa_is_refused() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let bench = |isa: &str| {
        Command::new(HARK)
            .args([
                "bench",
                "--backend",
                "cpu",
                "--no-ort",
                "--json",
                "--isa",
                isa,
            ])
            .args(["--threads", "1", "--full-runs", "1", "--runs", "1"])
            .env("HARK_VOICES_DIR", voices)
            .output()
            .expect("run hark bench")
    };
    let out = bench("scalar");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("JSON")).expect("JSON report");
    assert_eq!(r["arms"][0]["isa"], "scalar", "{stdout}");
    assert!(r["arms"][0]["hark_full"]["median_ms"].as_f64().unwrap() > 0.0);
    let out = bench("sse9");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown instruction set"), "{stderr}");
}

/// An arm below the CPU's widest instruction set runs onnxruntime capped to the same one (its
/// CPUID hides the rest), so `--isa avx2` compares like with like; a machine without CPUID
/// faulting says it could not cap, rather than comparing unlike kernels silently.
#[test]
fn a_capped_arm_caps_onnxruntime_too() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let (Some(py), Some(onnx)) = (reference_python(), std::env::var_os("HARK_TEST_ONNX")) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI has the reference venv and the voice's ONNX"
        );
        eprintln!("skipped: onnxruntime not available");
        return;
    };
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let has = |flag: &str| cpuinfo.split_whitespace().any(|w| w == flag);
    // The level just below the widest, and what onnxruntime must then see.
    let (arm, seen) = if has("avx512f") {
        ("avx2", "avx2")
    } else if has("avx2") && has("fma") {
        ("scalar", "sse")
    } else {
        eprintln!("skipped: nothing below this CPU's widest instruction set to cap to");
        return;
    };
    let out = Command::new(HARK)
        .args(["bench", "--backend", "cpu", "--json", "--isa", arm])
        .args(["--threads", "1", "--full-runs", "1", "--runs", "1"])
        .arg("--python")
        .arg(py)
        .arg("--onnx")
        .arg(onnx)
        .env("HARK_VOICES_DIR", voices)
        .output()
        .expect("run hark bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("JSON")).expect("JSON report");
    let got = r["arms"][0]["ort_isa"].as_str().expect("ort_isa");
    if has("cpuid_fault") {
        assert_eq!(got, format!("{seen} (CPUID capped)"), "{stdout}");
    } else {
        assert!(got.contains("not capped"), "{stdout}");
    }
    assert!(r["arms"][0]["ratio_full"].as_f64().is_some_and(|x| x > 0.0));
}

/// The streaming onset bench on the CPU (a simulated callback: CI has no sound card) reports
/// each step mode's onset with the load it ran under, so a loaded figure is never a claim.
#[test]
fn the_cpu_onset_bench_reports_onsets_and_the_load() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let out = Command::new(HARK)
        .args([
            "bench",
            "--onset",
            "--backend",
            "cpu",
            "--audio",
            "simulated",
        ])
        .args(["--runs", "1", "--starts", "0", "--stage-runs", "0"])
        .args(["--play-ms", "1500", "--json"])
        .env("HARK_VOICES_DIR", voices)
        .output()
        .expect("run hark bench --onset");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().expect("a JSON line");
    let r: serde_json::Value = serde_json::from_str(line).expect("JSON report");
    assert!(r["load_before"].is_string() && r["load_after"].is_string());
    assert!(r["quiet"].is_boolean());
    let results = r["results"].as_array().expect("results");
    assert_eq!(
        results.len(),
        5,
        "auto, fixed 16/64/128, auto with the lead-in: {line}"
    );
    // Each row has its onset, or counts its utterance as silent within the play time (a
    // debug build on a busy CI machine can take that long over a 128-frame first step); the
    // default row (auto steps, lead-in skipped) must speak.
    for (i, m) in results.iter().enumerate() {
        match m["onset"]["median_ms"].as_f64() {
            Some(o) => assert!(o > 0.0 && o < 1_500.0, "{m}"),
            None => assert!(i > 0 && m["silent"] == 1, "{m}"),
        }
    }
}
