// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

#[global_allocator]
static ALLOCATOR: hark_alloc::Allocator = hark_alloc::Allocator;

fn main() {
    let _ = hark_alloc::configure();
    hark_app::run();
}
