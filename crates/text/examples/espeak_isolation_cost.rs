//! What running espeak-ng in a child process costs (docs/RELIABILITY.md):
//! `cargo run --release -p hark-text --example espeak_isolation_cost`.
//!
//! Runs itself twice, in process and with the child, and prints for each the first call
//! (espeak-ng loads its data), the child's start, and per-call times of `phonemize` on a few
//! segments of the engine's sizes.

use hark_text::espeak_child::{CHILD_ARG, isolate, serve};
use std::time::Instant;

const SEGMENTS: &[&str] = &[
    "Hello.",
    "In the end, a storm settled the matter.",
    "Every evening, Mister Harris climbed the one hundred twelve steps to light the lamp.",
    "The old lighthouse stood at the edge of the cliff, its white paint peeling in the salt \
     wind, and every evening Mister Harris climbed the one hundred twelve steps to light the \
     lamp, though no ship had passed in years.",
];
const RUNS: usize = 500;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let arg = std::env::args().nth(1);
    if arg.as_deref() == Some(CHILD_ARG) {
        serve();
    }
    let exe = std::env::current_exe().expect("own path");
    let Some(mode) = arg else {
        for mode in ["in-process", "child"] {
            let status = std::process::Command::new(&exe).arg(mode).status();
            assert!(status.is_ok_and(|s| s.success()), "{mode} run failed");
        }
        return;
    };
    let t = Instant::now();
    if mode == "child" {
        isolate(&exe).expect("start the child");
    }
    let start = ms(t);
    let t = Instant::now();
    hark_text::phonemize("Hello.", "en-us").expect("phonemise");
    let first = ms(t);
    println!("{mode}: start {start:.2} ms, first call {first:.2} ms");
    for seg in SEGMENTS {
        let mut v: Vec<f64> = (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                hark_text::phonemize(seg, "en-us").expect("phonemise");
                ms(t)
            })
            .collect();
        println!(
            "  {:>3} chars: p50 {:.3} ms, p99 {:.3} ms",
            seg.len(),
            percentile(&mut v, 0.5),
            percentile(&mut v, 0.99)
        );
    }
}
