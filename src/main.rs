#[global_allocator]
static ALLOCATOR: hark::alloc::Allocator = hark::alloc::Allocator;

fn main() -> std::process::ExitCode {
    let _ = hark::alloc::configure();
    hark::cli::main()
}
