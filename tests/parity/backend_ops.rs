//! The backend test table, in the style of ggml's `test-backend-ops`: one list of stage cases
//! ([`cases`]: encoder, durations, prior, flow, decoder, whole chunk; each with its sizes,
//! seeds and bounds), each run on every backend present against the CPU reference:
//!
//! - `cpu`: the reference itself (stage cases: its time in perf mode), and for whole chunks
//!   the CPU backend streaming in chunks against the whole-utterance reference;
//! - `cuda graphs`: the graph path (stage cases through the `test-hooks` entry points);
//! - `cuda persistent`: the persistent kernel (whole chunks only: its stages run inside one
//!   launch, so a stage case is reported as not supported).
//!
//! Each comparison prints the normalised error, NMSE = ‖got − want‖² / ‖want‖² (ggml's
//! mse(a, b) / mse(a, 0)), against its bound; the bounds are the rel L2 bounds of the tests
//! this table replaced, so NMSE ≤ bound² exactly when rel L2 ≤ bound. Failures are collected
//! and the family's test fails at its end, listing them.
//!
//! Without a CUDA device the GPU backends print `skipped: no CUDA device` and the CPU cases
//! still run. Precision: `HARK_CUDA_F32=1` runs the GPU in all f32 (tighter bounds);
//! `HARK_PARITY_QUICK=1` keeps the smaller cases (compute-sanitizer). Perf mode:
//! `HARK_BACKEND_PERF=1` (or a repeat count) also times each case on each backend, the
//! median of that many runs after the checked one:
//!
//! ```text
//! HARK_BACKEND_PERF=20 cargo test --release -p hark --test parity backend_ops -- --test-threads=1 --nocapture
//! ```

use super::common::*;
use super::persistent::{noisy, quiet};
use hark_model::backend::{Backend as _, CpuBackend};
use hark_model::cpu::duration::duration_logw;
use hark_model::cpu::durations::{self, expand_frames};
use hark_model::cpu::encoder::text_encoder;
use hark_model::cpu::noise::{NoiseSource, sample_prior};
use hark_model::cpu::{decoder, flow};
use hark_model::gpu::persist::PersistentBackend;
use hark_model::gpu::{CudaBackend, GpuModel};
use hark_voice::config::VoiceSource;
use hark_voice::tensor::{Tensor, rel_l2};
use hark_voice::{ModelDims, Scales, Voice, VoiceConfig, Weights};
use rand::Rng;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

// ---- The table

/// A stage family: one test each, so a run can pick families by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Encoder,
    Durations,
    Prior,
    Flow,
    Decoder,
    /// A whole utterance through the `Backend` interface: front half, then chunks.
    Chunk,
}

/// Where a family's weights come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Weighting {
    /// Joe's shapes, random weights from this seed (inputs from seed + 1).
    Random(u64),
    /// The real voice (installed, or imported from `HARK_TEST_ONNX`).
    Voice,
}

/// One stage case's inputs.
enum Input {
    Encoder {
        ids: Vec<i64>,
    },
    Durations {
        x: Tensor,
        noise: Tensor,
    },
    /// The first flow coupling builds z_p from the prior, then flow + decoder over windows.
    Prior {
        m_p: Tensor,
        logs_p: Tensor,
        durations: Vec<usize>,
        eps: Tensor,
        noise_scale: f32,
        windows: Vec<(usize, usize)>,
    },
    Flow {
        z_p: Tensor,
    },
    Decoder {
        z: Tensor,
    },
    Chunk {
        ids: Vec<i64>,
        scales: Scales,
        seed: u64,
    },
}

struct Case {
    name: String,
    input: Input,
}

/// A family's cases, on one voice (weights and dimensions).
struct Cases {
    family: Family,
    weighting: Weighting,
    voice: Arc<Voice>,
    cases: Vec<Case>,
}

impl Cases {
    fn dims(&self) -> &ModelDims {
        &self.voice.config.dims
    }
    fn weights(&self) -> &Weights {
        &self.voice.weights
    }
}

/// Random weights as a voice the CPU backend can speak with (no phonemes: ids only).
fn random_voice(dims: ModelDims, weights: Weights) -> Arc<Voice> {
    let config = VoiceConfig {
        format_version: 1,
        name: "random".into(),
        sample_rate: 22050,
        hop_length: dims.samples_per_frame(),
        espeak_voice: String::new(),
        phoneme_id_map: Default::default(),
        inference: Scales::PIPER,
        num_speakers: 1,
        speakers: Vec::new(),
        num_symbols: dims.n_vocab,
        architecture: Default::default(),
        dims,
        weights_dtype: "f32".into(),
        source: VoiceSource {
            onnx_sha256: String::new(),
            piper_version: String::new(),
        },
    };
    Arc::new(Voice {
        dir: Default::default(),
        config,
        weights,
        speaker: 0,
    })
}

/// The smaller sizes only under `HARK_PARITY_QUICK`.
fn sizes(all: &[usize], keep: usize) -> &[usize] {
    if quick() { &all[..keep] } else { all }
}

/// The table: every case of `family` (random inputs drawn in a fixed order, so each case is
/// the same in every run), or `None` where its weights are missing (printed).
fn cases(family: Family, weighting: Weighting) -> Option<Cases> {
    let (voice, mut rng) = match weighting {
        Weighting::Random(seed) => {
            let (d, w, rng) = random_model(seed);
            (random_voice(d, w), rng)
        }
        Weighting::Voice => (real_voice()?, rand::SeedableRng::seed_from_u64(0)),
    };
    let d = &voice.config.dims;
    let (h, c) = (d.hidden_channels, d.inter_channels);
    let mut cases = Vec::new();
    let mut add = |name: String, input: Input| cases.push(Case { name, input });
    match (family, weighting) {
        (Family::Encoder, _) => {
            for &t in sizes(&[1, 9, 37, 300], 2) {
                let ids = (0..t).map(|_| rng.random_range(0..151)).collect();
                add(format!("T={t}"), Input::Encoder { ids });
            }
        }
        (Family::Durations, _) => {
            for &t in sizes(&[1, 23, 211], 2) {
                let x = Tensor::new(vec![h, t], rand_vec(&mut rng, h * t, 1.5));
                let noise = Tensor::new(vec![2, t], rand_vec(&mut rng, 2 * t, 1.2));
                add(format!("T={t}"), Input::Durations { x, noise });
            }
        }
        (Family::Prior, _) => {
            let t = 31;
            let durations: Vec<usize> = (0..t).map(|_| rng.random_range(0..9)).collect();
            let frames: usize = durations.iter().sum();
            let m_p = Tensor::new(vec![c, t], rand_vec(&mut rng, c * t, 1.0));
            let logs_p = Tensor::new(vec![c, t], rand_vec(&mut rng, c * t, 0.5));
            let eps = NoiseSource::new(11).normal(vec![c, frames]);
            let windows = vec![(0, 16), (16, 48), (48, 49), (49, frames)];
            add(
                format!("T={t}, {frames} frames"),
                Input::Prior {
                    m_p,
                    logs_p,
                    durations,
                    eps,
                    noise_scale: 0.667,
                    windows,
                },
            );
        }
        (Family::Flow, _) => {
            for &n in sizes(&[1, 5, 58, 100], 2) {
                let z_p = Tensor::new(vec![c, n], rand_vec(&mut rng, c * n, 2.0));
                add(format!("n={n}"), Input::Flow { z_p });
            }
        }
        (Family::Decoder, _) => {
            for &n in sizes(&[1, 3, 58, 100], 2) {
                let z = Tensor::new(vec![c, n], rand_vec(&mut rng, c * n, 1.0));
                add(format!("n={n}"), Input::Decoder { z });
            }
        }
        (Family::Chunk, Weighting::Random(_)) => {
            for (i, &t) in sizes(&[1, 9, 37, 150], 2).iter().enumerate() {
                let ids: Vec<i64> = (0..t)
                    .map(|_| rng.random_range(0..d.n_vocab as i64))
                    .collect();
                let seed = i as u64;
                add(
                    format!("T={t} ns0.667"),
                    Input::Chunk {
                        ids: ids.clone(),
                        scales: noisy(),
                        seed,
                    },
                );
                add(
                    format!("T={t} ns0"),
                    Input::Chunk {
                        ids,
                        scales: quiet(),
                        seed: 100 + seed,
                    },
                );
            }
        }
        (Family::Chunk, Weighting::Voice) => {
            let cfg = &voice.config;
            let all = [
                "The quick brown fox jumps over the lazy dog, while the old farmer watches from his porch.",
                "Hello world, this is a test.",
                "Numbers like 42 and words like rhythm.",
            ];
            let (from, to) = if quick() { (1, 2) } else { (0, all.len()) };
            for (si, s) in all.iter().enumerate().take(to).skip(from) {
                let ids = hark_text::text_to_ids(s, &cfg.espeak_voice, &cfg.phoneme_id_map)
                    .expect("phonemes")[0]
                    .ids
                    .clone();
                for scales in [noisy(), quiet()] {
                    add(
                        format!("s{si} T={} ns{}", ids.len(), scales.noise_scale),
                        Input::Chunk {
                            ids: ids.clone(),
                            scales,
                            seed: si as u64,
                        },
                    );
                }
            }
        }
    }
    Some(Cases {
        family,
        weighting,
        voice,
        cases,
    })
}

// ---- Backends

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Cpu,
    Graphs,
    Persistent,
}

/// A backend the table runs on, in one precision (the CPU is always f32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct On {
    kind: Kind,
    f16: bool,
}

impl On {
    const CPU: On = On {
        kind: Kind::Cpu,
        f16: false,
    };

    fn graphs(f16: bool) -> On {
        On {
            kind: Kind::Graphs,
            f16,
        }
    }

    fn persistent(f16: bool) -> On {
        On {
            kind: Kind::Persistent,
            f16,
        }
    }

    fn name(self) -> String {
        let p = if self.f16 { "f16" } else { "f32" };
        match self.kind {
            Kind::Cpu => "cpu".into(),
            Kind::Graphs => format!("cuda graphs, {p}"),
            Kind::Persistent => format!("cuda persistent, {p}"),
        }
    }

    /// Bound on rel L2 of a whole utterance against the CPU reference. The CPU backend runs
    /// its wide convolutions on Winograd's algorithm where the reference runs the direct
    /// kernel: both are f32 and within onnxruntime's 1e-4 (`parity_back`), and the flow and
    /// decoder amplify the encoder's last-bit differences to 2e-5–6e-5 of the audio.
    fn chunked_tol(self) -> f64 {
        match self.kind {
            // A streaming window of under 128 frames runs the flow's convolutions on the
            // direct kernel, the whole utterance on Winograd's algorithm (`conv1d_auto`):
            // their last-bit differences in z reach the audio 30–50 times larger, as the
            // encoder's do (see `chunk_tol`), measured up to 3.4e-5.
            Kind::Cpu => 1e-4,
            _ => CHUNKED_TOL,
        }
    }

    fn chunk_tol(self) -> f64 {
        match (self.kind, self.f16) {
            (_, true) => 1e-2,
            (_, false) => 1e-4,
        }
    }
}

/// Chunks decoded with their context against the whole decode, on one backend.
const CHUNKED_TOL: f64 = 1e-5;

/// The chunk schedule of the streaming tests: 16 frames first, then 37-frame chunks.
fn schedule(frames: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut a = 0;
    while a < frames {
        let b = (a + if a == 0 { 16 } else { 37 }).min(frames);
        out.push((a, b));
        a = b;
    }
    out
}

// ---- Running and reporting

/// Perf mode: `HARK_BACKEND_PERF=1` (10 runs) or a run count.
fn perf_runs() -> Option<usize> {
    let v = std::env::var("HARK_BACKEND_PERF").ok()?;
    match v.parse::<usize>() {
        Ok(0) => None,
        Ok(1) | Err(_) => Some(10),
        Ok(n) => Some(n),
    }
}

/// `f` once, checked, then in perf mode `runs` more times: the result of the first and the
/// median milliseconds of the others (of the first outside perf mode).
fn timed<T>(mut f: impl FnMut() -> T) -> (T, f64) {
    let t0 = Instant::now();
    let out = f();
    let first = ms(t0);
    let Some(runs) = perf_runs() else {
        return (out, first);
    };
    let mut v: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            ms(t)
        })
        .collect();
    v.sort_by(f64::total_cmp);
    (out, v[v.len() / 2])
}

/// One family's report: a line per comparison, the failures kept for the end.
struct Report {
    family: Family,
    failures: Vec<String>,
    times: Vec<(String, String, f64)>,
}

impl Report {
    fn new(family: Family, weighting: Weighting) -> Self {
        say(&format!(
            "== backend ops: {family:?} ({}){}",
            match weighting {
                Weighting::Random(seed) => format!("random weights, seed {seed}"),
                Weighting::Voice => "the voice".into(),
            },
            perf_runs().map_or(String::new(), |n| format!(
                ", perf mode: median of {n} runs"
            ))
        ));
        Self {
            family,
            failures: Vec::new(),
            times: Vec::new(),
        }
    }

    /// `got` against `want` by NMSE, within rel L2 `tol`.
    fn compare(&mut self, case: &str, on: On, what: &str, got: &[f32], want: &[f32], tol: f64) {
        if got.len() != want.len() {
            return self.fail(
                case,
                on,
                &format!("{what}: {} values, want {}", got.len(), want.len()),
            );
        }
        self.error(case, on, what, rel_l2(got, want), tol);
    }

    /// A comparison already made: rel L2 `err` against `tol`.
    fn error(&mut self, case: &str, on: On, what: &str, err: f64, tol: f64) {
        let ok = err <= tol;
        say(&format!(
            "  {case:<22} {:<22} {what:<22} NMSE {:9.2e} ≤ {:7.0e}  (rel L2 {err:.2e} ≤ {tol:.0e})  {}",
            on.name(),
            err * err,
            tol * tol,
            if ok { "OK" } else { "FAIL" }
        ));
        if !ok {
            self.failures.push(format!(
                "{case} [{}] {what}: rel L2 {err:e} > {tol:e}",
                on.name()
            ));
        }
    }

    fn fail(&mut self, case: &str, on: On, msg: &str) {
        say(&format!("  {case:<22} {:<22} {msg}  FAIL", on.name()));
        self.failures.push(format!("{case} [{}] {msg}", on.name()));
    }

    fn note(&self, case: &str, on: On, msg: &str) {
        say(&format!("  {case:<22} {:<22} {msg}", on.name()));
    }

    /// Milliseconds of `case` on the backend labelled `on` (see [`timed`]).
    fn time(&mut self, case: &str, on: &str, ms: f64) {
        self.times.push((case.to_string(), on.to_string(), ms));
    }

    fn finish(self) {
        // The times as a table: a row per case, a column per backend.
        let mut cols: Vec<&str> = Vec::new();
        let mut rows: Vec<&str> = Vec::new();
        for (case, on, _) in &self.times {
            if !cols.contains(&on.as_str()) {
                cols.push(on);
            }
            if !rows.contains(&case.as_str()) {
                rows.push(case);
            }
        }
        if !rows.is_empty() {
            let mut s = format!(
                "-- {:?}: ms per case ({})\n  {:<22}",
                self.family,
                perf_runs().map_or("first run; HARK_BACKEND_PERF=N: median of N".into(), |n| {
                    format!("median of {n} runs")
                }),
                "case"
            );
            for c in &cols {
                let _ = write!(s, " {c:>22}");
            }
            for row in &rows {
                let _ = write!(s, "\n  {row:<22}");
                for c in &cols {
                    match self.times.iter().find(|(r, o, _)| r == row && o == c) {
                        Some((_, _, ms)) => {
                            let _ = write!(s, " {ms:>22.3}");
                        }
                        None => {
                            let _ = write!(s, " {:>22}", "-");
                        }
                    }
                }
            }
            say(&s);
        }
        assert!(
            self.failures.is_empty(),
            "{:?}: {} failed:\n{}",
            self.family,
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}

/// Runs one family of the table on every backend present.
fn run(family: Family, weighting: Weighting) {
    let mut r = Report::new(family, weighting);
    let Some(t) = cases(family, weighting) else {
        return;
    };
    let opts = gpu_options();
    let gpu = gpu_or_skip();
    match family {
        Family::Chunk => run_chunks(&t, &mut r, gpu),
        _ => {
            let refs: Vec<Out> = t
                .cases
                .iter()
                .map(|c| {
                    let (out, ms) = timed(|| cpu_stage(&t, &c.input));
                    r.note(&c.name, On::CPU, "reference");
                    r.time(&c.name, "cpu", ms);
                    out
                })
                .collect();
            r.note(
                "every case",
                On::persistent(opts.f16()),
                "not supported: the kernel runs stages only inside a job",
            );
            if gpu {
                let on = On::graphs(opts.f16());
                let mut g = GpuModel::new(t.weights(), t.dims(), &opts).expect("GPU model");
                for (c, want) in t.cases.iter().zip(&refs) {
                    // The first launch of a shape pays for allocations: not timed.
                    graph_stage(&t, &mut g, &c.input);
                    let (got, ms) = timed(|| graph_stage(&t, &mut g, &c.input));
                    r.time(&c.name, &on.name(), ms);
                    check_stage(&mut r, &t, c, on, &got, want);
                }
            }
        }
    }
    r.finish();
}

// ---- Stage cases

/// A stage's outputs.
#[derive(Default)]
struct Out {
    /// Named values, compared by name with the reference's.
    vals: Vec<(&'static str, Vec<f32>)>,
    durations: Vec<usize>,
    /// Frame offsets (from the duration predictor).
    offsets: Vec<i32>,
    /// The prior family: each window's samples, then the whole utterance decoded at once.
    windows: Vec<Vec<f32>>,
    whole: Vec<f32>,
}

impl Out {
    fn val(&self, name: &str) -> &[f32] {
        &self
            .vals
            .iter()
            .find(|(n, _)| *n == name)
            .expect("a value of the reference")
            .1
    }
}

fn cpu_stage(t: &Cases, input: &Input) -> Out {
    let (w, d) = (t.weights(), t.dims());
    match input {
        Input::Encoder { ids } => {
            let e = text_encoder(w, d, ids).unwrap();
            Out {
                vals: vec![
                    ("x", e.x.data),
                    ("m_p", e.m_p.data),
                    ("logs_p", e.logs_p.data),
                ],
                ..Default::default()
            }
        }
        Input::Durations { x, noise } => {
            let logw = duration_logw(w, d, x, noise).unwrap();
            Out {
                durations: durations::durations(&logw, 1.0),
                vals: vec![("logw", logw)],
                ..Default::default()
            }
        }
        Input::Prior {
            m_p,
            logs_p,
            durations,
            eps,
            noise_scale,
            windows,
        } => {
            let m_f = expand_frames(m_p, durations);
            let l_f = expand_frames(logs_p, durations);
            // The same stream as `eps`: NoiseSource 11, [C, frames].
            let z_p = sample_prior(&m_f, &l_f, *noise_scale, &mut NoiseSource::new(11));
            assert_eq!(eps.shape, z_p.shape);
            let frames = z_p.dim(1);
            let ctx = d.flow_decoder_receptive_frames();
            let hop = d.samples_per_frame();
            let whole = decoder::decode_window(w, d, &z_p, 0, frames, ctx).unwrap();
            Out {
                windows: windows
                    .iter()
                    .map(|&(a, b)| whole[a * hop..b * hop].to_vec())
                    .collect(),
                whole,
                ..Default::default()
            }
        }
        Input::Flow { z_p } => Out {
            vals: vec![("z", flow::flow_reverse(w, d, z_p).unwrap().data)],
            ..Default::default()
        },
        Input::Decoder { z } => Out {
            vals: vec![("audio", decoder::decode(w, d, z).unwrap())],
            ..Default::default()
        },
        Input::Chunk { .. } => unreachable!("chunks run through the Backend interface"),
    }
}

/// The stage alone on the graph path, through the `test-hooks` entry points.
fn graph_stage(t: &Cases, g: &mut GpuModel, input: &Input) -> Out {
    let d = t.dims();
    match input {
        Input::Encoder { ids } => {
            g.run_encoder(ids).unwrap();
            let f = g.read_front(ids.len()).unwrap();
            Out {
                vals: vec![("x", f.x), ("m_p", f.m_p), ("logs_p", f.logs_p)],
                ..Default::default()
            }
        }
        Input::Durations { x, noise } => {
            let n = x.dim(1);
            g.set_encoder_output(&x.data, n).unwrap();
            let durations = g.run_sdp(&noise.data, 1.0).unwrap();
            let f = g.read_front(n).unwrap();
            Out {
                vals: vec![("logw", f.logw)],
                durations,
                offsets: f.off,
                ..Default::default()
            }
        }
        Input::Prior {
            m_p,
            logs_p,
            durations,
            eps,
            noise_scale,
            windows,
        } => {
            g.set_prior(&m_p.data, &logs_p.data, durations).unwrap();
            g.set_utterance(durations.clone(), *noise_scale, Some(&eps.data))
                .unwrap();
            let ctx = d.flow_decoder_receptive_frames();
            let frames = eps.dim(1);
            let mut out = Out::default();
            for &(a, b) in windows {
                let n = g.launch_window(a, b, ctx, 0).unwrap();
                out.windows.push(g.gpu.dtoh_sync(g.out_ptr(0), n).unwrap());
            }
            let n = g.launch_window(0, frames, ctx, 1).unwrap();
            out.whole = g.gpu.dtoh_sync(g.out_ptr(1), n).unwrap();
            out
        }
        Input::Flow { z_p } => Out {
            vals: vec![("z", g.flow_host(&z_p.data, z_p.dim(1)).unwrap())],
            ..Default::default()
        },
        Input::Decoder { z } => Out {
            vals: vec![("audio", g.decode_host(&z.data, z.dim(1)).unwrap())],
            ..Default::default()
        },
        Input::Chunk { .. } => unreachable!("chunks run through the Backend interface"),
    }
}

/// A duration may differ from the reference's only where exp(logw) · length_scale sits
/// within float noise of an integer (a ceil may flip there).
fn durations_agree(got: &[usize], want: &[usize], logw: &[f32], length_scale: f32) -> bool {
    got.len() == want.len()
        && got.iter().zip(want).zip(logw).all(|((&a, &b), &l)| {
            let v = l.exp() * length_scale;
            a == b || (v - v.round()).abs() < 1e-3
        })
}

fn check_stage(r: &mut Report, t: &Cases, c: &Case, on: On, got: &Out, want: &Out) {
    let name = c.name.as_str();
    let back = back_tol();
    match t.family {
        Family::Encoder => {
            for what in ["x", "m_p", "logs_p"] {
                r.compare(name, on, what, got.val(what), want.val(what), 1e-5);
            }
        }
        Family::Durations => {
            let logw = want.val("logw");
            r.compare(name, on, "logw", got.val("logw"), logw, 1e-4);
            if !durations_agree(&got.durations, &want.durations, logw, 1.0) {
                r.fail(
                    name,
                    on,
                    &format!("durations {:?}, want {:?}", got.durations, want.durations),
                );
            }
            let mut acc = 0i32;
            let mut want_off: Vec<i32> = got
                .durations
                .iter()
                .map(|&d| {
                    let o = acc;
                    acc += d as i32;
                    o
                })
                .collect();
            want_off.push(acc);
            if got.offsets != want_off {
                r.fail(
                    name,
                    on,
                    &format!("frame offsets {:?}, want {want_off:?}", got.offsets),
                );
            } else {
                r.note(name, on, "durations and frame offsets: OK");
            }
        }
        Family::Prior => {
            let Input::Prior { windows, .. } = &c.input else {
                unreachable!()
            };
            let frames = want.whole.len() / t.dims().samples_per_frame();
            for ((a, b), (g, w)) in windows.iter().zip(got.windows.iter().zip(&want.windows)) {
                let what = format!("window [{a},{b}) of {frames}");
                r.compare(name, on, &what, g, w, back);
            }
            // Chunks equal the whole decode on the same backend up to summation order.
            let chunked: Vec<f32> = got.windows.concat();
            r.compare(
                name,
                on,
                "chunks vs own whole",
                &chunked,
                &got.whole,
                CHUNKED_TOL,
            );
        }
        Family::Flow => r.compare(name, on, "z", got.val("z"), want.val("z"), back),
        Family::Decoder => r.compare(name, on, "audio", got.val("audio"), want.val("audio"), back),
        Family::Chunk => unreachable!(),
    }
}

// ---- Whole chunks

/// A whole utterance made by the CPU reference, stage by stage: encoder, duration predictor,
/// expansion, prior (the same noise stream as every backend), flow, decoder on all frames.
/// With `durations` given (a backend's, where a ceil flipped), the reference uses those.
struct Whole {
    logw: Vec<f32>,
    durations: Vec<usize>,
    audio: Vec<f32>,
}

fn reference(t: &Cases, ids: &[i64], scales: &Scales, seed: u64, dur: Option<&[usize]>) -> Whole {
    let (w, d) = (t.weights(), t.dims());
    let enc = text_encoder(w, d, ids).unwrap();
    let mut rng = NoiseSource::new(seed);
    let noise = rng.sdp_noise(ids.len(), scales.noise_w);
    let logw = duration_logw(w, d, &enc.x, &noise).unwrap();
    let durations = dur.map_or_else(
        || durations::durations(&logw, scales.length_scale),
        <[_]>::to_vec,
    );
    let m_f = expand_frames(&enc.m_p, &durations);
    let l_f = expand_frames(&enc.logs_p, &durations);
    let z_p = sample_prior(&m_f, &l_f, scales.noise_scale, &mut rng);
    let audio = if z_p.dim(1) == 0 {
        Vec::new()
    } else {
        decoder::decode(w, d, &flow::flow_reverse(w, d, &z_p).unwrap()).unwrap()
    };
    Whole {
        logw,
        durations,
        audio,
    }
}

/// What a backend made of a whole utterance: its durations, the chunks streamed in the
/// schedule, then the whole utterance decoded again at once.
struct Streamed {
    durations: Vec<usize>,
    chunked: Vec<f32>,
    whole: Vec<f32>,
}

fn stream(b: &mut dyn hark_model::backend::Backend, input: &Input) -> Streamed {
    let Input::Chunk { ids, scales, seed } = input else {
        unreachable!()
    };
    let info = b.begin(ids, scales, *seed).unwrap();
    let mut chunked = Vec::new();
    for (a, e) in schedule(info.frames) {
        chunked.extend(b.decode(a, e).unwrap());
    }
    let whole = if info.frames == 0 {
        Vec::new()
    } else {
        b.decode(0, info.frames).unwrap()
    };
    Streamed {
        durations: info.durations,
        chunked,
        whole,
    }
}

/// Whole chunks: the CPU backend, the graph path (in both precisions on the voice, unless
/// quick) and the persistent kernel, each against the CPU reference.
fn run_chunks(t: &Cases, r: &mut Report, gpu: bool) {
    let refs: Vec<Whole> = t
        .cases
        .iter()
        .map(|c| {
            let Input::Chunk { ids, scales, seed } = &c.input else {
                unreachable!()
            };
            let (want, ms) = timed(|| reference(t, ids, scales, *seed, None));
            let frames: usize = want.durations.iter().sum();
            r.note(&c.name, On::CPU, &format!("reference: {frames} frames"));
            r.time(&c.name, "cpu reference", ms);
            want
        })
        .collect();
    let mut cpu = CpuBackend::new(Arc::clone(&t.voice));
    chunk_rows(t, r, On::CPU, &mut cpu, &refs, None);
    if !gpu {
        return;
    }
    let opts = gpu_options();
    let precisions = match t.weighting {
        // As the voice test always did: both precisions, whatever this run's.
        Weighting::Voice if !quick() => vec![opts.f16(), !opts.f16()],
        _ => vec![opts.f16()],
    };
    for f16 in precisions {
        let o = opts.with_f16(f16);
        let t0 = Instant::now();
        let mut graph =
            CudaBackend::from_model(GpuModel::new(t.weights(), t.dims(), &o).expect("GPU model"))
                .expect("CUDA backend");
        let on = On::graphs(f16);
        r.note(
            "start-up",
            on,
            &format!("{} ready in {:.0} ms", graph.name(), ms(t0)),
        );
        chunk_rows(t, r, on, &mut graph, &refs, None);
        if f16 != opts.f16() {
            continue;
        }
        let mut pk = PersistentBackend::from_graph(graph, None);
        let on = On::persistent(f16);
        if !pk.is_persistent() {
            r.fail(
                "start-up",
                on,
                &format!("the kernel did not start: {:?}", pk.fallback),
            );
            continue;
        }
        r.note("start-up", on, &format!("{} blocks", pk.blocks()));
        chunk_rows(t, r, on, &mut pk, &refs, Some(&|b| b.on_persistent_path()));
    }
}

/// One backend over every chunk case: durations (identical on the voice; on random weights a
/// ceil may flip, and the reference then follows the backend's durations), the whole
/// utterance against the reference, and the streamed chunks against the backend's own whole
/// decode.
fn chunk_rows<B: hark_model::backend::Backend>(
    t: &Cases,
    r: &mut Report,
    on: On,
    b: &mut B,
    refs: &[Whole],
    on_path: Option<&dyn Fn(&B) -> bool>,
) {
    for (c, want) in t.cases.iter().zip(refs) {
        let name = c.name.as_str();
        let (got, ms) = timed(|| stream(b, &c.input));
        r.time(name, &on.name(), ms);
        if let Some(path) = on_path
            && !path(b)
        {
            r.fail(name, on, "fell back from the persistent kernel");
            continue;
        }
        let Input::Chunk { ids, scales, seed } = &c.input else {
            unreachable!()
        };
        let flipped;
        let want = if got.durations == want.durations {
            want
        } else if t.weighting != Weighting::Voice
            && durations_agree(
                &got.durations,
                &want.durations,
                &want.logw,
                scales.length_scale,
            )
        {
            r.note(
                name,
                on,
                "a duration flipped at a ceil: reference redone with these",
            );
            flipped = reference(t, ids, scales, *seed, Some(&got.durations));
            &flipped
        } else {
            r.fail(
                name,
                on,
                &format!("durations {:?}, want {:?}", got.durations, want.durations),
            );
            continue;
        };
        if want.audio.is_empty() {
            r.note(name, on, "no frames: durations only");
            continue;
        }
        r.compare(
            name,
            on,
            "whole vs reference",
            &got.whole,
            &want.audio,
            on.chunk_tol(),
        );
        r.compare(
            name,
            on,
            "chunks vs own whole",
            &got.chunked,
            &got.whole,
            on.chunked_tol(),
        );
    }
}

// ---- The families, one test each (scripts/cuda/run.sh picks them by name)

macro_rules! families {
    ($($test:ident: $family:ident on $weighting:expr;)*) => {
        $(
            #[test]
            fn $test() {
                run(Family::$family, $weighting);
            }
        )*
    };
}

families! {
    encoder: Encoder on Weighting::Random(1);
    durations: Durations on Weighting::Random(3);
    prior: Prior on Weighting::Random(9);
    flow: Flow on Weighting::Random(5);
    decoder: Decoder on Weighting::Random(7);
    chunk_on_random_weights: Chunk on Weighting::Random(21);
    chunk_on_the_voice: Chunk on Weighting::Voice;
}
