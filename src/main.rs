fn main() -> std::process::ExitCode {
    hark::cli::main()
}
