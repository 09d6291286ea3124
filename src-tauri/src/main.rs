// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

#[global_allocator]
static ALLOCATOR: hark_alloc::Allocator = hark_alloc::Allocator;

fn main() {
    // Started as the phonemiser child (see below): serve it, and exit.
    hark_engine::espeak::serve_if_child();
    let _ = hark_alloc::configure();
    // espeak-ng runs in a child copy of this binary, so a crash in it cannot end the app.
    if let Err(e) = hark_engine::espeak::isolate_espeak(&hark_engine::Overrides::from_env()) {
        eprintln!("hark-app: espeak-ng runs in process: {e}");
    }
    hark_app::run();
}
