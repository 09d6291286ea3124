//! Lines: each line of stdin, or of a file being appended, said as it arrives, in order.

use super::{FollowArgs, Running};
use anyhow::Context;
use hark_engine::{Mode, UtteranceId};
use hark_sources::caption::{Follower, Start, drain_lines};
use std::io::Read;
use std::sync::mpsc;

pub(super) fn run(args: &FollowArgs, running: &Running) -> anyhow::Result<Option<UtteranceId>> {
    let engine = &running.engine;
    let mode = if args.interrupt {
        Mode::Interrupt
    } else {
        Mode::Queue
    };
    let mut last = None;
    let mut speak = |line: &str| {
        if !line.trim().is_empty() {
            last = Some(engine.speak(line, mode));
        }
    };
    match &args.file {
        None => lines_of(std::io::stdin().lock(), &mut speak)?,
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
    Ok(last)
}

/// Hands each line of `reader` to `on_line` as the caption follower splits them: a line
/// without end is handed on in bounded pieces, so what is held back stays small.
pub(super) fn lines_of(
    mut reader: impl Read,
    on_line: &mut impl FnMut(&str),
) -> std::io::Result<()> {
    let (mut chunk, mut partial) = (vec![0u8; 64 * 1024], Vec::new());
    loop {
        let n = match reader.read(&mut chunk) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => r?,
        };
        if n == 0 {
            partial.push(b'\n');
            drain_lines(&mut partial, on_line);
            return Ok(());
        }
        partial.extend_from_slice(&chunk[..n]);
        drain_lines(&mut partial, on_line);
    }
}
