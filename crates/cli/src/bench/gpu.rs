//! `hark bench --backend cuda`: onset (text → first PCM chunk in host memory, G2P included)
//! over varied sentences, sustained real-time factor on a long text, GPU memory, a per-stage
//! breakdown, and the CPU backend (and onnxruntime, when available) on the same work.

use super::Stats;
use super::engines::{self, EngineFigures, Idle, Plan, Workload};
use hark_engine::GpuEngine;
use hark_model::backend::{Backend, CpuBackend};
use hark_model::gpu::CudaBackend;
use hark_model::gpu::persist::{PersistentBackend, choice};
use hark_voice::Scales;
use hark_voice::Voice;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// First chunk, as the onset target defines it (186 ms of audio).
const FIRST_CHUNK: usize = 16;
/// Streaming schedule after the first chunk (frames per chunk, the last one repeating).
const SCHEDULE: [usize; 5] = [16, 32, 64, 128, 256];

const WORDS: &[&str] = &[
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "while",
    "old",
    "farmer",
    "watches",
    "from",
    "his",
    "porch",
    "and",
    "wonders",
    "whether",
    "rain",
    "will",
    "ever",
    "come",
    "back",
    "to",
    "valley",
    "before",
    "end",
    "of",
    "this",
    "long",
    "dry",
    "summer",
    "morning",
    "light",
    "falls",
    "across",
    "quiet",
    "river",
    "children",
    "laugh",
    "near",
    "bridge",
    "music",
    "plays",
    "softly",
    "in",
    "kitchen",
    "window",
    "open",
    "garden",
    "smells",
    "sweet",
    "after",
    "storm",
    "we",
    "walked",
    "along",
    "narrow",
    "street",
    "market",
    "sells",
    "bread",
    "cheese",
    "apples",
    "every",
    "friday",
    "teacher",
    "explains",
    "difficult",
    "problem",
    "patiently",
    "students",
    "listen",
    "carefully",
    "train",
    "arrives",
    "late",
    "again",
    "because",
    "snow",
    "covered",
    "tracks",
    "computer",
    "reads",
    "text",
    "aloud",
    "clear",
    "voice",
    "letters",
    "arrived",
    "yesterday",
    "afternoon",
    "with",
    "news",
    "about",
    "cousin",
    "travels",
    "north",
    "mountains",
    "are",
    "beautiful",
    "autumn",
    "leaves",
    "turn",
    "red",
    "gold",
    "nobody",
    "expected",
    "such",
    "strange",
    "answer",
    "simple",
    "question",
];

/// Deterministic varied sentences of 5..=40 words.
fn sentences(n: usize) -> Vec<String> {
    let mut s = 0x2545F4914F6CDD1Du64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    (0..n)
        .map(|i| {
            let len = 5 + (i * 7 + (next() % 3) as usize) % 36;
            let mut w: Vec<String> = (0..len)
                .map(|_| WORDS[(next() % WORDS.len() as u64) as usize].to_string())
                .collect();
            if len > 12 {
                let k = len / 2;
                w[k].push(',');
            }
            let mut t = w.join(" ");
            t[..1].make_ascii_uppercase();
            t.push('.');
            t
        })
        .collect()
}

fn twenty_words() -> String {
    "The old farmer watches the quiet river from his porch and wonders whether the rain will \
     ever come back to the valley this summer."
        .to_string()
}

const LONG_TEXT: &str = "The quick brown fox jumps over the lazy dog, while the old farmer \
watches from his porch and wonders whether the rain will ever come back to the valley before the \
end of this long, dry summer. Morning light falls across the quiet river. Children laugh near the \
bridge, and music plays softly in the kitchen. After the storm we walked along the narrow street \
to the market, which sells bread, cheese and apples every Friday. The teacher explains a \
difficult problem patiently, and the students listen carefully. The train arrives late again \
because snow covered the tracks. Letters arrived yesterday afternoon with news about a cousin who \
travels north into the mountains, where the autumn leaves turn red and gold. Nobody expected such \
a strange answer to a simple question.";

#[derive(Serialize, Default)]
pub struct GpuReport {
    device: String,
    precision: String,
    startup_ms: f64,
    compile_ms: f64,
    kernels_from_cache: usize,
    weight_upload_ms: f64,
    gpu_memory_used_mb: f64,
    weight_mb: f64,
    onset_varied: Option<Stats>,
    onset_varied_sentences: usize,
    onset_20_words: Option<Stats>,
    first_chunk_frames: usize,
    sustained_audio_s: f64,
    sustained_wall_ms: f64,
    sustained_x_realtime: f64,
    /// Mean GPU/host milliseconds per stage over onset runs of the 20-word sentence.
    stages_ms: BTreeMap<String, f64>,
    g2p_ms: Option<Stats>,
    cpu_backend: Option<CpuSide>,
    onnxruntime_first_clause: Option<Stats>,
    onnxruntime_note: String,
    ratio_onset_cpu_over_gpu: Option<f64>,
    ratio_sustained_gpu_over_cpu: Option<f64>,
    ratio_onset_ort_over_gpu: Option<f64>,
    /// Both engines (issue 7), each measured alone on the same GPU in this run.
    engines: Vec<EngineFigures>,
    persistent_blocks: u32,
    /// Why the persistent engine did not run, if it did not.
    persistent_fallback: Option<String>,
    /// The persistent kernel's stage profile of the 20-word onset (mean ms), kernel-side
    /// stamps then the host's view.
    persistent_stages_ms: Vec<(String, f64)>,
    /// One grid barrier of the persistent kernel's grid (µs), from 2000 in a row.
    grid_barrier_us: Option<f64>,
    idle: Vec<Idle>,
    ratio_onset_p99_persistent_over_graph: Option<f64>,
}

#[derive(Serialize, Clone)]
struct CpuSide {
    name: String,
    onset: Stats,
    onset_runs: usize,
    sustained_x_realtime: f64,
}

struct Ctx<'a> {
    voice: &'a Voice,
    scales: Scales,
}

impl Ctx<'_> {
    fn ids(&self, text: &str) -> anyhow::Result<Vec<Vec<i64>>> {
        let c = &self.voice.config;
        Ok(
            hark_text::text_to_ids(text, &c.espeak_voice, &c.phoneme_id_map)?
                .into_iter()
                .map(|s| s.ids)
                .filter(|ids| ids.len() > 3)
                .collect(),
        )
    }

    /// Whole text streamed in the chunk schedule; returns (audio seconds, wall ms, utterances).
    fn sustained(&self, b: &mut dyn Backend, text: &str) -> anyhow::Result<(f64, f64, usize)> {
        let t0 = Instant::now();
        let mut samples = 0usize;
        let all = self.ids(text)?;
        for (i, ids) in all.iter().enumerate() {
            let info = b.begin(ids, &self.scales, i as u64)?;
            let mut a = 0;
            let mut k = 0;
            while a < info.frames {
                let e = (a + SCHEDULE[k.min(SCHEDULE.len() - 1)]).min(info.frames);
                samples += b.decode(a, e)?.len();
                a = e;
                k += 1;
            }
        }
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        let audio = samples as f64 / self.voice.config.sample_rate as f64;
        Ok((audio, ms, all.len()))
    }
}

impl Workload for Ctx<'_> {
    fn ids(&self, text: &str) -> anyhow::Result<Vec<Vec<i64>>> {
        Ctx::ids(self, text)
    }
    fn scales(&self) -> Scales {
        self.scales
    }
    fn stream(&self, b: &mut dyn Backend, text: &str) -> anyhow::Result<(f64, f64, usize)> {
        self.sustained(b, text)
    }
}

pub struct Options<'a> {
    /// Which engines to measure (graphs, persistent, or both).
    pub engines: Vec<GpuEngine>,
    pub runs: usize,
    pub cpu_runs: usize,
    pub plot: Option<&'a Path>,
    /// The onnxruntime anchor: first-clause timings over n runs, when enabled.
    pub ort: Option<&'a dyn Fn(usize) -> anyhow::Result<Stats>>,
}

pub fn run(voice: Voice, opts: &Options, json_only: bool) -> anyhow::Result<GpuReport> {
    let voice = Arc::new(voice);
    let ctx = Ctx {
        voice: &voice,
        scales: voice.config.inference,
    };
    let mut r = GpuReport {
        first_chunk_frames: FIRST_CHUNK,
        ..Default::default()
    };
    let t0 = Instant::now();
    let mut gpu = CudaBackend::new(&voice, &crate::overrides().gpu)?;
    let gpu_name = gpu.model.gpu.name.clone();
    r.startup_ms = t0.elapsed().as_secs_f64() * 1e3;
    let st = gpu.model.startup.clone();
    r.compile_ms = st.compile_ms;
    r.kernels_from_cache = st.cached_modules;
    r.weight_upload_ms = st.upload_ms;
    r.weight_mb = st.weight_bytes as f64 / 1e6;
    let (free, total) = gpu.model.gpu.mem_info()?;
    r.gpu_memory_used_mb = (total - free) as f64 / 1e6;
    r.device = gpu.name();
    r.precision = if gpu.model.f16 {
        "f16 weights (flow, decoder)"
    } else {
        "f32"
    }
    .into();
    let log = |s: &str| {
        if !json_only {
            eprintln!("{s}");
        }
    };
    log(&format!("{} ready in {:.0} ms", r.device, r.startup_ms));

    let texts = sentences(opts.runs);
    let tw = twenty_words();
    let plan = Plan {
        varied: &texts,
        twenty_words: &tw,
        runs: opts.runs,
        first_chunk: FIRST_CHUNK,
        long_text: LONG_TEXT,
    };
    let want = |e: GpuEngine| opts.engines.contains(&e);
    // Onset per varied sentence of the engine the CPU is compared with (graphs if measured).
    let mut onset = Vec::new();
    if want(GpuEngine::Graph) {
        let (f, varied) = engines::measure("CUDA graphs", &ctx, &mut gpu, &plan)?;
        r.onset_varied = f.onset_varied;
        r.onset_varied_sentences = texts.len();
        r.onset_20_words = f.onset_20_words;
        r.sustained_audio_s = f.sustained_audio_s;
        r.sustained_wall_ms = f.sustained_wall_ms;
        r.sustained_x_realtime = f.sustained_x_realtime;
        log(&format!(
            "graphs: onset {:?}, sustained {:.0}x real time",
            f.onset_20_words.map(|s| s.median_ms),
            f.sustained_x_realtime
        ));
        onset = varied;
        r.engines.push(f);
        // Stage breakdown on the 20-word sentence (graph path: events between launches).
        let mut g2p = Vec::new();
        for _ in 0..20 {
            let t = Instant::now();
            ctx.ids(&tw)?;
            g2p.push(t.elapsed().as_secs_f64() * 1e3);
        }
        r.g2p_ms = Some(Stats::of(g2p));
        gpu.speculate = false;
        gpu.model.profile = true;
        let n = 20;
        for i in 0..n {
            let ids = ctx.ids(&tw)?;
            let info = gpu.begin(&ids[0], &ctx.scales, i as u64)?;
            gpu.decode(0, info.frames.min(FIRST_CHUNK))?;
        }
        gpu.model.profile = false;
        for (k, v) in gpu.stages.drain(..) {
            *r.stages_ms.entry(k.to_string()).or_default() += v / n as f64;
        }
    }
    r.grid_barrier_us = gpu.model.grid_barrier_us().ok();
    r.idle.extend(engines::idle("idle, no kernel resident"));
    if want(GpuEngine::Persistent) {
        let mut pk = PersistentBackend::from_graph(gpu, Some(voice.clone()));
        r.persistent_blocks = pk.blocks();
        r.persistent_fallback = pk.fallback.clone();
        r.idle
            .extend(engines::idle("idle, persistent kernel resident"));
        let (f, varied) = engines::measure("persistent kernel", &ctx, &mut pk, &plan)?;
        if pk.is_persistent() {
            r.persistent_stages_ms =
                engines::persistent_stages(&ctx, &mut pk, &tw, 20, FIRST_CHUNK)?;
        }
        r.persistent_fallback = pk.fallback.clone();
        log(&format!(
            "persistent: onset {:?}, sustained {:.0}x real time",
            f.onset_20_words.map(|s| s.median_ms),
            f.sustained_x_realtime
        ));
        if onset.is_empty() {
            onset = varied;
            r.onset_varied = f.onset_varied;
            r.onset_varied_sentences = texts.len();
        }
        r.engines.push(f);
        r.idle.extend(engines::idle(
            "idle after the runs, persistent kernel resident",
        ));
    }
    if let [g, p] = &r.engines[..]
        && let (Some(go), Some(po)) = (g.onset_20_words, p.onset_20_words)
    {
        r.ratio_onset_p99_persistent_over_graph = Some(po.p99_ms / go.p99_ms);
        if r.persistent_fallback.is_none() {
            choice::store(&gpu_name, go.median_ms, po.median_ms);
        }
    }

    if opts.cpu_runs > 0 {
        let mut cpu = CpuBackend::new(voice.clone());
        let mut v = Vec::new();
        engines::onset_once(&ctx, &mut cpu, "Warming up the engine.", 99, FIRST_CHUNK)?;
        for (i, t) in texts.iter().take(opts.cpu_runs).enumerate() {
            v.push(engines::onset_once(
                &ctx,
                &mut cpu,
                t,
                i as u64,
                FIRST_CHUNK,
            )?);
        }
        let (a, ms, _) = ctx.sustained(&mut cpu, LONG_TEXT)?;
        let side = CpuSide {
            name: cpu.name(),
            onset: Stats::of(v.clone()),
            onset_runs: v.len(),
            sustained_x_realtime: a / (ms / 1e3),
        };
        // Same sentences on both sides for the onset ratio.
        let gpu_same = Stats::of(onset[..v.len()].to_vec());
        r.ratio_onset_cpu_over_gpu = Some(side.onset.median_ms / gpu_same.median_ms);
        r.ratio_sustained_gpu_over_cpu = Some(r.sustained_x_realtime / side.sustained_x_realtime);
        r.cpu_backend = Some(side);
    }
    if let Some(anchor) = opts.ort {
        match anchor(opts.runs.min(50)) {
            Ok(s) => {
                if let Some(o) = &r.onset_20_words {
                    r.ratio_onset_ort_over_gpu = Some(s.median_ms / o.median_ms);
                }
                r.onnxruntime_first_clause = Some(s);
                r.onnxruntime_note =
                    "first clause, whole synthesis (no streaming), host CPU".into();
            }
            Err(e) => r.onnxruntime_note = format!("not run: {e:#}"),
        }
    } else {
        r.onnxruntime_note = "not run (--no-ort)".into();
    }
    if let Some(p) = opts.plot {
        plot(p, &onset, &r.stages_ms)?;
    }
    Ok(r)
}

fn plot(path: &Path, onset: &[f64], stages: &BTreeMap<String, f64>) -> anyhow::Result<()> {
    use plotters::prelude::*;
    let root = SVGBackend::new(path, (1100, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(520);
    let max = onset.iter().copied().fold(0.0, f64::max).max(1e-3);
    let bins = 40usize;
    let width = max / bins as f64;
    let mut counts = vec![0u32; bins + 1];
    for &v in onset {
        counts[((v / width) as usize).min(bins)] += 1;
    }
    let top = *counts.iter().max().unwrap_or(&1) + 1;
    let mut c = ChartBuilder::on(&left)
        .caption(
            "Onset: text → first 16-frame chunk (ms)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(44)
        .build_cartesian_2d(0.0..max * 1.05, 0u32..top)?;
    c.configure_mesh().x_desc("ms").y_desc("runs").draw()?;
    c.draw_series(counts.iter().enumerate().map(|(i, &n)| {
        let x0 = i as f64 * width;
        Rectangle::new([(x0, 0), (x0 + width, n)], BLUE.mix(0.6).filled())
    }))?;
    let names: Vec<&String> = stages.keys().collect();
    let smax = stages.values().copied().fold(0.0, f64::max).max(1e-3) * 1.1;
    let mut c = ChartBuilder::on(&right)
        .caption("Time per stage, 20-word sentence (ms)", ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(250)
        .build_cartesian_2d(0.0..smax, 0..names.len())?;
    c.configure_mesh()
        .y_labels(names.len())
        .y_label_formatter(&|i| names.get(*i).map(|s| s.to_string()).unwrap_or_default())
        .x_desc("ms")
        .draw()?;
    c.draw_series(
        stages
            .values()
            .enumerate()
            .map(|(i, &v)| Rectangle::new([(0.0, i), (v, i + 1)], RED.mix(0.6).filled())),
    )?;
    root.present()?;
    Ok(())
}

pub fn print_table(r: &GpuReport) {
    let s = |o: &Option<Stats>| {
        o.map_or("-".into(), |s| {
            format!("{:.3} / {:.3}", s.median_ms, s.p99_ms)
        })
    };
    println!("| measure | value |");
    println!("|---|---|");
    println!("| device | {} ({}) |", r.device, r.precision);
    println!(
        "| start-up (compile {:.0} ms, {} cached modules; upload {:.0} ms) | {:.0} ms |",
        r.compile_ms, r.kernels_from_cache, r.weight_upload_ms, r.startup_ms
    );
    println!(
        "| GPU memory used (weights {:.1} MB) | {:.0} MB |",
        r.weight_mb, r.gpu_memory_used_mb
    );
    println!(
        "| onset median / P99, {} varied sentences (ms) | {} |",
        r.onset_varied_sentences,
        s(&r.onset_varied)
    );
    println!(
        "| onset median / P99, 20-word sentence (ms) | {} |",
        s(&r.onset_20_words)
    );
    println!("| G2P alone, 20-word sentence (ms) | {} |", s(&r.g2p_ms));
    println!(
        "| sustained, {:.1} s of audio | {:.0}× real time |",
        r.sustained_audio_s, r.sustained_x_realtime
    );
    for (k, v) in &r.stages_ms {
        println!("| stage: {k} | {v:.3} ms |");
    }
    if let Some(c) = &r.cpu_backend {
        println!(
            "| {} onset median / P99 ({} runs) | {:.1} / {:.1} ms |",
            c.name, c.onset_runs, c.onset.median_ms, c.onset.p99_ms
        );
        println!(
            "| {} sustained | {:.1}× real time |",
            c.name, c.sustained_x_realtime
        );
    }
    if let Some(x) = r.ratio_onset_cpu_over_gpu {
        println!("| onset CPU / GPU | {x:.1}× |");
    }
    if let Some(x) = r.ratio_sustained_gpu_over_cpu {
        println!("| sustained GPU / CPU | {x:.1}× |");
    }
    println!(
        "| onnxruntime | {} {} |",
        s(&r.onnxruntime_first_clause),
        r.onnxruntime_note
    );
    println!();
    let engines: Vec<&EngineFigures> = r.engines.iter().collect();
    engines::print_rows(&engines);
    println!();
    if let Some(why) = &r.persistent_fallback {
        println!("persistent kernel not used: {why}");
    }
    println!(
        "persistent kernel: {} co-resident blocks; one grid barrier {}",
        r.persistent_blocks,
        r.grid_barrier_us
            .map_or("not measured".into(), |us| format!("{us:.2} µs"))
    );
    for (k, v) in &r.persistent_stages_ms {
        println!("persistent kernel stage: {k}: {v:.3} ms");
    }
    if let Some(x) = r.ratio_onset_p99_persistent_over_graph {
        println!("onset P99 persistent / graphs: {x:.3}");
    }
    for i in &r.idle {
        println!(
            "GPU {}: utilisation {:.0} %, power {:.0} W, SM clock {:.0} MHz ({} samples)",
            i.state, i.utilization_gpu_pct, i.power_w, i.sm_clock_mhz, i.samples
        );
    }
}
