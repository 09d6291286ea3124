// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

#[global_allocator]
static ALLOCATOR: hark_alloc::Allocator = hark_alloc::Allocator;

fn main() {
    // Started as the phonemiser child (see below): serve it, and exit.
    hark_text::espeak_child::serve_if_child();
    let _ = hark_alloc::configure();
    // espeak-ng runs in a child copy of this binary, so a crash in it cannot end the app.
    if !hark_engine::Overrides::from_env().espeak_in_process
        && let Ok(exe) = std::env::current_exe()
        && let Err(e) = hark_text::espeak_child::isolate(&exe)
    {
        eprintln!("hark-app: espeak-ng runs in process: {e}");
    }
    hark_app::run();
}
