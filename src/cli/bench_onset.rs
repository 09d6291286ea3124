//! `hark bench --onset`: time from `speak()` to the first non-silent sample handed to the audio
//! callback, over many utterances, with adaptive and fixed step counts, plus underruns.

use super::bench::Stats;
use crate::engine::{BackendChoice, Engine, EngineConfig, Event, Mode, Output, StepMode};
use crate::voice::Voice;
use anyhow::Context;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct OnsetArgs {
    pub voice: Option<String>,
    pub backend: BackendChoice,
    pub runs: usize,
    pub play_ms: u64,
    pub json: bool,
    pub text: &'static str,
}

#[derive(Serialize)]
struct ModeResult {
    steps: String,
    onset: Option<Stats>,
    /// Utterances stopped before any sound (onset longer than the play time).
    silent: usize,
    underruns: u64,
    utterances_with_underruns: usize,
    first_step: usize,
}

#[derive(Serialize)]
struct Report {
    text: &'static str,
    backend: String,
    play_ms: u64,
    results: Vec<ModeResult>,
}

pub fn run(args: &OnsetArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.runs >= 1, "--runs must be at least 1");
    let voice = Arc::new(Voice::load(args.voice.as_deref())?);
    let mut backend = String::new();
    let mut results = Vec::new();
    for steps in [
        StepMode::Auto,
        StepMode::Fixed(16),
        StepMode::Fixed(64),
        StepMode::Fixed(128),
    ] {
        let mut cfg = EngineConfig::new(Arc::clone(&voice));
        cfg.backend = args.backend;
        cfg.output = Output::Device;
        cfg.settings.steps = steps;
        let (engine, mut events) =
            Engine::start(cfg).context("the onset benchmark needs an audio device")?;
        backend = engine.backend().to_string();
        // Two warm-up utterances, then the measured ones; each interrupts the one before.
        let total = args.runs + 2;
        let mut stats = Vec::new();
        for _ in 0..total {
            engine.speak(args.text, Mode::Interrupt);
            let until = Instant::now() + Duration::from_millis(args.play_ms);
            drain(&mut events, until, &mut stats);
        }
        engine.stop();
        drain(
            &mut events,
            Instant::now() + Duration::from_millis(500),
            &mut stats,
        );
        drop(engine);
        stats.sort_by_key(|s| s.id);
        let measured: Vec<_> = stats.into_iter().skip(2).collect();
        let onsets: Vec<f64> = measured.iter().filter_map(|s| s.onset_ms).collect();
        let mode = match steps {
            StepMode::Auto => "auto".to_string(),
            StepMode::Fixed(n) => format!("fixed {n}"),
        };
        let r = ModeResult {
            steps: mode,
            silent: measured.len() - onsets.len(),
            onset: (!onsets.is_empty()).then(|| Stats::of(onsets)),
            underruns: measured.iter().map(|s| s.underruns).sum(),
            utterances_with_underruns: measured.iter().filter(|s| s.underruns > 0).count(),
            first_step: measured.first().map_or(0, |s| s.first_step),
        };
        if !args.json {
            eprintln!("{}: done", r.steps);
        }
        results.push(r);
    }
    let report = Report {
        text: args.text,
        backend,
        play_ms: args.play_ms,
        results,
    };
    if !args.json {
        print_table(&report, args.runs);
    }
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

/// Collects `Stats` events until `until`.
fn drain(
    events: &mut crate::engine::Events,
    until: Instant,
    stats: &mut Vec<crate::engine::Stats>,
) {
    while Instant::now() < until {
        match events.try_recv() {
            Ok(Event::Stats(s)) => stats.push(s),
            Ok(Event::Error { message, .. }) => eprintln!("hark: warning: {message}"),
            Ok(_) => {}
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => return,
        }
    }
}

fn print_table(r: &Report, runs: usize) {
    println!(
        "backend: {}; {runs} utterances per row, each played {} ms",
        r.backend, r.play_ms
    );
    println!(
        "| steps | onset median ms | onset P99 ms | min ms | silent | underruns (utterances) |"
    );
    println!("|---|---|---|---|---|---|");
    for m in &r.results {
        let (med, p99, min) = m.onset.map_or((f64::NAN, f64::NAN, f64::NAN), |o| {
            (o.median_ms, o.p99_ms, o.min_ms)
        });
        println!(
            "| {} | {med:.1} | {p99:.1} | {min:.1} | {} | {} ({}) |",
            m.steps, m.silent, m.underruns, m.utterances_with_underruns
        );
    }
}
