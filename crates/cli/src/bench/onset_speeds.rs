//! `hark bench --onset --onset-speeds 1,3`: the onset (speak → first audible sample at the
//! audio callback) at each speed, on one warm engine with the app's settings, the speeds
//! interleaved utterance by utterance (their order swapped every round) so that the machine's
//! load falls on all of them alike. Issue 14: the onset at 3× stays within 10 ms of 1×.

use super::onset::{OnsetArgs, drain, engine_config};
use super::{Stats, load};
use anyhow::Context;
use hark_engine::{Engine, Mode};
use hark_voice::Voice;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Serialize)]
struct Speed {
    speed: f32,
    onset: Option<Stats>,
    /// Utterances with no sound within the play time.
    silent: usize,
}

#[derive(Serialize)]
struct Report {
    text: &'static str,
    backend: String,
    rounds: usize,
    play_ms: u64,
    load_before: String,
    load_after: String,
    speeds: Vec<Speed>,
    /// Per round, each speed's onset minus the first speed's, ms: its median and P99.
    difference_from_first: Vec<Option<Stats>>,
    /// Per round, each speed's onset / the first speed's: the median of those ratios.
    ratio_to_first_median: Vec<Option<f64>>,
}

pub fn run(args: &OnsetArgs, speeds: &[f32]) -> anyhow::Result<()> {
    anyhow::ensure!(
        speeds.len() >= 2,
        "--onset-speeds needs two speeds or more, e.g. 1,3"
    );
    let voice = Arc::new(Voice::load_from(
        &crate::overrides().voices_dir,
        args.voice.as_deref(),
    )?);
    let load_before = load();
    let cfg = engine_config(args, &voice);
    let base = cfg.settings;
    let (engine, mut events) = Engine::start(cfg)
        .context("cannot start the engine (no audio device? try --audio simulated)")?;
    let say = |speed: f32| {
        engine.set_settings(hark_engine::Settings { speed, ..base });
        let id = engine.speak(args.text, Mode::Interrupt);
        (id, speed)
    };
    // Two warm-up utterances at each speed, not counted.
    let mut asked: HashMap<u64, (usize, f32)> = HashMap::new();
    let mut stats = Vec::new();
    for round in 0..args.runs + 2 {
        let mut order: Vec<f32> = speeds.to_vec();
        if round % 2 == 1 {
            order.reverse();
        }
        for speed in order {
            let (id, speed) = say(speed);
            if round >= 2 {
                asked.insert(id, (round - 2, speed));
            }
            drain(&mut events, &mut stats, Duration::from_millis(args.play_ms));
        }
    }
    engine.stop();
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        drain(&mut events, &mut stats, Duration::from_millis(5));
    }
    let backend = engine.backend().to_string();
    drop(engine);
    // onsets[speed index][round]
    let mut onsets = vec![vec![None; args.runs]; speeds.len()];
    for s in &stats {
        if let Some(&(round, speed)) = asked.get(&s.id)
            && let Some(k) = speeds.iter().position(|&x| x == speed)
        {
            onsets[k][round] = s.onset_ms;
        }
    }
    let of = |v: Vec<f64>| (!v.is_empty()).then(|| Stats::of(v));
    let per_speed = speeds
        .iter()
        .zip(&onsets)
        .map(|(&speed, o)| Speed {
            speed,
            onset: of(o.iter().flatten().copied().collect()),
            silent: o.iter().filter(|x| x.is_none()).count(),
        })
        .collect();
    let pairs = |k: usize| -> Vec<(f64, f64)> {
        onsets[0]
            .iter()
            .zip(&onsets[k])
            .filter_map(|(a, b)| Some(((*a)?, (*b)?)))
            .collect()
    };
    let report = Report {
        text: args.text,
        backend,
        rounds: args.runs,
        play_ms: args.play_ms,
        load_before,
        load_after: load(),
        speeds: per_speed,
        difference_from_first: (0..speeds.len())
            .map(|k| of(pairs(k).iter().map(|(a, b)| b - a).collect()))
            .collect(),
        ratio_to_first_median: (0..speeds.len())
            .map(|k| of(pairs(k).iter().map(|(a, b)| b / a).collect()).map(|s| s.median_ms))
            .collect(),
    };
    if !args.json {
        print_table(&report);
    }
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

fn print_table(r: &Report) {
    println!(
        "backend: {}; {} rounds, the speeds interleaved, each utterance played {} ms, then \
         interrupted by the next; load before {}, after {}",
        r.backend, r.rounds, r.play_ms, r.load_before, r.load_after
    );
    println!(
        "| speed | onset median / P99 ms | min ms | silent | − first speed, median / P99 ms | ÷ first speed, median of the rounds |"
    );
    println!("|---|---|---|---|---|---|");
    for ((s, d), q) in r
        .speeds
        .iter()
        .zip(&r.difference_from_first)
        .zip(&r.ratio_to_first_median)
    {
        let o = s.onset.map_or("–".into(), |o| {
            format!("{:.1} / {:.1} | {:.1}", o.median_ms, o.p99_ms, o.min_ms)
        });
        let d = d.map_or("–".into(), |d| {
            format!("{:+.1} / {:+.1}", d.median_ms, d.p99_ms)
        });
        let q = q.map_or("–".into(), |q| format!("{q:.3}"));
        println!("| {}× | {o} | {} | {d} | {q} |", s.speed, s.silent);
    }
}
