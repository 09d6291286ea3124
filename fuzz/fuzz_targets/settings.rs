//! The app's settings file: `load` on arbitrary bytes never panics, gives values within their
//! limits, and what it gives survives a save and a load unchanged. The parse is the app's own
//! file, compiled here without Tauri.
#![no_main]

#[allow(dead_code)]
#[path = "../../src-tauri/src/settings.rs"]
mod settings;
// settings.rs saves through the app's write-and-rename.
#[allow(dead_code)]
#[path = "../../src-tauri/src/atomic_write.rs"]
mod atomic_write;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(settings::FILE_NAME);
    std::fs::write(&path, data).expect("write");
    let (s, _note) = settings::load(&path);
    assert!((settings::RATE_MIN..=settings::RATE_MAX).contains(&s.rate));
    assert!((0.0..=2.0).contains(&s.volume));
    assert!((1..=settings::STEPS_MAX).contains(&s.step_frames));
    assert!((80..=250).contains(&s.text_scale));
    assert!((-settings::PITCH_MAX..=settings::PITCH_MAX).contains(&s.pitch));
    for v in [s.noise_scale, s.noise_w].into_iter().flatten() {
        assert!((0.0..=2.0).contains(&v));
    }
    settings::save(&path, &s).expect("save");
    assert_eq!(settings::load(&path), (s, None));
});
