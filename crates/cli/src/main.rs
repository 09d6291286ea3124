//! The `hark` command line. Subcommands live in their own files; this one parses and dispatches,
//! and turns every error into one clear line and a non-zero exit code.

mod bench;
mod follow;
mod names;
mod progress;
mod speak;
mod speechd_cmd;
mod text_cmd;
mod voice_args;
mod voice_cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "hark",
    version,
    about = "Hark: read text aloud in a neural voice"
)]
struct Cli {
    /// More log output (-v info, -vv debug). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Speak text through the speakers, or write it to a WAV file.
    Speak(speak::SpeakArgs),
    /// Speak lines as they arrive on stdin (or in a growing file): live captions.
    Follow(follow::FollowArgs),
    /// Show what the text front-end makes of a text.
    Text(text_cmd::TextArgs),
    /// Import and list voices.
    #[command(subcommand)]
    Voice(voice_cmd::VoiceCommand),
    /// Measure speed against onnxruntime.
    Bench(bench::BenchArgs),
    /// Make Hark speech-dispatcher's voice (and Orca's): install, uninstall, status.
    #[command(subcommand)]
    Speechd(speechd_cmd::SpeechdCommand),
}

#[global_allocator]
static ALLOCATOR: hark_alloc::Allocator = hark_alloc::Allocator;

/// The `HARK_*` overrides, read once (the libraries never read the environment).
pub fn overrides() -> &'static hark_engine::Overrides {
    static OVERRIDES: std::sync::OnceLock<hark_engine::Overrides> = std::sync::OnceLock::new();
    OVERRIDES.get_or_init(hark_engine::Overrides::from_env)
}

fn main() -> ExitCode {
    // Started as the phonemiser child: serve it, and exit.
    hark_engine::espeak::serve_if_child();
    let _ = hark_alloc::configure();
    overrides();
    let cli = Cli::parse();
    init_logging(cli.verbose);
    // espeak-ng in a child copy of this binary, so that a crash in it cannot end `hark`.
    if !matches!(cli.command, Command::Voice(_))
        && let Err(e) = hark_engine::espeak::isolate_espeak(overrides())
    {
        tracing::warn!("espeak-ng runs in this process: {e}");
    }
    let result = match cli.command {
        Command::Speak(args) => speak::run(args),
        Command::Follow(args) => follow::run(args),
        Command::Text(args) => text_cmd::run(args),
        Command::Voice(cmd) => voice_cmd::run(cmd),
        Command::Bench(args) => bench::run(args),
        Command::Speechd(cmd) => speechd_cmd::run(cmd),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hark: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// Reads TEXT, or all of stdin when TEXT is `-`. Invalid UTF-8 is replaced, with a warning.
fn read_text_arg(text: Option<String>) -> anyhow::Result<String> {
    match text.as_deref() {
        Some("-") | None => {
            use std::io::Read;
            let mut bytes = Vec::new();
            std::io::stdin().read_to_end(&mut bytes)?;
            Ok(match String::from_utf8(bytes) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!(
                        "hark: warning: the input is not valid UTF-8; invalid bytes were skipped"
                    );
                    String::from_utf8_lossy(e.as_bytes()).into_owned()
                }
            })
        }
        Some(t) => Ok(t.to_string()),
    }
}

#[cfg(test)]
mod tests {
    /// clap checks the argument definitions only when a command is parsed: check them all.
    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
