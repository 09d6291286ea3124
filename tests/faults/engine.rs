//! Faults while the streaming engine speaks: the GPU lost mid-utterance, the voice folder
//! deleted. `HARK_FAULT_BACKEND=cuda` runs the GPU test on the CUDA backend (the device
//! script, scripts/cuda/check-faults.sh); by default it is the CPU, made to fail as a GPU
//! would.

use crate::{serial, voices};
use hark_engine::{BackendChoice, Engine, Event, GpuEngine, Mode};
use hark_model::fault::{self, Fault};
use hark_voice::Voice;
use std::ops::Range;
use std::time::Duration;
use testkit::engine::{deterministic_config, events_until, finished, load_voice, strip};

const LONG: Duration = Duration::from_secs(300);
const TEXT: &str = "The first sentence is short. The second one runs a little longer than the \
                    first. A third sentence ends it.";
/// The comparison tolerance of the streaming engine's tests (tests/engine/streaming_engine.rs).
const TOLERANCE: f32 = 1e-4;

/// The backend the "GPU" test runs on: the CPU here, CUDA on the device.
fn gpu_under_test() -> BackendChoice {
    match std::env::var("HARK_FAULT_BACKEND").as_deref() {
        Ok("cuda") => BackendChoice::Cuda,
        _ => BackendChoice::Cpu,
    }
}

fn start(voice: Voice, backend: BackendChoice) -> (Engine, hark_engine::Events) {
    start_on(voice, backend, GpuEngine::Auto)
}

fn start_on(
    voice: Voice,
    backend: BackendChoice,
    gpu_engine: GpuEngine,
) -> (Engine, hark_engine::Events) {
    let mut cfg = deterministic_config(voice);
    cfg.backend = backend;
    cfg.gpu_engine = gpu_engine;
    cfg.warm_up = false;
    Engine::start(cfg).expect("engine")
}

/// What one utterance of `text` gave: its audio, its words (byte ranges), its error events.
struct Heard {
    audio: Vec<f32>,
    words: Vec<Range<usize>>,
    errors: Vec<String>,
    backend: String,
}

fn hear(voices: &std::path::Path, backend: BackendChoice, fault: Option<Fault>) -> Heard {
    fault::set(fault);
    let (engine, mut events) = start(load_voice(voices), backend);
    // The hook is read when the engine starts: later engines must not see it.
    fault::set(None);
    said(&engine, &mut events)
}

/// What `engine` gave for one utterance of [`TEXT`].
fn said(engine: &Engine, events: &mut hark_engine::Events) -> Heard {
    let id = engine.speak(TEXT, Mode::Queue);
    let got = events_until(events, LONG, finished(id));
    assert_eq!(
        got.last(),
        Some(&Event::Finished { id, stopped: false }),
        "{:?}",
        strip(&got)
    );
    let mut heard = Heard {
        audio: Vec::new(),
        words: Vec::new(),
        errors: Vec::new(),
        backend: String::new(),
    };
    for e in got {
        match e {
            Event::Chunk { samples, .. } => heard.audio.extend(samples),
            Event::Word { char_range, .. } => heard.words.push(char_range),
            Event::Error { message, .. } => heard.errors.push(message),
            Event::Stats(s) => heard.backend = s.backend,
            _ => {}
        }
    }
    heard
}

/// The GPU is lost after `n` decode calls: in the first sentence's front half (0), inside the
/// first sentence (3), inside a later one (12). Speech goes on on the CPU from where it was:
/// every word once, in order, the CPU-only audio, one notice.
#[test]
fn gpu_lost_mid_utterance_goes_on_on_the_cpu_with_every_word_once() {
    let _one = serial();
    let Some(voices) = voices() else {
        return;
    };
    let gpu = gpu_under_test();
    let reference = hear(&voices, BackendChoice::Cpu, None);
    assert!(reference.errors.is_empty(), "{:?}", reference.errors);
    let said: Vec<&str> = reference.words.iter().map(|r| &TEXT[r.clone()]).collect();
    assert_eq!(said.len(), TEXT.split_whitespace().count(), "{said:?}");
    for n in [0, 3, 12] {
        let got = hear(&voices, gpu, Some(Fault::GpuLostAfter(n)));
        assert_eq!(got.words, reference.words, "lost after {n}: words");
        let notices: Vec<_> = got
            .errors
            .iter()
            .filter(|m| m.contains("on the CPU"))
            .collect();
        assert_eq!(notices.len(), 1, "lost after {n}: {:?}", got.errors);
        assert_eq!(got.errors.len(), 1, "lost after {n}: {:?}", got.errors);
        assert!(
            got.backend.starts_with("cpu"),
            "lost after {n}: {}",
            got.backend
        );
        if gpu == BackendChoice::Cpu {
            assert_eq!(got.audio.len(), reference.audio.len(), "lost after {n}");
            let max = got
                .audio
                .iter()
                .zip(&reference.audio)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(max < TOLERANCE, "lost after {n}: max difference {max}");
        } else {
            // The GPU's durations may differ from the CPU's by a frame: the length within 1 %.
            let (a, b) = (got.audio.len() as f64, reference.audio.len() as f64);
            assert!(
                (a / b - 1.0).abs() < 0.01,
                "lost after {n}: {a} vs {b} samples"
            );
            eprintln!("lost after {n}: {a} samples (CPU alone: {b}), words once each, in order");
        }
    }
}

/// The persistent CUDA kernel's third chunk of an utterance never comes: the watchdog fires,
/// the graph path makes the sentence again and goes on from the frame reached, every word
/// once, no CPU. Only on the device (`HARK_FAULT_BACKEND=cuda`).
#[test]
fn persistent_watchdog_falls_back_to_graphs() {
    let _one = serial();
    if gpu_under_test() != BackendChoice::Cuda {
        eprintln!("skipped: needs the CUDA backend (scripts/cuda/check-faults.sh)");
        return;
    }
    let Some(voices) = voices() else {
        return;
    };
    let reference = hear(&voices, BackendChoice::Cpu, None);
    let (engine, mut events) = start_on(
        load_voice(&voices),
        BackendChoice::Cuda,
        GpuEngine::Persistent,
    );
    assert!(
        engine.backend().contains("persistent"),
        "{}",
        engine.backend()
    );
    // Set after the start, so the kernel's warm-up is not the job that hangs.
    fault::set(Some(Fault::PersistentWatchdog(2)));
    let got = said(&engine, &mut events);
    fault::set(None);
    assert_eq!(got.words, reference.words);
    assert!(got.errors.is_empty(), "{:?}", got.errors);
    let (a, b) = (got.audio.len() as f64, reference.audio.len() as f64);
    assert!((a / b - 1.0).abs() < 0.01, "{a} vs {b} samples");
    assert!(got.backend.contains("CUDA graphs"), "{}", got.backend);
    eprintln!(
        "watchdog: {a} samples (CPU: {b}), words once each, on {}",
        got.backend
    );
}

/// The voice folder deleted while the engine speaks: speech goes on (the voice is in memory),
/// and loading it again says clearly that it is missing.
#[test]
fn voice_folder_deleted_while_speaking() {
    let _one = serial();
    let Some(voices) = voices() else {
        return;
    };
    let copy = tempfile::tempdir().expect("tempdir");
    let dir = copy.path().join("en_US-joe-medium");
    std::fs::create_dir(&dir).expect("mkdir");
    for f in std::fs::read_dir(voices.join("en_US-joe-medium")).expect("voice folder") {
        let f = f.expect("entry").path();
        std::fs::copy(&f, dir.join(f.file_name().expect("name"))).expect("copy");
    }
    let (engine, mut events) = start(load_voice(copy.path()), BackendChoice::Cpu);
    let id = engine.speak(TEXT, Mode::Queue);
    events_until(&mut events, LONG, |e| matches!(e, Event::Word { .. }));
    std::fs::remove_dir_all(&dir).expect("delete the voice folder");
    let got = events_until(&mut events, LONG, finished(id));
    let words = got
        .iter()
        .filter(|e| matches!(e, Event::Word { .. }))
        .count();
    assert_eq!(
        words + 1,
        TEXT.split_whitespace().count(),
        "{:?}",
        strip(&got)
    );
    assert!(
        !got.iter().any(|e| matches!(e, Event::Error { .. })),
        "{:?}",
        strip(&got)
    );
    assert_eq!(got.last(), Some(&Event::Finished { id, stopped: false }));
    let e = Voice::load_from(copy.path(), Some("en_US-joe-medium"))
        .err()
        .expect("the deleted voice loads");
    let msg = e.to_string();
    assert!(msg.contains("en_US-joe-medium"), "{msg}");
    eprintln!("loading the deleted voice: {msg}");
}
