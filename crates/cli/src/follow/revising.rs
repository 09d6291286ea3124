//! Revising captions: JSON messages (stdin, a followed file or a Unix socket), each replacing
//! the unfinished tail of the last; the words that become stable are said, each once
//! ([`hark_sources::revise`]).

use super::lines::lines_of;
use super::{FollowArgs, Running};
use hark_engine::{Mode, UtteranceId};
use hark_sources::caption::{Follower, Start};
use hark_sources::revise;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;

pub(super) fn run(args: &FollowArgs, running: &Running) -> anyhow::Result<Option<UtteranceId>> {
    let (tx, rx) = mpsc::channel::<String>();
    // Kept alive (the followed file's thread stops when it is dropped).
    let mut _follower = None;
    match (&args.socket, &args.file) {
        (Some(socket), _) => listen(socket, tx)?,
        (None, Some(path)) => {
            let start = if args.from_start {
                Start::Beginning
            } else {
                Start::End
            };
            _follower = Some(
                Follower::start(path.clone(), start, move |l| {
                    let _ = tx.send(l.to_string());
                })
                .map_err(anyhow::Error::msg)?,
            );
        }
        (None, None) => {
            std::thread::spawn(move || {
                let r = lines_of(std::io::stdin().lock(), &mut |l: &str| {
                    let _ = tx.send(l.to_string());
                });
                if let Err(e) = r {
                    eprintln!("hark: cannot read stdin: {e}");
                }
            });
        }
    }
    let mut speaker = Speaker {
        running,
        last: None,
    };
    // Only the input's end stops it (Ctrl-C ends the process).
    revise::follow(&rx, &AtomicBool::new(false), &mut speaker);
    Ok(speaker.last)
}

/// Says the stable words on the engine, queued, and reports bad lines by their number.
struct Speaker<'a> {
    running: &'a Running,
    last: Option<UtteranceId>,
}

impl revise::Listener for Speaker<'_> {
    fn say(&mut self, words: String) {
        self.last = Some(self.running.engine.speak(&words, Mode::Queue));
    }

    fn bad_line(&mut self, number: u64, error: &str) {
        // The line itself is not echoed: it may be anything the user is hearing.
        eprintln!("hark: line {number}: {error}");
    }
}

/// Accepts captioners on `path` (a stale socket file left by a crash is replaced), each
/// connection's lines into `tx`, until the process ends.
fn listen(path: &Path, tx: mpsc::Sender<String>) -> anyhow::Result<()> {
    if path.exists() {
        anyhow::ensure!(
            UnixStream::connect(path).is_err(),
            "{} is in use by another program",
            path.display()
        );
        std::fs::remove_file(path)?;
    }
    let listener = UnixListener::bind(path)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", path.display()))?;
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _ = lines_of(conn, &mut |l: &str| {
                    let _ = tx.send(l.to_string());
                });
            });
        }
    });
    Ok(())
}
