//! Front half of the CPU reference (text encoder, SDP, durations, expansion, prior) against the
//! onnxruntime oracle written by `scripts/oracle.py`. Weights come from the Rust importer run on
//! the same ONNX file the oracle used.

use hark_model::cpu::duration::duration_logw;
use hark_model::cpu::durations::{durations, expand_frames};
use hark_model::cpu::encoder::{EncoderPacks, text_encoder, text_encoder_packed};
use hark_model::cpu::noise::{NoiseSource, sample_prior};
use hark_voice::tensor::{Tensor, rel_l2};
use hark_voice::{ModelDims, Voice, WeightDtype, Weights, import_piper};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;
use testkit::{Oracle, OracleCase};

const TOL: f64 = 1e-4;

struct Setup {
    oracle: Oracle,
    weights: Weights,
    dims: ModelDims,
    _tmp: tempfile::TempDir,
}

/// Oracle + imported voice, shared by the tests of this binary; `None` (skip) without them.
fn setup() -> Option<&'static Setup> {
    static S: OnceLock<Option<Setup>> = OnceLock::new();
    S.get_or_init(|| {
        let oracle = Oracle::load_or_skip()?;
        let onnx = std::env::var_os("HARK_VOICE_ONNX")
            .map(PathBuf::from)
            .or_else(|| oracle.manifest["onnx"].as_str().map(PathBuf::from))
            .filter(|p| p.is_file());
        let Some(onnx) = onnx else {
            eprintln!("skipped: the oracle's ONNX voice is not found (set HARK_VOICE_ONNX)");
            return None;
        };
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = import_piper(&onnx, None, tmp.path(), None, WeightDtype::F32)
            .expect("import the voice");
        let voice = Voice::load_from(tmp.path(), dir.to_str()).expect("load the imported voice");
        Some(Setup {
            oracle,
            weights: voice.weights,
            dims: voice.config.dims,
            _tmp: tmp,
        })
    })
    .as_ref()
}

fn check(case: &OracleCase, what: &str, got: &[f32], want: &Tensor) -> f64 {
    assert_eq!(got.len(), want.len(), "{}: {what} length", case.name);
    let e = rel_l2(got, &want.data);
    eprintln!("{:>14} {what:>9}: rel L2 {e:.2e}", case.name);
    assert!(e <= TOL, "{}: {what} rel L2 {e:.3e} > {TOL:e}", case.name);
    e
}

#[test]
fn text_encoder_matches_oracle() {
    let Some(s) = setup() else { return };
    // The direct kernel, then the FFN on Winograd's algorithm (as the CPU backend runs it).
    let packs = EncoderPacks::new(&s.weights, &s.dims).expect("packs");
    assert!(packs.is_some(), "Joe's FFN (K = 3) has a Winograd form");
    for (how, packs) in [("direct", None), ("winograd", packs.as_ref())] {
        eprintln!("text encoder, FFN on the {how} path:");
        for case in &s.oracle.cases {
            let ids = case.ints("ids");
            let out = text_encoder_packed(&s.weights, &s.dims, packs, &ids).expect("encoder");
            let (x, m, l) = (case.tensor("x"), case.tensor("m_p"), case.tensor("logs_p"));
            assert_eq!(out.x.shape, x.shape, "{}: x shape", case.name);
            assert_eq!(out.m_p.shape, m.shape, "{}: m_p shape", case.name);
            check(case, "x", &out.x.data, &x);
            check(case, "m_p", &out.m_p.data, &m);
            check(case, "logs_p", &out.logs_p.data, &l);
        }
    }
}

#[test]
fn duration_predictor_matches_oracle() {
    let Some(s) = setup() else { return };
    for case in &s.oracle.cases {
        assert_eq!(
            case.scales[2], 0.0,
            "{}: the oracle must use noise_w 0",
            case.name
        );
        let x = case.tensor("x");
        let t = x.dim(1);
        let noise = NoiseSource::new(0).sdp_noise(t, case.scales[2]);
        // Stage on its own: the oracle's x in.
        let logw = duration_logw(&s.weights, &s.dims, &x, &noise).expect("sdp");
        let want_logw = case.tensor("logw");
        check(case, "logw", &logw, &want_logw);

        // Chained from the Rust encoder: durations must be identical.
        let ids = case.ints("ids");
        let enc = text_encoder(&s.weights, &s.dims, &ids).expect("encoder");
        let logw = duration_logw(&s.weights, &s.dims, &enc.x, &noise).expect("sdp");
        check(case, "logw(enc)", &logw, &want_logw);
        let dur = durations(&logw, case.scales[1]);
        let want: Vec<usize> = case.ints("durations").iter().map(|&d| d as usize).collect();
        assert_eq!(dur, want, "{}: durations differ", case.name);
        eprintln!(
            "{:>14} durations: identical ({} frames)",
            case.name,
            dur.iter().sum::<usize>()
        );
    }
}

#[test]
fn expansion_and_prior_match_oracle() {
    let Some(s) = setup() else { return };
    for case in &s.oracle.cases {
        assert_eq!(
            case.scales[0], 0.0,
            "{}: the oracle must use noise_scale 0",
            case.name
        );
        let ids = case.ints("ids");
        let enc = text_encoder(&s.weights, &s.dims, &ids).expect("encoder");
        let dur: Vec<usize> = case.ints("durations").iter().map(|&d| d as usize).collect();
        let m = expand_frames(&enc.m_p, &dur);
        let l = expand_frames(&enc.logs_p, &dur);
        let z_p = sample_prior(&m, &l, case.scales[0], &mut NoiseSource::new(0));
        assert_eq!(z_p, m, "noise 0 must return m_p exactly");
        let want = case.tensor("z_p");
        assert_eq!(z_p.shape, want.shape, "{}: z_p shape", case.name);
        check(case, "z_p", &z_p.data, &want);
        // Expanding the oracle's own m_p reproduces its z_p bit for bit.
        assert_eq!(
            expand_frames(&case.tensor("m_p"), &dur),
            want,
            "{}: gather vs oracle",
            case.name
        );
    }
}

#[test]
fn front_timing_long_sentence() {
    let Some(s) = setup() else { return };
    let case = s
        .oracle
        .cases
        .iter()
        .max_by_key(|c| c.ints("ids").len())
        .expect("at least one case");
    let ids = case.ints("ids");
    let t0 = Instant::now();
    let enc = text_encoder(&s.weights, &s.dims, &ids).expect("encoder");
    let t1 = Instant::now();
    let noise = NoiseSource::new(1).sdp_noise(ids.len(), 0.8);
    let logw = duration_logw(&s.weights, &s.dims, &enc.x, &noise).expect("sdp");
    let t2 = Instant::now();
    let dur = durations(&logw, 1.0);
    let m = expand_frames(&enc.m_p, &dur);
    let l = expand_frames(&enc.logs_p, &dur);
    let t3 = Instant::now();
    let z_p = sample_prior(&m, &l, 0.667, &mut NoiseSource::new(2));
    let t4 = Instant::now();
    let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
    eprintln!(
        "timing {} ({} ids, {} frames): encoder {:.1} ms, sdp {:.1} ms, durations+expand {:.2} ms, prior {:.2} ms",
        case.name,
        ids.len(),
        z_p.dim(1),
        ms(t0, t1),
        ms(t1, t2),
        ms(t2, t3),
        ms(t3, t4)
    );
    assert!(z_p.data.iter().all(|v| v.is_finite()));
}
