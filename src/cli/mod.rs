//! The `hark` command line.
use std::process::ExitCode;

pub fn main() -> ExitCode {
    ExitCode::SUCCESS
}
