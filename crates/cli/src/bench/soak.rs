//! `hark bench --soak N`: N utterances of varied text through the streaming engine (the one
//! `hark speak` and the app use) on a simulated device that plays faster than real time, with
//! interrupts, pauses and setting changes mixed in on a schedule drawn from a seed. Every
//! `every` utterances it samples the process's RSS, threads, open descriptors and (CUDA) GPU
//! memory; it fails when any of them grows, or an utterance is lost.

use super::load;
use anyhow::Context;
use hark_engine::{BackendChoice, Engine, EngineConfig, Event, Events, Mode, Settings};
use hark_text::normalize::PunctuationVerbosity;
use hark_voice::Voice;
use serde::Serialize;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct SoakArgs {
    pub voice: Option<String>,
    pub backend: BackendChoice,
    pub utterances: usize,
    /// Utterances between samples (default: 1,000, or N/10 below 10,000).
    pub every: Option<usize>,
    /// How much faster than real time the simulated device plays.
    pub speed: f64,
    pub seed: u64,
    pub json: bool,
}

/// RSS may grow this much from the first sample to the last.
const MAX_RSS_GROWTH_PCT: f64 = 5.0;
/// An utterance that has not finished by then is lost (the engine hangs).
const UTTERANCE_TIMEOUT: Duration = Duration::from_secs(60);

/// The kinds of text a desktop reader gets. None of it is ever logged.
const SHORT: &[&str] = &[
    "Yes.",
    "Okay, done.",
    "New message.",
    "Saved.",
    "Hello there.",
    "File copied to the desktop.",
];
const NUMBERS: &[&str] = &[
    "Call 555-0123 on 3/14/2025 at 10:30.",
    "It costs $1,234.56, or 12% more than in 1999.",
    "Version 2.14.7 was released on 2024-06-01.",
];
const PUNCTUATION: &[&str] = &[
    "Wait... what?! (Really?) \"Yes\" — no; maybe: #1 & @home.",
    "a/b + c = d * e ~ f | g \\ h ^ i [j] {k} <l> _m_",
];
const LONG: &str = "The quick brown fox jumps over the lazy dog, while the old farmer watches \
from his porch and wonders whether the rain will ever come back to the valley before the end of \
this long, dry summer. His daughter, who has lived in the city for twelve years, writes to him \
every Sunday; he reads each letter twice, once at breakfast and once before bed.";

/// What one step of the schedule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    /// Speak and wait for the end.
    Plain,
    /// Stop it after a while.
    Stop,
    /// Interrupt it with the next utterance (`Mode::Interrupt`).
    Interrupt,
    /// Pause it, then resume.
    Pause,
    /// Change speed, scales and volume, then speak.
    Settings,
    /// Change the punctuation verbosity live (`Engine::set_punctuation`, as the speech-dispatcher
    /// module does for SET punctuation), then speak.
    Verbosity,
    /// Start the engine again, as a change of voice or backend does in the app (a CUDA
    /// engine uploads its weights again), then speak.
    Restart,
}

/// splitmix64: a small, good, deterministic generator; the schedule must repeat from a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// One utterance of the schedule: its text and what happens to it.
fn draw(rng: &mut Rng, pathological: &str) -> (String, Action) {
    // Short texts dominate, as on a desktop (notifications, menus, one-line clipboards).
    let text = match rng.below(100) {
        0..70 => rng.pick(SHORT).to_string(),
        70..80 => rng.pick(NUMBERS).to_string(),
        80..90 => rng.pick(PUNCTUATION).to_string(),
        90..97 => LONG.to_string(),
        _ => pathological.to_string(),
    };
    let long = text.len() > 200;
    // A restart is rare: a user changes voice or backend a few times a day, not per minute.
    let action = match rng.below(1000) {
        0..550 => Action::Plain,
        550..700 => Action::Stop,
        700..800 => Action::Interrupt,
        800..900 => Action::Pause,
        900..990 => Action::Settings,
        990..999 => Action::Verbosity,
        _ => Action::Restart,
    };
    // A long text played to its end would dominate the run: it is always cut short.
    let action = match action {
        Action::Plain | Action::Pause | Action::Settings | Action::Verbosity | Action::Restart
            if long =>
        {
            Action::Stop
        }
        a => a,
    };
    (text, action)
}

/// A pathological input: one 20,000-character run of letters and digits, no spaces.
fn pathological_run() -> String {
    (0..20_000)
        .map(|i| char::from(b"a1b2c3d4e5"[i % 10]))
        .collect()
}

#[derive(Serialize, Clone, Copy)]
struct Sample {
    after: usize,
    rss_mb: f64,
    threads: usize,
    fds: usize,
    gpu_mb: Option<f64>,
    /// CUDA graphs captured so far (on CUDA): a cache that keeps meeting new shapes shows here.
    graph_captures: Option<u64>,
    /// The live heap (a `heap-count` build only): what RSS would be without the allocator's
    /// kept pages, so a leak can be told from retention.
    heap_mb: Option<f64>,
    /// What C libraries hold through glibc's malloc (libcuda, NVRTC, libsonic, …; glibc's
    /// `mallinfo2`: in-use arena and mmap bytes), which neither count above sees apart.
    c_heap_mb: f64,
    /// What glibc's malloc holds from the OS, used or not (`mallinfo2`: arena and mmap bytes):
    /// above `c_heap_mb`, freed memory its arenas keep.
    c_held_mb: f64,
    /// What mimalloc (the Rust heap's allocator) has committed, in use or kept: RSS growth
    /// outside it and outside glibc's is the driver's or a library's own mappings.
    mimalloc_mb: f64,
    /// Captured graphs dropped at the cache's cap so far (on CUDA).
    graph_evictions: Option<u64>,
    /// Anonymous memory, and how much of it is on transparent huge pages
    /// (/proc/self/smaps_rollup): RSS less mapped files and the driver's pinned memory.
    anon_mb: f64,
    thp_mb: f64,
}

#[derive(Serialize)]
struct Report {
    backend: String,
    requested: usize,
    /// Utterances that ended (`Finished`, stopped or not).
    utterances: usize,
    sample_every: usize,
    speed: f64,
    seed: u64,
    /// Lost utterances (no `Finished` within the timeout) plus `Event::Error`s.
    errors: usize,
    lost: usize,
    stopped: usize,
    interrupts: usize,
    pauses: usize,
    setting_changes: usize,
    verbosity_changes: usize,
    engine_restarts: usize,
    elapsed_s: f64,
    load_before: String,
    load_after: String,
    rss_mb: Vec<f64>,
    threads: Vec<usize>,
    fds: Vec<usize>,
    /// `null` off CUDA.
    gpu_mb: Option<Vec<f64>>,
    /// CUDA graphs captured so far, per sample; `null` off CUDA.
    graph_captures: Option<Vec<u64>>,
    /// `null` unless built with the `heap-count` feature.
    heap_mb: Option<Vec<f64>>,
    c_heap_mb: Vec<f64>,
    c_held_mb: Vec<f64>,
    mimalloc_mb: Vec<f64>,
    /// Graphs dropped at the cache's cap, per sample; `null` off CUDA.
    graph_evictions: Option<Vec<u64>>,
    anon_mb: Vec<f64>,
    thp_mb: Vec<f64>,
    rss_growth_pct: f64,
    threads_growth: i64,
    fds_growth: i64,
    gpu_growth_mb: Option<f64>,
    pass: bool,
}

/// The engine and its events, started again by [`Action::Restart`].
struct Running {
    engine: Engine,
    events: Events,
}

fn start(
    args: &SoakArgs,
    voice: &Arc<Voice>,
    verbosity: PunctuationVerbosity,
) -> anyhow::Result<Running> {
    let mut cfg = EngineConfig::new(Arc::clone(voice)).with_overrides(crate::overrides());
    cfg.backend = args.backend;
    cfg.output = hark_audio::simulated_at(crate::overrides().audio_buffer_ms, args.speed);
    cfg.segmenter.options.normalize.verbosity = verbosity;
    let (engine, events) = Engine::start(cfg).context("cannot start the engine")?;
    Ok(Running { engine, events })
}

/// Counts what comes back until every id in `open` has finished, or the timeout.
#[derive(Default)]
struct Tally {
    done: usize,
    stopped: usize,
    errors: usize,
    lost: usize,
}

impl Tally {
    /// Reads events for up to `wait` (or, with `all`, until `open` is empty or the timeout).
    fn pump(&mut self, events: &mut Events, open: &mut HashSet<u64>, wait: Duration, all: bool) {
        let until = Instant::now() + if all { UTTERANCE_TIMEOUT } else { wait };
        while Instant::now() < until && !(all && open.is_empty()) {
            match events.try_recv() {
                Ok(Event::Finished { id, stopped }) => {
                    if open.remove(&id) {
                        self.done += 1;
                        self.stopped += stopped as usize;
                    }
                }
                Ok(Event::Error { message, .. }) => {
                    // The engine's messages never contain the user's text.
                    eprintln!("hark: soak: engine error: {message}");
                    self.errors += 1;
                }
                Ok(_) => {}
                Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => break,
            }
        }
        if all && !open.is_empty() {
            eprintln!("hark: soak: {} utterance(s) never finished", open.len());
            self.lost += open.len();
            open.clear();
        }
    }
}

fn proc_count(dir: &str) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

/// The `NAME:   123 kB` field of a /proc file, in MB (NaN when absent).
fn proc_mb(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    proc_mb(&status, "VmRSS:")
}

/// glibc's bytes in use and held from the OS, in MB.
fn c_heap_mb() -> (f64, f64) {
    // SAFETY: mallinfo2 only reads glibc's counters.
    let m = unsafe { libc::mallinfo2() };
    let mb = |b: usize| b as f64 / (1024.0 * 1024.0);
    (mb(m.uordblks + m.hblkhd), mb(m.arena + m.hblkhd))
}

/// Anonymous memory and its part on transparent huge pages, in MB.
fn anon_mb() -> (f64, f64) {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    (
        proc_mb(&rollup, "Anonymous:"),
        proc_mb(&rollup, "AnonHugePages:"),
    )
}

/// Used GPU memory (MB, all contexts on the device) through the model crate's device; `None`
/// off CUDA.
fn gpu_probe(backend: &str) -> Option<hark_model::gpu::device::Gpu> {
    if !backend.starts_with("cuda") {
        return None;
    }
    hark_model::gpu::device::Gpu::new()
        .inspect_err(|e| eprintln!("hark: soak: no GPU memory probe: {e}"))
        .ok()
}

pub fn run(args: &SoakArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.utterances >= 1, "--soak needs at least 1 utterance");
    let every = args.every.unwrap_or(if args.utterances >= 10_000 {
        1_000
    } else {
        (args.utterances / 10).max(1)
    });
    anyhow::ensure!(every >= 1, "--soak-every must be at least 1");
    let voice = Arc::new(Voice::load_from(
        &crate::overrides().voices_dir,
        args.voice.as_deref(),
    )?);
    let load_before = load();
    let pathological = pathological_run();
    let mut rng = Rng(args.seed);
    let mut verbosity = PunctuationVerbosity::default();
    let mut run = start(args, &voice, verbosity)?;
    let backend = run.engine.backend().to_string();
    let gpu = gpu_probe(&backend);
    if !args.json {
        eprintln!(
            "soak: {} utterances on {backend}, simulated device at {}× real time, a sample \
             every {every} utterances{}",
            args.utterances,
            args.speed,
            if every == 1_000 {
                ""
            } else {
                " (not 1,000: N/10 below 10,000, or --soak-every)"
            }
        );
    }
    let base = Settings::for_voice(&voice);
    let mut tally = Tally::default();
    let mut open = HashSet::new();
    let (mut interrupts, mut pauses, mut changes, mut verbosities, mut restarts) = (0, 0, 0, 0, 0);
    let mut samples: Vec<Sample> = Vec::new();
    let t0 = Instant::now();
    let mut issued = 0;
    while issued < args.utterances {
        let (text, action) = draw(&mut rng, &pathological);
        // A random point in the utterance (wall time; the device plays `speed`× faster).
        let after = Duration::from_millis(20 + rng.below(200));
        match action {
            Action::Settings => {
                let mut s = base;
                s.scales.length_scale *= [0.6, 0.8, 1.0, 1.3, 1.8][rng.below(5) as usize];
                s.scales.noise_scale *= [0.0, 0.5, 1.0][rng.below(3) as usize];
                s.volume = [0.3, 1.0, 1.6][rng.below(3) as usize];
                run.engine.set_settings(s);
                changes += 1;
            }
            Action::Verbosity => {
                verbosity = *rng.pick(&PunctuationVerbosity::ALL);
                run.engine.set_punctuation(verbosity);
                verbosities += 1;
            }
            Action::Restart => {
                drop(run);
                run = start(args, &voice, verbosity)?;
                restarts += 1;
            }
            _ => {}
        }
        open.insert(run.engine.speak(&text, Mode::Queue));
        issued += 1;
        match action {
            Action::Stop => {
                tally.pump(&mut run.events, &mut open, after, false);
                run.engine.stop();
            }
            Action::Interrupt if issued < args.utterances => {
                tally.pump(&mut run.events, &mut open, after, false);
                let (next, _) = draw(&mut rng, &pathological);
                open.insert(run.engine.speak(&next, Mode::Interrupt));
                issued += 1;
                interrupts += 1;
            }
            Action::Pause => {
                tally.pump(&mut run.events, &mut open, after, false);
                run.engine.pause();
                std::thread::sleep(Duration::from_millis(10 + rng.below(40)));
                run.engine.resume();
                pauses += 1;
            }
            _ => {}
        }
        let lost = tally.lost;
        tally.pump(&mut run.events, &mut open, Duration::ZERO, true);
        if tally.lost > lost {
            // Clear what hangs, so the next utterance starts clean.
            run.engine.stop();
        }
        while issued >= (samples.len() + 1) * every {
            let (c_heap, anon) = (c_heap_mb(), anon_mb());
            let s = Sample {
                after: issued,
                rss_mb: rss_mb(),
                threads: proc_count("/proc/self/task"),
                fds: proc_count("/proc/self/fd"),
                gpu_mb: gpu.as_ref().and_then(|g| {
                    g.mem_info()
                        .ok()
                        .map(|(free, total)| (total - free) as f64 / 1e6)
                }),
                graph_captures: gpu.as_ref().map(|_| {
                    hark_model::gpu::device::GRAPH_CAPTURES
                        .load(std::sync::atomic::Ordering::Relaxed)
                }),
                heap_mb: hark_alloc::live_bytes().map(|b| b as f64 / (1024.0 * 1024.0)),
                c_heap_mb: c_heap.0,
                c_held_mb: c_heap.1,
                mimalloc_mb: hark_alloc::committed_bytes() as f64 / (1024.0 * 1024.0),
                graph_evictions: gpu.as_ref().map(|_| {
                    hark_model::gpu::device::GRAPH_EVICTIONS
                        .load(std::sync::atomic::Ordering::Relaxed)
                }),
                anon_mb: anon.0,
                thp_mb: anon.1,
            };
            if !args.json {
                let heap = s
                    .heap_mb
                    .map_or(String::new(), |h| format!(", heap {h:.1} MB"));
                let graphs = s.graph_captures.map_or(String::new(), |g| {
                    format!(", graphs {g} ({} evicted)", s.graph_evictions.unwrap_or(0))
                });
                eprintln!(
                    "soak: {issued} done, {:.0} s, RSS {:.1} MB{heap}, mimalloc {:.1}, anon {:.1} \
                     (THP {:.1}), C heap {:.1} (held {:.1}){graphs}",
                    t0.elapsed().as_secs_f64(),
                    s.rss_mb,
                    s.mimalloc_mb,
                    s.anon_mb,
                    s.thp_mb,
                    s.c_heap_mb,
                    s.c_held_mb
                );
            }
            samples.push(s);
        }
    }
    drop(run);
    let elapsed = t0.elapsed().as_secs_f64();
    let report = report(ReportParts {
        args,
        backend,
        every,
        tally,
        counts: [interrupts, pauses, changes, verbosities, restarts],
        elapsed,
        load_before,
        samples: &samples,
        gpu: gpu.is_some(),
    });
    if !args.json {
        print_table(&report, &samples);
    }
    println!("{}", serde_json::to_string(&report)?);
    anyhow::ensure!(
        report.pass,
        "soak failed: RSS grew {:.1} % (limit {MAX_RSS_GROWTH_PCT} %), threads {:+}, fds {:+}, \
         {} error(s)",
        report.rss_growth_pct,
        report.threads_growth,
        report.fds_growth,
        report.errors
    );
    Ok(())
}

struct ReportParts<'a> {
    args: &'a SoakArgs,
    backend: String,
    every: usize,
    tally: Tally,
    /// Interrupts, pauses, setting changes, verbosity changes, engine restarts.
    counts: [usize; 5],
    elapsed: f64,
    load_before: String,
    samples: &'a [Sample],
    gpu: bool,
}

fn report(p: ReportParts) -> Report {
    let s = p.samples;
    let col = |f: fn(&Sample) -> f64| s.iter().map(f).collect::<Vec<_>>();
    let growth = |f: fn(&Sample) -> f64| match (s.first(), s.last()) {
        (Some(a), Some(b)) => f(b) - f(a),
        _ => 0.0,
    };
    let first_rss = s.first().map_or(f64::NAN, |a| a.rss_mb);
    let rss_growth_pct = growth(|x| x.rss_mb) / first_rss * 100.0;
    let threads_growth = growth(|x| x.threads as f64) as i64;
    let fds_growth = growth(|x| x.fds as f64) as i64;
    let gpu_mb = p
        .gpu
        .then(|| col(|x| x.gpu_mb.unwrap_or(f64::NAN)))
        .filter(|v| !v.is_empty());
    let errors = p.tally.errors + p.tally.lost;
    let [
        interrupts,
        pauses,
        setting_changes,
        verbosity_changes,
        engine_restarts,
    ] = p.counts;
    Report {
        backend: p.backend,
        requested: p.args.utterances,
        utterances: p.tally.done,
        sample_every: p.every,
        speed: p.args.speed,
        seed: p.args.seed,
        errors,
        lost: p.tally.lost,
        stopped: p.tally.stopped,
        interrupts,
        pauses,
        setting_changes,
        verbosity_changes,
        engine_restarts,
        elapsed_s: p.elapsed,
        load_before: p.load_before,
        load_after: load(),
        rss_mb: col(|x| x.rss_mb),
        threads: s.iter().map(|x| x.threads).collect(),
        fds: s.iter().map(|x| x.fds).collect(),
        gpu_growth_mb: gpu_mb
            .as_ref()
            .map(|_| growth(|x| x.gpu_mb.unwrap_or(f64::NAN))),
        gpu_mb,
        graph_captures: p
            .gpu
            .then(|| s.iter().map(|x| x.graph_captures.unwrap_or(0)).collect()),
        heap_mb: s
            .iter()
            .map(|x| x.heap_mb)
            .collect::<Option<Vec<_>>>()
            .filter(|v| !v.is_empty()),
        c_heap_mb: col(|x| x.c_heap_mb),
        c_held_mb: col(|x| x.c_held_mb),
        mimalloc_mb: col(|x| x.mimalloc_mb),
        graph_evictions: p
            .gpu
            .then(|| s.iter().map(|x| x.graph_evictions.unwrap_or(0)).collect()),
        anon_mb: col(|x| x.anon_mb),
        thp_mb: col(|x| x.thp_mb),
        pass: rss_growth_pct <= MAX_RSS_GROWTH_PCT
            && threads_growth <= 0
            && fds_growth <= 0
            && errors == 0
            && !s.is_empty(),
        rss_growth_pct,
        threads_growth,
        fds_growth,
    }
}

fn print_table(r: &Report, samples: &[Sample]) {
    println!(
        "backend: {}; {} of {} utterances ended ({} stopped), {} interrupts, {} pauses, {} \
         setting changes, {} verbosity changes, {} engine restarts; {:.0} s; load {} → {}",
        r.backend,
        r.utterances,
        r.requested,
        r.stopped,
        r.interrupts,
        r.pauses,
        r.setting_changes,
        r.verbosity_changes,
        r.engine_restarts,
        r.elapsed_s,
        r.load_before,
        r.load_after
    );
    println!(
        "| after | RSS MB | threads | fds | GPU MB | graphs (evicted) | heap MB | mimalloc MB \
         | C heap (held) MB | anon (THP) MB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for s in samples {
        let gpu = s.gpu_mb.map_or("–".to_string(), |g| format!("{g:.0}"));
        let graphs = s.graph_captures.map_or("–".to_string(), |g| {
            format!("{g} ({})", s.graph_evictions.unwrap_or(0))
        });
        let heap = s.heap_mb.map_or("–".to_string(), |h| format!("{h:.1}"));
        println!(
            "| {} | {:.1} | {} | {} | {gpu} | {graphs} | {heap} | {:.1} | {:.1} ({:.1}) | {:.1} \
             ({:.1}) |",
            s.after,
            s.rss_mb,
            s.threads,
            s.fds,
            s.mimalloc_mb,
            s.c_heap_mb,
            s.c_held_mb,
            s.anon_mb,
            s.thp_mb
        );
    }
    println!(
        "RSS growth {:.2} % (limit {MAX_RSS_GROWTH_PCT} %), threads {:+}, fds {:+}, errors {}: {}",
        r.rss_growth_pct,
        r.threads_growth,
        r.fds_growth,
        r.errors,
        if r.pass { "PASS" } else { "FAIL" }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_repeats_from_a_seed_and_mixes_every_action() {
        let p = pathological_run();
        let a: Vec<_> = (0..5000).scan(Rng(7), |r, _| Some(draw(r, &p))).collect();
        let b: Vec<_> = (0..5000).scan(Rng(7), |r, _| Some(draw(r, &p))).collect();
        assert_eq!(a, b);
        for action in [
            Action::Plain,
            Action::Stop,
            Action::Interrupt,
            Action::Pause,
            Action::Settings,
            Action::Verbosity,
            Action::Restart,
        ] {
            assert!(
                a.iter().any(|(_, x)| *x == action),
                "{action:?} never drawn"
            );
        }
        assert!(a.iter().all(|(t, x)| t.len() <= 200 || *x != Action::Plain));
    }

    fn sample(after: usize, rss_mb: f64, threads: usize, fds: usize) -> Sample {
        Sample {
            after,
            rss_mb,
            threads,
            fds,
            gpu_mb: None,
            graph_captures: None,
            heap_mb: None,
            c_heap_mb: 1.0,
            c_held_mb: 2.0,
            mimalloc_mb: 3.0,
            graph_evictions: None,
            anon_mb: rss_mb,
            thp_mb: 0.0,
        }
    }

    fn verdict(samples: &[Sample], errors: usize) -> Report {
        let args = SoakArgs {
            voice: None,
            backend: BackendChoice::Cpu,
            utterances: 30,
            every: Some(10),
            speed: 20.0,
            seed: 1,
            json: true,
        };
        report(ReportParts {
            args: &args,
            backend: "cpu".into(),
            every: 10,
            tally: Tally {
                done: 30,
                errors,
                ..Tally::default()
            },
            counts: [0; 5],
            elapsed: 1.0,
            load_before: String::new(),
            samples,
            gpu: false,
        })
    }

    #[test]
    fn growth_or_a_lost_utterance_fails_the_soak() {
        let flat = [sample(10, 100.0, 8, 12), sample(20, 104.0, 8, 11)];
        let r = verdict(&flat, 0);
        assert!(r.pass);
        assert!((r.rss_growth_pct - 4.0).abs() < 1e-9);
        assert_eq!((r.threads_growth, r.fds_growth), (0, -1));
        assert!(!verdict(&flat, 1).pass);
        assert!(!verdict(&[sample(10, 100.0, 8, 12), sample(20, 106.0, 8, 12)], 0).pass);
        assert!(!verdict(&[sample(10, 100.0, 8, 12), sample(20, 100.0, 9, 12)], 0).pass);
        assert!(!verdict(&[sample(10, 100.0, 8, 12), sample(20, 100.0, 8, 13)], 0).pass);
        assert!(!verdict(&[], 0).pass);
    }
}
