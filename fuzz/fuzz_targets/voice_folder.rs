//! The voice folder loader on arbitrary `voice.json` and `voice.safetensors` (the input's
//! first two bytes give the JSON's length): `Ok` or a clear error, never a panic or an
//! allocation the files do not justify.
#![no_main]

use hark_voice::Voice;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((len, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let n = usize::from(u16::from_le_bytes(*len)).min(rest.len());
    let (json, weights) = rest.split_at(n);
    let dir = tempfile::tempdir().expect("tempdir");
    let voice = dir.path().join("v");
    std::fs::create_dir(&voice).expect("mkdir");
    std::fs::write(voice.join("voice.json"), json).expect("write");
    std::fs::write(voice.join("voice.safetensors"), weights).expect("write");
    let _ = hark_voice::list(dir.path());
    match Voice::load_from(dir.path(), Some("v")) {
        Ok(v) => assert!(!v.weights.is_empty(), "a loaded voice has weights"),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
