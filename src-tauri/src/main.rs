// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

#[global_allocator]
static ALLOCATOR: hark::alloc::Allocator = hark::alloc::Allocator;

fn main() {
    let _ = hark::alloc::configure();
    hark_app::run();
}
