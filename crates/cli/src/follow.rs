//! `hark follow`: live captions. Speaks each line of stdin, or of a file being appended, as it
//! arrives, in order.

use super::voice_args::VoiceArgs;
use anyhow::Context;
use clap::Args;
use hark_engine::{Engine, Event, Mode, UtteranceId};
use hark_sources::caption::{Follower, Start, drain_lines};
use hark_voice::Voice;
use std::io::Read;
use std::path::PathBuf;
use std::sync::mpsc;

#[derive(Args)]
pub struct FollowArgs {
    #[command(flatten)]
    voice: VoiceArgs,
    /// Each new line interrupts the one being spoken (default: queue them).
    #[arg(long)]
    interrupt: bool,
    /// Follow this file as it grows (like `tail -f`) instead of reading stdin.
    #[arg(long)]
    file: Option<PathBuf>,
    /// With --file: speak the lines already in the file first.
    #[arg(long, requires = "file")]
    from_start: bool,
    /// Frames per engine step (default: adaptive).
    #[arg(long)]
    steps: Option<usize>,
    /// Print one JSON line per engine event on stdout (ids and ranges, never text).
    #[arg(long)]
    events: bool,
}

pub fn run(args: FollowArgs) -> anyhow::Result<()> {
    let voice = Voice::load_from(&crate::overrides().voices_dir, args.voice.voice.as_deref())?;
    let cfg = args.voice.engine_config(voice, args.steps)?;
    let (engine, mut events) = Engine::start(cfg).context("cannot play audio")?;
    let mode = if args.interrupt {
        Mode::Interrupt
    } else {
        Mode::Queue
    };
    let print = args.events;
    // Events are handled on their own thread so reading input never waits on them.
    let (done_tx, done_rx) = mpsc::channel::<UtteranceId>();
    let printer = std::thread::spawn(move || {
        while let Some(ev) = events.blocking_recv() {
            if print && let Ok(line) = serde_json::to_string(&ev) {
                println!("{line}");
            }
            match ev {
                Event::Error { message, .. } => eprintln!("hark: warning: {message}"),
                Event::Finished { id, .. } => {
                    let _ = done_tx.send(id);
                }
                _ => {}
            }
        }
    });
    let mut last = None;
    let mut speak = |line: &str| {
        if !line.trim().is_empty() {
            last = Some(engine.speak(line, mode));
        }
    };
    match &args.file {
        None => {
            // Lines as the caption follower splits them: a line without end is handed on in
            // bounded pieces, so what is held back stays small.
            let mut reader = std::io::stdin().lock();
            let (mut chunk, mut partial) = (vec![0u8; 64 * 1024], Vec::new());
            loop {
                let n = match reader.read(&mut chunk) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    r => r?,
                };
                if n == 0 {
                    partial.push(b'\n');
                    drain_lines(&mut partial, &mut speak);
                    break;
                }
                partial.extend_from_slice(&chunk[..n]);
                drain_lines(&mut partial, &mut speak);
            }
        }
        Some(path) => {
            // Runs until interrupted (Ctrl+C) or the file cannot be read any more.
            let (line_tx, line_rx) = mpsc::channel::<String>();
            let start = if args.from_start {
                Start::Beginning
            } else {
                Start::End
            };
            let follower = Follower::start(path.clone(), start, move |line| {
                let _ = line_tx.send(line.to_string());
            })
            .map_err(anyhow::Error::msg)?;
            // The channel closes when the follower's thread ends.
            for line in line_rx {
                speak(&line);
            }
            follower.wait().context("caption source stopped")?;
        }
    }
    // End of input: let the last line finish (ids finish in order).
    if let Some(last) = last {
        while let Ok(id) = done_rx.recv() {
            if id >= last {
                break;
            }
        }
        std::thread::sleep(super::speak::device_tail(&engine));
    }
    drop(engine);
    let _ = printer.join();
    Ok(())
}
