//! A multi-speaker voice on the CPU backend against onnxruntime: the voice that
//! `scripts/make_multispeaker_voice.py` makes (Piper's multi-speaker graph layout, random
//! speaker weights), and the oracle `scripts/oracle.py --sid …` dumped for it, both under
//! `$HARK_TEST_DATA/multispeaker` (`scripts/test.sh` writes them). Each case is one speaker
//! with zero noise: the durations must be the oracle's exactly and the audio within 1e-4.

use hark_model::backend::{Backend, CpuBackend};
use hark_model::cpu::pipeline::synthesize;
use hark_voice::tensor::rel_l2;
use hark_voice::{Scales, Voice, WeightDtype, import_piper};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use testkit::{Oracle, OracleCase};

const TOL: f64 = 1e-4;

struct Setup {
    oracle: Oracle,
    /// The imported voice (speaker 0) and the folder holding it.
    voices: tempfile::TempDir,
}

fn setup() -> Option<&'static Setup> {
    static SETUP: OnceLock<Option<Setup>> = OnceLock::new();
    SETUP
        .get_or_init(|| {
            let oracle =
                Oracle::load_dir_or_skip(testkit::test_data_dir().join("multispeaker/oracle"))?;
            let onnx = PathBuf::from(oracle.manifest["onnx"].as_str().expect("manifest: onnx"));
            if !onnx.is_file() {
                eprintln!(
                    "skipped: the oracle's voice {} is not on this machine",
                    onnx.display()
                );
                return None;
            }
            let voices = tempfile::tempdir().expect("tempdir");
            import_piper(&onnx, None, voices.path(), Some("v"), WeightDtype::F32)
                .expect("importing the multi-speaker voice");
            Some(Setup { oracle, voices })
        })
        .as_ref()
}

fn voice(s: &Setup, speaker: usize) -> Arc<Voice> {
    let mut v = Voice::load_from(s.voices.path(), Some("v")).expect("load the voice");
    v.select_speaker(&speaker.to_string()).expect("a speaker");
    Arc::new(v)
}

fn scales(c: &OracleCase) -> Scales {
    Scales {
        noise_scale: c.scales[0],
        length_scale: c.scales[1],
        noise_w: c.scales[2],
    }
}

/// The CPU backend's durations and audio for case `c`, as speaker `speaker`.
fn speak(v: Arc<Voice>, c: &OracleCase) -> (Vec<usize>, Vec<f32>) {
    let mut b = CpuBackend::new(v);
    let info = b.begin(&c.ints("ids"), &scales(c), 0).expect("begin");
    let audio = b.decode(0, info.frames).expect("decode");
    (info.durations, audio)
}

#[test]
fn each_speaker_matches_onnxruntime() {
    let Some(s) = setup() else { return };
    let mut speakers = std::collections::BTreeSet::new();
    for c in &s.oracle.cases {
        let sid = c.sid.expect("a multi-speaker oracle case has its sid");
        speakers.insert(sid);
        assert!(
            c.scales[0] == 0.0 && c.scales[2] == 0.0,
            "{}: noise",
            c.name
        );
        let (durations, audio) = speak(voice(s, sid), c);
        let want: Vec<usize> = c.ints("durations").iter().map(|&d| d as usize).collect();
        assert_eq!(durations, want, "{}: durations", c.name);
        let want = c.tensor("audio");
        assert_eq!(audio.len(), want.data.len(), "{}: samples", c.name);
        let err = rel_l2(&audio, &want.data);
        eprintln!("{:<22} speaker {sid}: audio rel L2 {err:.2e}", c.name);
        assert!(err <= TOL, "{}: rel L2 {err:e} > {TOL:e}", c.name);
    }
    assert!(speakers.len() >= 2, "the oracle has speakers {speakers:?}");
}

#[test]
fn speakers_sound_different_and_the_speaker_is_what_matches() {
    let Some(s) = setup() else { return };
    let (a, b) = {
        let mut by_sid = s
            .oracle
            .cases
            .iter()
            .filter(|c| c.name.starts_with("medium_sid"));
        (
            by_sid.next().expect("a case"),
            by_sid.next().expect("another"),
        )
    };
    let (sa, sb) = (a.sid.expect("sid"), b.sid.expect("sid"));
    assert_ne!(sa, sb);
    let (da, xa) = speak(voice(s, sa), a);
    let (db, xb) = speak(voice(s, sb), b);
    // Other durations, or the same length and other samples.
    let n = xa.len().min(xb.len());
    assert!(
        da != db || rel_l2(&xa[..n], &xb[..n]) > 0.1,
        "speakers {sa} and {sb} sound the same"
    );
    // The test can fail: speaker sa's audio is not speaker sb's reference, and the voice
    // without its conditioning (the raw weights) matches neither.
    let want_b = b.tensor("audio").data;
    assert!(xa.len() != want_b.len() || rel_l2(&xa, &want_b) > 1e-2);
    let v = voice(s, sa);
    let raw =
        synthesize(&v.weights, &v.config.dims, &a.ints("ids"), &scales(a), 0).expect("synthesis");
    let want_a = a.tensor("audio").data;
    assert!(
        raw.audio.len() != want_a.len() || rel_l2(&raw.audio, &want_a) > 1e-2,
        "the unconditioned voice matches speaker {sa}'s reference"
    );
}

#[test]
fn a_speaker_the_voice_lacks_is_an_error_not_a_panic() {
    let Some(s) = setup() else { return };
    let mut v = Voice::load_from(s.voices.path(), Some("v")).expect("load");
    v.speaker = 99;
    let c = &s.oracle.cases[0];
    let mut b = CpuBackend::new(Arc::new(v));
    let e = b
        .begin(&c.ints("ids"), &scales(c), 0)
        .expect_err("speaker 99");
    assert!(e.to_string().contains("speaker 99"), "{e}");
}
