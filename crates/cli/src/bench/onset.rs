//! `hark bench --onset`: time from `speak()` to the first audible sample handed to the audio
//! callback, over many utterances, with adaptive and fixed step counts; underruns, the
//! real-time factor, and how quickly each interrupting `speak` silenced the one before
//! (stop latency). With `--audio simulated` a timer thread plays the device's callback, for
//! machines without a sound card. On the CPU it also times the onset's parts (onset_stages).

use super::Stats;
use super::onset_stages;
use anyhow::Context;
use hark_engine::{BackendChoice, Engine, EngineConfig, Event, Mode, StepMode};
use hark_voice::Voice;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where `hark bench --onset` sends its audio.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
pub enum AudioChoice {
    /// The default output device.
    Device,
    /// No sound card: a timer thread runs the audio callback every 10 ms at 48 kHz.
    Simulated,
}

pub struct OnsetArgs {
    pub voice: Option<String>,
    pub backend: BackendChoice,
    pub audio: AudioChoice,
    pub runs: usize,
    pub play_ms: u64,
    pub json: bool,
    pub text: &'static str,
    /// Runs of the onset breakdown (0 skips it).
    pub stage_runs: usize,
    /// Fresh engines, one utterance each (0 skips it).
    pub starts: usize,
}

#[derive(Serialize)]
struct ModeResult {
    steps: String,
    lead_in: &'static str,
    onset: Option<Stats>,
    /// Utterances stopped before any sound (onset longer than the play time).
    silent: usize,
    underruns: u64,
    utterances_with_underruns: usize,
    /// Synthesis time / audio time, per utterance (up to the interrupt).
    rtf: Option<Stats>,
    /// From each interrupting `speak` to the last faded sample of the one before leaving
    /// the callback.
    stop: Option<Stats>,
    first_step: usize,
    /// The onset as the engine saw it, per utterance: speak → first segment taken, its
    /// front half, its first step, and the rest (ring, callback) = onset − those.
    path: [Option<Stats>; 4],
    /// The same per utterance, in order (onset, then the four parts), to find where an
    /// outlier's time went.
    utterances_ms: Vec<[f64; 5]>,
}

#[derive(Serialize)]
struct Report {
    text: &'static str,
    backend: String,
    audio: AudioChoice,
    period_ms: Option<f64>,
    play_ms: u64,
    results: Vec<ModeResult>,
    /// The first utterance of a freshly started engine (auto steps, lead-in skipped).
    first_after_start: Option<FirstAfterStart>,
    stages: Option<onset_stages::Stages>,
    /// `/proc/loadavg` before and after the run, and whether it started quiet (a loaded
    /// run is no speed claim).
    load_before: String,
    load_after: String,
    quiet: bool,
}

/// The first utterance of fresh engines, started one after another before anything else in
/// the process: the first start is the app's case (a fresh process), the later ones show what
/// the process has kept warm.
#[derive(Serialize)]
struct FirstAfterStart {
    backend: String,
    /// Per start, in order: `Engine::start` → ready (backend, audio device, warm-up) ms.
    start_ms: Vec<f64>,
    /// Per start, in order: onset ms.
    onset_ms: Vec<f64>,
    /// Per start: the onset's path inside the engine (see `ModeResult::path`).
    path_ms: Vec<[f64; 4]>,
}

/// One configuration of the engine to measure.
struct Variant {
    steps: StepMode,
    trim_lead_in: bool,
}

pub fn run(args: &OnsetArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.runs >= 1 || args.starts >= 1,
        "--runs or --starts must be at least 1"
    );
    let voice = Arc::new(Voice::load_from(
        &crate::overrides().voices_dir,
        args.voice.as_deref(),
    )?);
    let load_before = super::load();
    // First, while nothing in the process is warm yet.
    let first_after_start = (args.starts > 0)
        .then(|| first_after_start(args, &voice))
        .transpose()?;
    let modes = [
        (StepMode::Auto, true),
        (StepMode::Fixed(16), true),
        (StepMode::Fixed(64), true),
        (StepMode::Fixed(128), true),
        (StepMode::Auto, false),
    ]
    .map(|(steps, trim_lead_in)| Variant {
        steps,
        trim_lead_in,
    });
    let mut backend = first_after_start
        .as_ref()
        .map_or_else(String::new, |f| f.backend.clone());
    let mut period = None;
    let mut device_rate = 48_000;
    let mut results = Vec::new();
    for mode in modes.iter().filter(|_| args.runs > 0) {
        let (r, name, p, rate) = run_mode(args, &voice, mode)?;
        backend = name;
        period = period.or(p);
        device_rate = rate.unwrap_or(device_rate);
        if !args.json {
            eprintln!("{} (lead-in {}): done", r.steps, r.lead_in);
        }
        results.push(r);
    }
    let cpu = backend.starts_with("cpu");
    let stages = (cpu && args.stage_runs > 0)
        .then(|| onset_stages::measure(&voice, args.text, device_rate, args.stage_runs))
        .transpose()?;
    let load_after = super::load();
    let report = Report {
        text: args.text,
        backend,
        audio: args.audio,
        period_ms: period.map(|p: Duration| p.as_secs_f64() * 1e3),
        play_ms: args.play_ms,
        results,
        first_after_start,
        stages,
        quiet: super::was_quiet(&load_before, &load_after),
        load_before,
        load_after,
    };
    if !args.json {
        print_table(&report, args.runs);
    }
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

/// The engine's default configuration on the backend and output the bench was asked for.
pub(super) fn engine_config(args: &OnsetArgs, voice: &Arc<Voice>) -> EngineConfig {
    let mut cfg = EngineConfig::new(Arc::clone(voice)).with_overrides(crate::overrides());
    cfg.backend = args.backend;
    cfg.output = match args.audio {
        AudioChoice::Device => hark_audio::device(crate::overrides().audio_buffer_ms),
        AudioChoice::Simulated => hark_audio::simulated(crate::overrides().audio_buffer_ms),
    };
    cfg
}

/// Measures one mode: the result, the backend's name, the callback period and device rate.
fn run_mode(
    args: &OnsetArgs,
    voice: &Arc<Voice>,
    mode: &Variant,
) -> anyhow::Result<(ModeResult, String, Option<Duration>, Option<u32>)> {
    let mut cfg = engine_config(args, voice);
    cfg.settings.steps = mode.steps;
    cfg.trim_lead_in = mode.trim_lead_in;
    let (engine, mut events) = Engine::start(cfg)
        .context("cannot start the engine (no audio device? try --audio simulated)")?;
    // Two warm-up utterances, then the measured ones; each interrupts the one before.
    let total = args.runs + 2;
    let mut stats = Vec::new();
    let mut stops = Vec::new();
    for i in 0..total {
        engine.speak(args.text, Mode::Interrupt);
        let until = Instant::now() + Duration::from_millis(args.play_ms);
        // The first two stops end a warm-up or nothing at all.
        let mut stop = (i >= 3).then_some(());
        while Instant::now() < until {
            if stop.is_some()
                && let Some(d) = engine.last_stop_latency()
            {
                stops.push(d.as_secs_f64() * 1e3);
                stop = None;
            }
            drain(&mut events, &mut stats, Duration::from_millis(5));
        }
        if stop.is_some() {
            eprintln!("hark: warning: a stop did not finish at the callback within the play time");
        }
    }
    engine.stop();
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        drain(&mut events, &mut stats, Duration::from_millis(5));
    }
    let period = engine.output_period();
    let rate = engine.output_rate();
    let name = engine.backend().to_string();
    drop(engine);
    stats.sort_by_key(|s| s.id);
    let measured: Vec<_> = stats.into_iter().skip(2).collect();
    let onsets: Vec<f64> = measured.iter().filter_map(|s| s.onset_ms).collect();
    let rtfs: Vec<f64> = measured
        .iter()
        .map(|s| s.rtf)
        .filter(|r| *r > 0.0)
        .collect();
    let utterances_ms: Vec<[f64; 5]> = measured
        .iter()
        .filter_map(|s| match (s.onset_ms, s.first_audio_path_ms) {
            (Some(onset), [Some(a), Some(b), Some(c)]) => Some([onset, a, b, c, onset - a - b - c]),
            _ => None,
        })
        .collect();
    let path: [Vec<f64>; 4] =
        std::array::from_fn(|part| utterances_ms.iter().map(|u| u[part + 1]).collect());
    let r = ModeResult {
        steps: match mode.steps {
            StepMode::Auto => "auto".to_string(),
            StepMode::Fixed(n) => format!("fixed {n}"),
        },
        lead_in: if mode.trim_lead_in { "skipped" } else { "kept" },
        silent: measured.len() - onsets.len(),
        onset: (!onsets.is_empty()).then(|| Stats::of(onsets)),
        underruns: measured.iter().map(|s| s.underruns).sum(),
        utterances_with_underruns: measured.iter().filter(|s| s.underruns > 0).count(),
        rtf: (!rtfs.is_empty()).then(|| Stats::of(rtfs)),
        stop: (!stops.is_empty()).then(|| Stats::of(stops)),
        first_step: measured.first().map_or(0, |s| s.first_step),
        path: path.map(|v| (!v.is_empty()).then(|| Stats::of(v))),
        utterances_ms,
    };
    Ok((r, name, period, rate))
}

/// The onset of the first utterance of `args.starts` fresh engines (auto steps, lead-in
/// skipped: the app's settings), each started after the last one was dropped.
fn first_after_start(args: &OnsetArgs, voice: &Arc<Voice>) -> anyhow::Result<FirstAfterStart> {
    let mut f = FirstAfterStart {
        backend: String::new(),
        start_ms: Vec::new(),
        onset_ms: Vec::new(),
        path_ms: Vec::new(),
    };
    for _ in 0..args.starts {
        let t0 = Instant::now();
        let (engine, mut events) =
            Engine::start(engine_config(args, voice)).context("cannot start the engine")?;
        f.start_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        engine.speak(args.text, Mode::Interrupt);
        // An utterance's statistics come when it ends: here, when it is stopped.
        let mut stats = Vec::new();
        drain(&mut events, &mut stats, Duration::from_millis(args.play_ms));
        engine.stop();
        let until = Instant::now() + Duration::from_millis(500);
        while stats.is_empty() && Instant::now() < until {
            drain(&mut events, &mut stats, Duration::from_millis(5));
        }
        f.backend = engine.backend().to_string();
        drop(engine);
        let s = stats
            .first()
            .context("the first utterance after start-up made no statistics")?;
        let o = s
            .onset_ms
            .context("the first utterance after start-up was silent within the play time")?;
        f.onset_ms.push(o);
        let [a, b, c] = s.first_audio_path_ms.map(|x| x.unwrap_or(f64::NAN));
        f.path_ms.push([a, b, c, o - a - b - c]);
    }
    Ok(f)
}

/// Collects `Stats` events for up to `wait`.
pub(super) fn drain(
    events: &mut hark_engine::Events,
    stats: &mut Vec<hark_engine::Stats>,
    wait: Duration,
) {
    let until = Instant::now() + wait;
    while Instant::now() < until {
        match events.try_recv() {
            Ok(Event::Stats(s)) => stats.push(s),
            Ok(Event::Error { message, .. }) => eprintln!("hark: warning: {message}"),
            Ok(_) => {}
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => return,
        }
    }
}

fn print_table(r: &Report, runs: usize) {
    println!("{}", super::load_line(&r.load_before, &r.load_after));
    let period = r.period_ms.unwrap_or(f64::NAN);
    if r.results.is_empty() {
        println!("backend: {}; audio: {:?}", r.backend, r.audio);
    } else {
        println!(
            "backend: {}; audio: {:?}, callback period {period:.1} ms; {runs} utterances per \
             row, each played {} ms, then interrupted by the next",
            r.backend, r.audio, r.play_ms
        );
        print_modes(r);
    }
    if let Some(f) = &r.first_after_start {
        println!();
        println!(
            "first utterance of a fresh engine (auto, lead-in skipped; the first row is the \
             process's first engine, as in the app), ms"
        );
        println!(
            "| start | engine start | onset | to the engine | front half | first step | to the callback |"
        );
        println!("|---|---|---|---|---|---|---|");
        for (i, ((st, o), p)) in f
            .start_ms
            .iter()
            .zip(&f.onset_ms)
            .zip(&f.path_ms)
            .enumerate()
        {
            println!(
                "| {} | {st:.1} | {o:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                i + 1,
                p[0],
                p[1],
                p[2],
                p[3]
            );
        }
    }
    if let Some(s) = &r.stages {
        println!();
        onset_stages::print(s, period);
        if let Some(auto) = r.results.first().and_then(|m| m.onset) {
            println!(
                "measured auto onset / expected: {:.2}; / anchor (whole first segment): {:.2}",
                auto.median_ms / s.expected_ms(period, false),
                auto.median_ms / s.whole_segment_ms.median_ms
            );
        }
    }
}

/// The table of step modes and the onset's path inside the engine.
fn print_modes(r: &Report) {
    println!(
        "| steps | lead-in | onset median / P99 ms | min ms | silent | underruns (utterances) | RTF median / P99 | stop median / P99 / max ms |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let nan = Stats {
        median_ms: f64::NAN,
        p99_ms: f64::NAN,
        min_ms: f64::NAN,
        max_ms: f64::NAN,
        runs: 0,
    };
    for m in &r.results {
        let (o, rtf, stop) = (
            m.onset.unwrap_or(nan),
            m.rtf.unwrap_or(nan),
            m.stop.unwrap_or(nan),
        );
        println!(
            "| {} | {} | {:.1} / {:.1} | {:.1} | {} | {} ({}) | {:.3} / {:.3} | {:.1} / {:.1} / {:.1} |",
            m.steps,
            m.lead_in,
            o.median_ms,
            o.p99_ms,
            o.min_ms,
            m.silent,
            m.underruns,
            m.utterances_with_underruns,
            rtf.median_ms,
            rtf.p99_ms,
            stop.median_ms,
            stop.p99_ms,
            stop.max_ms
        );
    }
    println!();
    println!(
        "onset inside the engine, median / P99 ms: speak → first segment taken (phonemiser), \
         its front half, its first step, then ring → callback"
    );
    println!("| steps | lead-in | to the engine | front half | first step | to the callback |");
    println!("|---|---|---|---|---|---|");
    for m in &r.results {
        let cell = |s: &Option<Stats>| {
            s.map_or("–".to_string(), |s| {
                format!("{:.1} / {:.1}", s.median_ms, s.p99_ms)
            })
        };
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            m.steps,
            m.lead_in,
            cell(&m.path[0]),
            cell(&m.path[1]),
            cell(&m.path[2]),
            cell(&m.path[3])
        );
    }
}
