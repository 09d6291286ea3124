//! `hark follow`: live captions. Speaks each line of stdin, or of a file being appended, as it
//! arrives, in order.

use super::voice_args::VoiceArgs;
use crate::engine::{Engine, Event, Mode, UtteranceId};
use crate::voice::Voice;
use anyhow::Context;
use clap::Args;
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

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

/// How often a followed file is checked for new data.
const FILE_POLL: Duration = Duration::from_millis(50);

pub fn run(args: FollowArgs) -> anyhow::Result<()> {
    let voice = Voice::load(args.voice.voice.as_deref())?;
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
            let stdin = std::io::stdin();
            let mut reader = stdin.lock();
            let mut buf = Vec::new();
            loop {
                buf.clear();
                if reader.read_until(b'\n', &mut buf)? == 0 {
                    break;
                }
                speak(&String::from_utf8_lossy(&buf));
            }
        }
        Some(path) => follow_file(path, args.from_start, &mut speak)?,
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

/// Calls `speak` for each complete line appended to `path`; runs until interrupted.
fn follow_file(
    path: &PathBuf,
    from_start: bool,
    speak: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut pos = if from_start {
        0
    } else {
        file.seek(SeekFrom::End(0))?
    };
    let mut partial = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let len = file.metadata()?.len();
        if len < pos {
            // Truncated or replaced: start again from its beginning.
            pos = 0;
            partial.clear();
        }
        file.seek(SeekFrom::Start(pos))?;
        let n = file.read(&mut chunk)?;
        if n == 0 {
            std::thread::sleep(FILE_POLL);
            continue;
        }
        pos += n as u64;
        partial.extend_from_slice(&chunk[..n]);
        while let Some(nl) = partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = partial.drain(..=nl).collect();
            speak(&String::from_utf8_lossy(&line));
        }
    }
}
