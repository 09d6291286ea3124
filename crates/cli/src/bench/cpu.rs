//! `hark bench --backend cpu`: Hark's CPU engine against onnxruntime on Piper's ONNX, run by
//! run. The two alternate (which goes first alternates too), so a load that comes and goes
//! falls on both; the figure to quote is the median of the per-pair ratios. Each thread count
//! runs in its own rayon pool in the same process, so the thread scaling is measured pair by
//! pair as well, and `--isa` caps Hark's kernels at AVX2 or the portable loops to measure the
//! paths of CPUs without AVX-512 (onnxruntime keeps its own choice).

use super::{FIRST_CLAUSE, SENTENCE, Stats, load};
use anyhow::Context;
use hark_engine::{BackendChoice, Input, Synthesizer};
use hark_model::cpu::isa::{self, Isa};
use hark_voice::Voice;
use serde::Serialize;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, mpsc};
use std::time::Instant;

pub struct CpuArgs<'a> {
    /// Rounds; each has one whole-sentence pair and `clauses` first-clause pairs per
    /// thread count and instruction set.
    pub rounds: usize,
    pub clauses: usize,
    pub threads: Vec<usize>,
    pub isas: Vec<Isa>,
    /// Makes the anchor's command line (`bench_ort.py --serve`), none for `--no-ort`; one
    /// anchor runs per instruction set of the arms (see [`CpuidShim`]).
    pub ort: Option<Box<dyn Fn() -> anyhow::Result<Command> + 'a>>,
    pub json: bool,
}

/// One engine's times at one setting, in round order (pairs line up by index).
#[derive(Default)]
struct Series {
    full: Vec<f64>,
    clause: Vec<f64>,
}

#[derive(Serialize)]
struct Arm {
    threads: usize,
    isa: &'static str,
    hark_full: Stats,
    hark_first_clause: Stats,
    /// The instruction set onnxruntime's process saw: its own widest, or the arm's, capped
    /// by hiding the rest from its CPUID ([`CpuidShim`]); a note when it could not be.
    ort_isa: Option<String>,
    ort_full: Option<Stats>,
    ort_first_clause: Option<Stats>,
    /// Median over pairs of Hark's time / onnxruntime's (< 1: Hark is faster).
    ratio_full: Option<f64>,
    ratio_first_clause: Option<f64>,
    /// Hark's real-time factor on the whole sentence (time / audio).
    rtf: f64,
}

#[derive(Serialize)]
struct Scaling {
    isa: &'static str,
    threads: usize,
    /// Median over rounds of the whole sentence's time at `threads` / at 1 thread.
    hark: f64,
    ort: Option<f64>,
}

#[derive(Serialize)]
struct Report {
    text: &'static str,
    first_clause: &'static str,
    cpu: String,
    detected_isa: &'static str,
    ort_engine: Option<String>,
    audio_seconds: f64,
    rounds: usize,
    load_before: String,
    load_after: String,
    /// The run was quiet ([`super::was_quiet`]: under [`super::QUIET_LOAD`] before, no more than
    /// the core count after); a loaded run is no claim.
    quiet: bool,
    arms: Vec<Arm>,
    scaling: Vec<Scaling>,
}

/// onnxruntime in a Python process that times one run per request.
struct Ort {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    engine: String,
    /// The widest instruction set the process's CPUID showed (`avx512`, `avx2`, `sse`).
    isa: Option<String>,
}

/// `cpuid_cap.so` (source beside this file), built with the system's C compiler into a
/// private folder: preloaded into an anchor, it hides the vector extensions above an arm's
/// instruction set from that process, so onnxruntime runs the kernels a CPU without them runs
/// and the arm compares like with like (`--isa avx2` against onnxruntime on AVX2, not on the
/// AVX-512 it would otherwise pick).
struct CpuidShim {
    dir: tempfile::TempDir,
}

const CPUID_CAP_C: &str = include_str!("cpuid_cap.c");

impl CpuidShim {
    fn build() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let src = dir.path().join("cpuid_cap.c");
        std::fs::write(&src, CPUID_CAP_C)?;
        let out = Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()))
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(dir.path().join("cpuid_cap.so"))
            .arg(&src)
            .output()
            .context("cannot run the C compiler (cc) for the CPUID cap")?;
        anyhow::ensure!(
            out.status.success(),
            "building the CPUID cap failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(Self { dir })
    }

    /// Runs `cmd` with everything above `isa` hidden.
    fn cap(&self, cmd: &mut Command, isa: Isa) {
        let level = if isa == Isa::Avx2 { "avx2" } else { "sse" };
        cmd.env("LD_PRELOAD", self.dir.path().join("cpuid_cap.so"))
            .env("HARK_CPUID_CAP", level);
    }
}

/// The anchor for arms at `isa`: onnxruntime as it is at the CPU's widest, else with the wider
/// extensions hidden; its instruction set as the report gives it.
fn start_anchor(
    make: &dyn Fn() -> anyhow::Result<Command>,
    isa: Isa,
    shim: &Option<anyhow::Result<CpuidShim>>,
) -> anyhow::Result<(Ort, String)> {
    let mut cmd = make()?;
    if isa == isa::detected() {
        let ort = Ort::start(cmd)?;
        let seen = ort.isa.clone().unwrap_or_else(|| "unknown".into());
        return Ok((ort, seen));
    }
    let want = if isa == Isa::Avx2 { "avx2" } else { "sse" };
    match shim {
        Some(Ok(shim)) => shim.cap(&mut cmd, isa),
        Some(Err(e)) => {
            let ort = Ort::start(cmd)?;
            let seen = ort.isa.clone().unwrap_or_else(|| "unknown".into());
            return Ok((ort, format!("{seen} (not capped: {e:#})")));
        }
        None => unreachable!("a shim is built whenever an arm is below the CPU's widest"),
    }
    let ort = Ort::start(cmd)?;
    let seen = ort.isa.clone().unwrap_or_else(|| "unknown".into());
    let label = if seen == want {
        format!("{seen} (CPUID capped)")
    } else {
        format!("{seen} (not capped to {want}: CPUID faulting unavailable?)")
    };
    Ok((ort, label))
}

impl Ort {
    fn start(mut cmd: Command) -> anyhow::Result<Self> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("cannot start the onnxruntime anchor (pass --python or --no-ort)")?;
        let stdin = child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        #[derive(serde::Deserialize)]
        struct Hello {
            engine: String,
            isa: Option<String>,
        }
        let hello: Hello = serde_json::from_str(&read_line(&mut stdout)?)
            .context("the onnxruntime anchor's first line")?;
        Ok(Self {
            child,
            stdin,
            stdout,
            engine: hello.engine,
            isa: hello.isa,
        })
    }

    fn time(&mut self, which: &str, threads: usize) -> anyhow::Result<f64> {
        writeln!(self.stdin, "{which} {threads}")?;
        self.stdin.flush()?;
        #[derive(serde::Deserialize)]
        struct Reply {
            ms: f64,
        }
        let r: Reply = serde_json::from_str(&read_line(&mut self.stdout)?)?;
        Ok(r.ms)
    }
}

impl Drop for Ort {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_line(r: &mut impl BufRead) -> anyhow::Result<String> {
    let mut line = String::new();
    anyhow::ensure!(
        r.read_line(&mut line)? > 0,
        "the onnxruntime anchor ended early (its error is above)"
    );
    Ok(line)
}

/// The median of the pairwise ratios `a[i] / b[i]`.
fn ratios(a: &[f64], b: &[f64]) -> f64 {
    Stats::of(a.iter().zip(b).map(|(x, y)| x / y).collect()).median_ms
}

/// A synthesizer living on one worker of its own pool, so that the model's parallel loops
/// run on that pool: it takes a text and answers with the time and the samples made.
struct Worker {
    texts: mpsc::Sender<&'static str>,
    times: mpsc::Receiver<anyhow::Result<(f64, usize)>>,
    /// Dropped after the sender, which ends the worker's loop.
    _pool: rayon::ThreadPool,
}

impl Worker {
    fn start(voice: Arc<Voice>, threads: usize) -> anyhow::Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?;
        let (texts, requests) = mpsc::channel::<&'static str>();
        let (answer, times) = mpsc::channel();
        pool.spawn(move || {
            let mut synth = match Synthesizer::new(voice, BackendChoice::Cpu) {
                Ok(s) => s,
                Err(e) => return drop(answer.send(Err(e.into()))),
            };
            for text in requests {
                let t0 = Instant::now();
                let mut samples = 0;
                let done = synth.speak(Input::Text(text), |s| {
                    samples += s.len();
                    Ok(())
                });
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                if answer
                    .send(done.map(|_| (ms, samples)).map_err(Into::into))
                    .is_err()
                {
                    return;
                }
            }
        });
        Ok(Self {
            texts,
            times,
            _pool: pool,
        })
    }

    fn speak(&self, text: &'static str) -> anyhow::Result<(f64, usize)> {
        self.texts.send(text)?;
        self.times.recv()?
    }
}

/// A pause before every timed run, so that neither engine starts while the other's threads
/// are still spinning down (onnxruntime's pool spins after a run, and took a core from the
/// next Hark run: the first clause at 2 threads timed 114 ms right after onnxruntime and
/// 89 ms on its own). Both engines start each run from idle, as they do in use.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(30);

pub fn run(voice: Arc<Voice>, args: CpuArgs<'_>) -> anyhow::Result<()> {
    let load_before = load();
    let workers = args
        .threads
        .iter()
        .map(|&t| Worker::start(voice.clone(), t))
        .collect::<anyhow::Result<Vec<_>>>()?;
    // One anchor per instruction set of the arms, the lower ones capped.
    let mut levels: Vec<Isa> = args.isas.clone();
    levels.sort();
    levels.dedup();
    let shim = levels
        .iter()
        .any(|&i| i < isa::detected())
        .then(CpuidShim::build);
    let mut anchors: Vec<(Isa, Ort, String)> = Vec::new();
    if let Some(make) = &args.ort {
        for &level in &levels {
            let (ort, seen) = start_anchor(make.as_ref(), level, &shim)?;
            anchors.push((level, ort, seen));
        }
    }
    let rate = voice.config.sample_rate as f64;
    let arms: Vec<(usize, Isa)> = args
        .threads
        .iter()
        .enumerate()
        .flat_map(|(p, _)| args.isas.iter().map(move |&i| (p, i)))
        .collect();
    let mut hark: Vec<Series> = arms.iter().map(|_| Series::default()).collect();
    let mut anchor: Vec<Series> = arms.iter().map(|_| Series::default()).collect();
    let mut samples = 0;
    for (a, &(p, level)) in arms.iter().enumerate() {
        isa::cap(level);
        for _ in 0..2 {
            workers[p].speak(FIRST_CLAUSE)?;
        }
        samples = workers[p].speak(SENTENCE)?.1;
        eprintln!(
            "warm: {} threads, {} ({} of {})",
            args.threads[p],
            level.name(),
            a + 1,
            arms.len()
        );
    }
    for round in 0..args.rounds {
        for (a, &(p, level)) in arms.iter().enumerate() {
            isa::cap(level);
            let threads = args.threads[p];
            let ort_first = round % 2 == 1;
            let mut ort = anchors
                .iter_mut()
                .find(|(l, _, _)| *l == level)
                .map(|(_, o, _)| o);
            for (which, text, reps) in [
                ("full", SENTENCE, 1),
                ("clause", FIRST_CLAUSE, args.clauses),
            ] {
                for _ in 0..reps {
                    if ort_first && let Some(o) = ort.as_mut() {
                        std::thread::sleep(SETTLE);
                        anchor[a].push(which, o.time(which, threads)?);
                    }
                    std::thread::sleep(SETTLE);
                    hark[a].push(which, workers[p].speak(text)?.0);
                    if !ort_first && let Some(o) = ort.as_mut() {
                        std::thread::sleep(SETTLE);
                        anchor[a].push(which, o.time(which, threads)?);
                    }
                }
            }
        }
        eprintln!("round {} of {} (load {})", round + 1, args.rounds, load());
    }
    isa::cap(Isa::Avx512);
    let with_ort = !anchors.is_empty();
    let anchor_isa = |level: Isa| {
        anchors
            .iter()
            .find(|(l, _, _)| *l == level)
            .map(|(_, _, seen)| seen.clone())
    };
    let load_after = load();
    let report = Report {
        text: SENTENCE,
        first_clause: FIRST_CLAUSE,
        cpu: cpu_model(),
        detected_isa: isa::detected().name(),
        ort_engine: anchors.first().map(|(_, o, _)| o.engine.clone()),
        audio_seconds: samples as f64 / rate,
        rounds: args.rounds,
        quiet: super::was_quiet(&load_before, &load_after),
        load_before,
        load_after,
        arms: arms
            .iter()
            .enumerate()
            .map(|(a, &(p, level))| {
                let (h, o) = (&hark[a], &anchor[a]);
                let hark_full = Stats::of(h.full.clone());
                Arm {
                    threads: args.threads[p],
                    isa: level.name(),
                    hark_full,
                    hark_first_clause: Stats::of(h.clause.clone()),
                    ort_isa: anchor_isa(level),
                    ort_full: with_ort.then(|| Stats::of(o.full.clone())),
                    ort_first_clause: with_ort.then(|| Stats::of(o.clause.clone())),
                    ratio_full: with_ort.then(|| ratios(&h.full, &o.full)),
                    ratio_first_clause: with_ort.then(|| ratios(&h.clause, &o.clause)),
                    rtf: hark_full.median_ms / 1e3 / (samples as f64 / rate),
                }
            })
            .collect(),
        scaling: scaling(&arms, &args.threads, &hark, &anchor, with_ort),
    };
    if !args.json {
        print_table(&report);
    }
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

impl Series {
    fn push(&mut self, which: &str, ms: f64) {
        match which {
            "full" => self.full.push(ms),
            _ => self.clause.push(ms),
        }
    }
}

/// Each thread count against one thread at the same instruction set, round by round.
fn scaling(
    arms: &[(usize, Isa)],
    threads: &[usize],
    hark: &[Series],
    anchor: &[Series],
    with_ort: bool,
) -> Vec<Scaling> {
    let Some(one) = threads.iter().position(|&t| t == 1) else {
        return Vec::new();
    };
    let base = |level: Isa| arms.iter().position(|&(p, l)| p == one && l == level);
    arms.iter()
        .enumerate()
        .filter(|&(_, &(p, _))| p != one)
        .filter_map(|(a, &(p, level))| {
            let b = base(level)?;
            Some(Scaling {
                isa: level.name(),
                threads: threads[p],
                hark: ratios(&hark[a].full, &hark[b].full),
                ort: with_ort.then(|| ratios(&anchor[a].full, &anchor[b].full)),
            })
        })
        .collect()
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn print_table(r: &Report) {
    let ms = |s: &Stats| format!("{:.1} / {:.1}", s.median_ms, s.p99_ms);
    let opt = |s: &Option<Stats>| s.as_ref().map_or("–".into(), ms);
    let ratio = |x: Option<f64>| x.map_or("–".into(), |x| format!("{x:.3}"));
    println!(
        "CPU {} (widest: {}); {} rounds; {}",
        r.cpu,
        r.detected_isa,
        r.rounds,
        super::load_line(&r.load_before, &r.load_after)
    );
    if let Some(e) = &r.ort_engine {
        println!("anchor: {e}");
    }
    println!(
        "| threads | Hark kernels | ORT kernels | Hark full median / P99 ms | ORT full | Hark/ORT full (median of pairs) | Hark first clause | ORT first clause | Hark/ORT clause | Hark RTF |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for a in &r.arms {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.3} |",
            a.threads,
            a.isa,
            a.ort_isa.as_deref().unwrap_or("–"),
            ms(&a.hark_full),
            opt(&a.ort_full),
            ratio(a.ratio_full),
            ms(&a.hark_first_clause),
            opt(&a.ort_first_clause),
            ratio(a.ratio_first_clause),
            a.rtf
        );
    }
    if !r.scaling.is_empty() {
        println!("\n| Hark kernels | threads | Hark time / 1 thread | ORT time / 1 thread |");
        println!("|---|---|---|---|");
        for s in &r.scaling {
            println!(
                "| {} | {} | {:.3} | {} |",
                s.isa,
                s.threads,
                s.hark,
                ratio(s.ort)
            );
        }
    }
}
