//! The two CUDA engines side by side (issue 7): onset split into the front half (`begin`)
//! and the first chunk, sustained real-time factor, host launches and copies per utterance,
//! and the GPU's idle utilisation and power with and without the persistent kernel resident.

use super::Stats;
use hark_model::backend::Backend;
use hark_model::gpu::CudaBackend;
use hark_model::gpu::device::{COPIES, LAUNCHES};
use hark_model::gpu::persist::PersistentBackend;
use serde::Serialize;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A backend whose look-ahead can be switched off (onset runs start on an idle GPU).
pub trait Speculate: Backend {
    fn set_speculate(&mut self, on: bool);
}

impl Speculate for CudaBackend {
    fn set_speculate(&mut self, on: bool) {
        self.speculate = on;
    }
}

impl Speculate for PersistentBackend {
    fn set_speculate(&mut self, on: bool) {
        self.speculate = on;
    }
}

/// One engine's figures.
#[derive(Serialize, Clone, Debug, Default)]
pub struct EngineFigures {
    pub engine: String,
    pub onset_varied: Option<Stats>,
    pub onset_20_words: Option<Stats>,
    /// Of the 20-word onset: `begin` (G2P excluded: encoder, durations, prior noise).
    pub begin_20_words: Option<Stats>,
    /// Of the 20-word onset: the first 16-frame chunk after `begin`.
    pub first_chunk_20_words: Option<Stats>,
    pub sustained_audio_s: f64,
    pub sustained_wall_ms: f64,
    pub sustained_x_realtime: f64,
    /// Host kernel/graph launches per utterance (sustained run, after start-up).
    pub launches_per_utterance: f64,
    /// Host-issued asynchronous copies per utterance (sustained run).
    pub copies_per_utterance: f64,
}

/// (launches, copies) so far.
fn counters() -> (u64, u64) {
    (
        LAUNCHES.load(Ordering::Relaxed),
        COPIES.load(Ordering::Relaxed),
    )
}

/// What the benchmark needs from its context: G2P, and a whole text streamed in the
/// bench's chunk schedule (returns audio seconds, wall ms, utterances).
pub trait Workload {
    fn ids(&self, text: &str) -> anyhow::Result<Vec<Vec<i64>>>;
    fn scales(&self) -> hark_voice::Scales;
    fn stream(&self, b: &mut dyn Backend, text: &str) -> anyhow::Result<(f64, f64, usize)>;
}

/// Onset figures: (total incl. G2P, begin, first chunk) in ms for one text.
fn onset_split(
    w: &dyn Workload,
    b: &mut dyn Backend,
    text: &str,
    seed: u64,
    first: usize,
) -> anyhow::Result<(f64, f64, f64)> {
    let t0 = Instant::now();
    let ids = w.ids(text)?;
    let ids = ids
        .first()
        .ok_or_else(|| anyhow::anyhow!("no speakable text"))?;
    let t1 = Instant::now();
    let info = b.begin(ids, &w.scales(), seed)?;
    let t2 = Instant::now();
    let pcm = b.decode(0, info.frames.min(first))?;
    let t3 = Instant::now();
    anyhow::ensure!(!pcm.is_empty(), "empty first chunk");
    let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
    Ok((ms(t0, t3), ms(t1, t2), ms(t2, t3)))
}

/// Text submitted → first chunk of PCM in host memory (ms), G2P included.
pub fn onset_once(
    w: &dyn Workload,
    b: &mut dyn Backend,
    text: &str,
    seed: u64,
    first: usize,
) -> anyhow::Result<f64> {
    Ok(onset_split(w, b, text, seed, first)?.0)
}

pub struct Plan<'a> {
    pub varied: &'a [String],
    pub twenty_words: &'a str,
    pub runs: usize,
    pub first_chunk: usize,
    pub long_text: &'a str,
}

/// Measures one engine: onsets on an idle GPU (no look-ahead), then the long text streamed
/// with look-ahead, counting host launches and copies.
pub fn measure<B: Speculate>(
    name: &str,
    w: &dyn Workload,
    b: &mut B,
    plan: &Plan,
) -> anyhow::Result<(EngineFigures, Vec<f64>)> {
    let mut f = EngineFigures {
        engine: name.to_string(),
        ..Default::default()
    };
    b.set_speculate(false);
    onset_split(w, b, "Warming up the engine.", 99, plan.first_chunk)?;
    let mut varied = Vec::with_capacity(plan.varied.len());
    for (i, t) in plan.varied.iter().enumerate() {
        varied.push(onset_split(w, b, t, i as u64, plan.first_chunk)?.0);
    }
    f.onset_varied = Some(Stats::of(varied.clone()));
    let (mut tot, mut beg, mut first) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..plan.runs {
        let (a, bb, c) = onset_split(w, b, plan.twenty_words, i as u64, plan.first_chunk)?;
        tot.push(a);
        beg.push(bb);
        first.push(c);
    }
    f.onset_20_words = Some(Stats::of(tot));
    f.begin_20_words = Some(Stats::of(beg));
    f.first_chunk_20_words = Some(Stats::of(first));
    b.set_speculate(true);
    w.stream(b, "Warming up the streaming schedule once.")?;
    let (l0, c0) = counters();
    let (audio, ms, utterances) = w.stream(b, plan.long_text)?;
    let (l1, c1) = counters();
    f.sustained_audio_s = audio;
    f.sustained_wall_ms = ms;
    f.sustained_x_realtime = audio / (ms / 1e3);
    let u = utterances.max(1) as f64;
    f.launches_per_utterance = (l1 - l0) as f64 / u;
    f.copies_per_utterance = (c1 - c0) as f64 / u;
    Ok((f, varied))
}

/// The persistent kernel's own stage profile of `text`'s onset (job taken → first chunk
/// published; means over `runs`, no look-ahead), then the host's view of the same runs.
pub fn persistent_stages(
    w: &dyn Workload,
    b: &mut PersistentBackend,
    text: &str,
    runs: usize,
    first: usize,
) -> anyhow::Result<Vec<(String, f64)>> {
    b.set_speculate(false);
    b.set_profile(true);
    let mut out: Vec<(String, f64)> = Vec::new();
    let mut add = |k: &str, v: f64| match out.iter_mut().find(|(n, _)| n == k) {
        Some((_, t)) => *t += v / runs as f64,
        None => out.push((k.to_string(), v / runs as f64)),
    };
    let mut host = Vec::new();
    for i in 0..runs {
        let (_, begin_ms, chunk_ms) = onset_split(w, b, text, i as u64, first)?;
        anyhow::ensure!(b.on_persistent_path(), "not on the persistent kernel");
        b.quiesce()?;
        for (k, v) in b.stage_profile() {
            add(k, v);
        }
        host.push((begin_ms, chunk_ms));
    }
    b.set_profile(false);
    b.set_speculate(true);
    for (begin_ms, chunk_ms) in host {
        add("host: begin (post → durations)", begin_ms);
        add("host: first chunk (→ PCM in host memory)", chunk_ms);
    }
    Ok(out)
}

/// Mean of a few `nvidia-smi` samples: GPU utilisation %, power W, SM clock MHz.
#[derive(Serialize, Clone, Debug)]
pub struct Idle {
    pub state: String,
    pub utilization_gpu_pct: f64,
    pub power_w: f64,
    pub sm_clock_mhz: f64,
    pub samples: usize,
}

/// Samples the idle GPU for about a second (None without nvidia-smi).
pub fn idle(state: &str) -> Option<Idle> {
    let mut rows = Vec::new();
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(200));
        let out = std::process::Command::new("nvidia-smi")
            .args([
                "--query-gpu=utilization.gpu,power.draw,clocks.sm",
                "--format=csv,noheader,nounits",
                "-i",
                "0",
            ])
            .output()
            .ok()?;
        let line = String::from_utf8_lossy(&out.stdout).to_string();
        let v: Vec<f64> = line
            .trim()
            .split(',')
            .filter_map(|x| x.trim().parse().ok())
            .collect();
        if v.len() == 3 {
            rows.push(v);
        }
    }
    let n = rows.len();
    (n > 0).then(|| {
        let mean = |i: usize| rows.iter().map(|r| r[i]).sum::<f64>() / n as f64;
        Idle {
            state: state.to_string(),
            utilization_gpu_pct: mean(0),
            power_w: mean(1),
            sm_clock_mhz: mean(2),
            samples: n,
        }
    })
}

/// Both engines in the table: one row per measure.
pub fn print_rows(engines: &[&EngineFigures]) {
    let s = |o: &Option<Stats>| {
        o.map_or("-".into(), |s| {
            format!("{:.3} / {:.3}", s.median_ms, s.p99_ms)
        })
    };
    let row = |label: &str, f: &dyn Fn(&EngineFigures) -> String| {
        let cells: Vec<String> = engines.iter().map(|e| f(e)).collect();
        println!("| {label} | {} |", cells.join(" | "));
    };
    let names: Vec<&str> = engines.iter().map(|e| e.engine.as_str()).collect();
    println!("| measure | {} |", names.join(" | "));
    println!("|---|{}", "---|".repeat(engines.len()));
    row("onset median / P99, 20 words (ms)", &|e| {
        s(&e.onset_20_words)
    });
    row("  of which begin (front half, noise)", &|e| {
        s(&e.begin_20_words)
    });
    row("  of which first 16-frame chunk", &|e| {
        s(&e.first_chunk_20_words)
    });
    row("onset median / P99, varied (ms)", &|e| s(&e.onset_varied));
    row("sustained (× real time)", &|e| {
        format!("{:.0}", e.sustained_x_realtime)
    });
    row("host launches per utterance", &|e| {
        format!("{:.1}", e.launches_per_utterance)
    });
    row("host copies per utterance", &|e| {
        format!("{:.1}", e.copies_per_utterance)
    });
}
