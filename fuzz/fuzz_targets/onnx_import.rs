//! The ONNX importer on arbitrary bytes (with a valid Piper config beside them): `Ok` or a
//! clear error, never a panic or an allocation larger than the input justifies; and a voice
//! it imports loads.
#![no_main]

use hark_voice::{Voice, WeightDtype, import_piper_report};
use libfuzzer_sys::fuzz_target;

const PIPER_JSON: &str = r#"{"audio": {"sample_rate": 22050}, "espeak": {"voice": "en-us"},
 "inference": {"noise_scale": 0.667, "length_scale": 1.0, "noise_w": 0.8},
 "phoneme_id_map": {"_": [0], "^": [1], "$": [2], "a": [3]},
 "num_symbols": 4, "num_speakers": 1, "piper_version": "1.0.0"}"#;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("tempdir");
    let onnx = dir.path().join("v.onnx");
    std::fs::write(&onnx, data).expect("write");
    std::fs::write(dir.path().join("v.onnx.json"), PIPER_JSON).expect("write");
    let voices = dir.path().join("voices");
    match import_piper_report(&onnx, None, &voices, Some("v"), WeightDtype::F16) {
        Ok(_) => {
            Voice::load_from(&voices, Some("v")).expect("an imported voice loads");
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
