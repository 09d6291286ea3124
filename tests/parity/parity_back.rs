//! Parity of the back half of the CPU reference (flow reverse, HiFi-GAN decoder) with the
//! onnxruntime oracle (`scripts/oracle.py`), and the windowed (streaming) decode.
//!
//! Weights come from Hark's own importer run on the ONNX the oracle used. Timings are printed,
//! not asserted; for meaningful numbers run with `--test-threads=1 --nocapture`.

use hark_model::backend::{Backend, CpuBackend};
use hark_model::cpu::NEVER;
use hark_model::cpu::decoder::{DecoderPacks, decode, decode_cols_packed, decode_window};
use hark_model::cpu::flow::{FlowPacks, flow_reverse, flow_reverse_cols_packed};
use hark_voice::import::{WeightDtype, import_piper_report};
use hark_voice::tensor::rel_l2;
use hark_voice::{ModelDims, Scales, Voice, Weights};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use testkit::Oracle;

const TOL: f64 = 1e-4;
const WINDOW_TOL: f64 = 1e-5;

struct Setup {
    oracle: Oracle,
    dims: ModelDims,
    weights: Weights,
    /// The imported voice, as the engine loads it.
    voice: Arc<Voice>,
}

/// Oracle dumps plus the voice imported into a temp dir, once per test binary; `None` (with a
/// printed reason) when the data is absent.
fn setup() -> Option<&'static Setup> {
    static SETUP: OnceLock<Option<Setup>> = OnceLock::new();
    SETUP
        .get_or_init(|| {
            let oracle = Oracle::load_or_skip()?;
            let onnx = PathBuf::from(oracle.manifest["onnx"].as_str().expect("manifest: onnx"));
            if !onnx.is_file() {
                eprintln!(
                    "skipped: the oracle's voice {} is not on this machine (run scripts/oracle.py)",
                    onnx.display()
                );
                return None;
            }
            let tmp = tempfile::tempdir().expect("tempdir");
            let t0 = Instant::now();
            let report = import_piper_report(&onnx, None, tmp.path(), Some("v"), WeightDtype::F32)
                .expect("importing the oracle's voice");
            let weights = Weights::load(&report.dir.join("voice.safetensors")).expect("weights");
            let voice = Arc::new(Voice::load_from(tmp.path(), Some("v")).expect("load"));
            eprintln!("imported {} in {:.2?}", onnx.display(), t0.elapsed());
            Some(Setup {
                oracle,
                dims: report.config.dims,
                weights,
                voice,
            })
        })
        .as_ref()
}

#[test]
fn flow_reverse_matches_oracle() {
    let Some(s) = setup() else { return };
    assert!(!s.oracle.cases.is_empty());
    for case in &s.oracle.cases {
        let z_p = case.tensor("z_p");
        let want = case.tensor("z");
        let t0 = Instant::now();
        let got = flow_reverse(&s.weights, &s.dims, &z_p).expect("flow_reverse");
        let dt = t0.elapsed();
        assert_eq!(got.shape, want.shape, "case {}", case.name);
        let err = rel_l2(&got.data, &want.data);
        eprintln!(
            "flow   {:>13}: {:4} frames, rel L2 {err:.2e}, {dt:.2?}",
            case.name,
            z_p.dim(1)
        );
        assert!(
            err <= TOL,
            "case {}: flow rel L2 {err:e} > {TOL:e}",
            case.name
        );
    }
}

/// The flow as the engine runs it: WaveNet convolutions on Winograd's F(4, 5) (`FlowPacks`).
#[test]
fn winograd_flow_matches_oracle() {
    let Some(s) = setup() else { return };
    let packs = FlowPacks::new(&s.weights, &s.dims).expect("packs");
    for case in &s.oracle.cases {
        let z_p = case.tensor("z_p");
        let want = case.tensor("z");
        let f = z_p.dim(1);
        let got = flow_reverse_cols_packed(&s.weights, &s.dims, Some(&packs), &z_p, 0..f, NEVER)
            .expect("flow");
        let direct = flow_reverse(&s.weights, &s.dims, &z_p).expect("flow_reverse");
        let err = rel_l2(&got.data, &want.data);
        eprintln!(
            "flow on Winograd {:>13}: rel L2 {err:.2e} (direct kernel {:.2e})",
            case.name,
            rel_l2(&direct.data, &want.data)
        );
        assert!(err <= TOL, "case {}: rel L2 {err:e} > {TOL:e}", case.name);
    }
}

/// The decoder as the engine runs it: the ResBlocks of its wider stages on Winograd's
/// algorithm (`DecoderPacks::with_winograd`).
#[test]
fn winograd_decoder_matches_oracle() {
    let Some(s) = setup() else { return };
    let packs = DecoderPacks::with_winograd(&s.weights, &s.dims).expect("packs");
    for case in &s.oracle.cases {
        let z = case.tensor("z");
        let want = case.tensor("audio");
        let got = decode_cols_packed(&s.weights, &s.dims, &packs, &z, 0..z.dim(1), NEVER)
            .expect("decode");
        assert_eq!(got.len(), want.len(), "case {}", case.name);
        let err = rel_l2(&got, &want.data);
        eprintln!("decode on Winograd {:>13}: rel L2 {err:.2e}", case.name);
        assert!(err <= TOL, "case {}: rel L2 {err:e} > {TOL:e}", case.name);
    }
}

/// The CPU backend end to end (the engine's path: packed upsamplers, the flow on Winograd),
/// whole and in streaming chunks: onnxruntime's durations exactly and its audio within 1e-4.
#[test]
fn cpu_backend_matches_oracle() {
    let Some(s) = setup() else { return };
    for case in &s.oracle.cases {
        let scales = Scales {
            noise_scale: case.scales[0],
            length_scale: case.scales[1],
            noise_w: case.scales[2],
        };
        assert!(
            scales.noise_scale == 0.0 && scales.noise_w == 0.0,
            "{}: noise",
            case.name
        );
        let want_durations: Vec<usize> =
            case.ints("durations").iter().map(|&d| d as usize).collect();
        let want = case.tensor("audio");
        let mut b = CpuBackend::new(s.voice.clone());
        let info = b.begin(&case.ints("ids"), &scales, 0).expect("begin");
        assert_eq!(info.durations, want_durations, "{}: durations", case.name);
        let whole = b.decode(0, info.frames).expect("decode");
        let mut streamed = Vec::new();
        let (mut a, mut step) = (0, 16);
        while a < info.frames {
            let e = (a + step).min(info.frames);
            streamed.extend(b.decode(a, e).expect("chunk"));
            (a, step) = (e, step * 2);
        }
        for (what, audio) in [("whole", &whole), ("streamed", &streamed)] {
            assert_eq!(audio.len(), want.len(), "{} {what}: samples", case.name);
            let err = rel_l2(audio, &want.data);
            eprintln!("cpu backend {:>13} {what}: rel L2 {err:.2e}", case.name);
            assert!(err <= TOL, "{} {what}: rel L2 {err:e} > {TOL:e}", case.name);
        }
    }
}

#[test]
fn decode_matches_oracle() {
    let Some(s) = setup() else { return };
    assert!(!s.oracle.cases.is_empty());
    for case in &s.oracle.cases {
        let z = case.tensor("z");
        let want = case.tensor("audio");
        let t0 = Instant::now();
        let got = decode(&s.weights, &s.dims, &z).expect("decode");
        let dt = t0.elapsed();
        assert_eq!(
            got.len(),
            z.dim(1) * s.dims.samples_per_frame(),
            "case {}",
            case.name
        );
        assert_eq!(got.len(), want.len(), "case {}", case.name);
        let err = rel_l2(&got, &want.data);
        eprintln!(
            "decode {:>13}: {:4} frames, rel L2 {err:.2e}, {dt:.2?}",
            case.name,
            z.dim(1)
        );
        assert!(
            err <= TOL,
            "case {}: decoder rel L2 {err:e} > {TOL:e}",
            case.name
        );
    }
}

/// Frames [a, b) decoded from z_p[a−L : b+R] equal the full decode, at the utterance edges and
/// inside it, with L = R = the voice's receptive field.
#[test]
fn windowed_decode_matches_full() {
    let Some(s) = setup() else { return };
    let case = s
        .oracle
        .cases
        .iter()
        .max_by_key(|c| c.tensor("z_p").dim(1))
        .expect("a case");
    let (d, w) = (&s.dims, &s.weights);
    let ctx = d.flow_decoder_receptive_frames();
    let (left, right) = d.flow_decoder_receptive_span();
    eprintln!("receptive span of flow+decoder: {left} left, {right} right");
    let z_p = case.tensor("z_p");
    let f = z_p.dim(1);
    let hop = d.samples_per_frame();
    let full = decode(w, d, &flow_reverse(w, d, &z_p).expect("flow")).expect("decode");
    // A streaming-like schedule, then a chunk in the middle and the tail.
    let mut bounds = vec![0usize];
    for n in [16, 32, 64] {
        bounds.push(bounds.last().unwrap() + n);
    }
    let mut chunks: Vec<(usize, usize)> = bounds.windows(2).map(|p| (p[0], p[1])).collect();
    chunks.push((f / 2, f / 2 + 40));
    chunks.push((f - 24, f));
    for (a, b) in chunks {
        let (a, b) = (a.min(f - 1), b.min(f));
        let t0 = Instant::now();
        let got = decode_window(w, d, &z_p, a, b, ctx).expect("decode_window");
        let dt = t0.elapsed();
        let err = rel_l2(&got, &full[a * hop..b * hop]);
        eprintln!(
            "window {}: [{a}, {b}) ctx {ctx}: rel L2 {err:.2e}, {dt:.2?}",
            case.name
        );
        assert!(err <= WINDOW_TOL, "[{a}, {b}): rel L2 {err:e}");
    }
}
