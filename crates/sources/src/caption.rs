//! Live captions: follow a growing file (like `tail -f`) or a named pipe and hand each complete
//! new line to a callback, in order. `hark follow --file` and the desktop app both use this, so
//! the two speak captions the same way.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a followed file is checked for new data (and a pipe for a stop request).
const FILE_POLL: Duration = Duration::from_millis(50);
/// How long a pipe's last line may stay without its newline before it is spoken anyway.
const UNFINISHED_LINE_WAIT: Duration = Duration::from_millis(300);

/// Where following starts in a regular file (a pipe only ever has new data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Only lines appended from now on.
    End,
    /// The lines already in the file first.
    Beginning,
}

/// A caption source running on its own thread; dropping it stops the thread.
pub struct Follower {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

impl Follower {
    /// Starts following `path`; `on_line` gets each non-empty line without its line ending.
    pub fn start(
        path: PathBuf,
        start: Start,
        on_line: impl FnMut(&str) + Send + 'static,
    ) -> Result<Self, String> {
        let meta = std::fs::metadata(&path)
            .map_err(|e| format!("Cannot follow {}: {e}", path.display()))?;
        let fifo = meta.file_type().is_fifo();
        if !fifo && !meta.is_file() {
            return Err(format!(
                "Cannot follow {}: it is not a file or a pipe.",
                path.display()
            ));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (path, Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("hark-caption".into())
            .spawn(move || {
                let r = if fifo {
                    follow_pipe(&p, &s, on_line)
                } else {
                    follow_file(&p, start, &s, on_line)
                };
                if let Err(e) = &r {
                    tracing::warn!("caption source stopped: {e}");
                }
                r
            })
            .map_err(|e| e.to_string())?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }

    /// Blocks until the source ends by itself (a read error); it otherwise runs until dropped.
    pub fn wait(mut self) -> std::io::Result<()> {
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(std::io::Error::other("the caption thread panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        // The thread checks the flag at least every FILE_POLL and then ends by itself.
        self.stop.store(true, Ordering::Release);
    }
}

/// The longest line handed on whole. A stream that sends more without a newline (a broken
/// writer, a binary file) has it handed on in pieces of this size, so what is held back stays
/// bounded.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Splits complete lines off `partial` and hands them on (lossily decoded, without their line
/// ending, blank ones left out); an unfinished line longer than [`MAX_LINE_BYTES`] is handed
/// on in pieces, cut before a UTF-8 character where possible.
pub fn drain_lines(partial: &mut Vec<u8>, on_line: &mut impl FnMut(&str)) {
    let mut emit = |bytes: &[u8]| {
        let line = String::from_utf8_lossy(bytes);
        if !line.trim().is_empty() {
            on_line(line.trim_end());
        }
    };
    let mut start = 0;
    while let Some(nl) = partial[start..].iter().position(|&b| b == b'\n') {
        emit(&partial[start..=start + nl]);
        start += nl + 1;
    }
    while partial.len() - start > MAX_LINE_BYTES {
        let mut cut = start + MAX_LINE_BYTES;
        // Back off over UTF-8 continuation bytes (at most three).
        for _ in 0..3 {
            if partial[cut] & 0xC0 == 0x80 {
                cut -= 1;
            }
        }
        emit(&partial[start..cut]);
        start = cut;
    }
    partial.drain(..start);
}

fn follow_file(
    path: &Path,
    start: Start,
    stop: &AtomicBool,
    mut on_line: impl FnMut(&str),
) -> std::io::Result<()> {
    let mut file = File::open(path)?;
    let mut pos = match start {
        Start::End => file.seek(SeekFrom::End(0))?,
        Start::Beginning => 0,
    };
    let mut partial = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Acquire) {
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
        drain_lines(&mut partial, &mut on_line);
    }
    Ok(())
}

fn follow_pipe(
    path: &Path,
    stop: &AtomicBool,
    mut on_line: impl FnMut(&str),
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // Opened read-write (Linux allows it for a FIFO): the open never blocks and the pipe never
    // reaches EOF, so nothing a new writer sends while the last one closes can be lost, which a
    // reopen after EOF would allow. A line left without its newline is spoken after a pause.
    let mut pipe = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    let mut chunk = vec![0u8; 64 * 1024];
    let mut partial = Vec::new();
    let mut last_data = Instant::now();
    while !stop.load(Ordering::Acquire) {
        let mut pfd = libc::pollfd {
            fd: pipe.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; the timeout bounds how long a stop can wait.
        let ready = unsafe { libc::poll(&mut pfd, 1, FILE_POLL.as_millis() as libc::c_int) };
        if ready < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if ready > 0 {
            let n = pipe.read(&mut chunk)?;
            partial.extend_from_slice(&chunk[..n]);
            drain_lines(&mut partial, &mut on_line);
            last_data = Instant::now();
        } else if !partial.is_empty() && last_data.elapsed() >= UNFINISHED_LINE_WAIT {
            partial.push(b'\n');
            drain_lines(&mut partial, &mut on_line);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::mpsc;

    fn recv_lines(rx: &mpsc::Receiver<String>, n: usize) -> Vec<String> {
        (0..n)
            .map(|_| rx.recv_timeout(Duration::from_secs(2)).unwrap())
            .collect()
    }

    #[test]
    fn appended_lines_arrive_in_order_and_old_ones_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("captions.txt");
        std::fs::write(&p, "old line\n").unwrap();
        let (tx, rx) = mpsc::channel();
        let f = Follower::start(p.clone(), Start::End, move |l| {
            tx.send(l.to_string()).unwrap()
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(120));
        let mut file = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        file.write_all(b"first\nsec").unwrap();
        file.flush().unwrap();
        std::thread::sleep(Duration::from_millis(120));
        file.write_all(b"ond\n").unwrap();
        assert_eq!(recv_lines(&rx, 2), ["first", "second"]);
        drop(f);
    }

    #[test]
    fn from_the_beginning_reads_existing_lines_first() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("captions.txt");
        std::fs::write(&p, "one\n\ntwo\n").unwrap();
        let (tx, rx) = mpsc::channel();
        let _f = Follower::start(p.clone(), Start::Beginning, move |l| {
            tx.send(l.to_string()).unwrap()
        })
        .unwrap();
        assert_eq!(recv_lines(&rx, 2), ["one", "two"]);
    }

    #[test]
    fn a_named_pipe_is_followed_across_writers() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("captions.fifo");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (tx, rx) = mpsc::channel();
        let f = Follower::start(p.clone(), Start::End, move |l| {
            tx.send(l.to_string()).unwrap()
        })
        .unwrap();
        let write = |text: &str| {
            let mut w = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            w.write_all(text.as_bytes()).unwrap();
        };
        // A line without its newline is spoken after a short pause; a later writer is read too.
        write("alpha\nbeta");
        assert_eq!(recv_lines(&rx, 2), ["alpha", "beta"]);
        write("gamma\n");
        assert_eq!(recv_lines(&rx, 1), ["gamma"]);
        drop(f);
    }

    #[test]
    fn lines_are_split_in_one_pass_and_a_line_without_end_is_bounded() {
        let mut got = Vec::new();
        let mut partial = b"a\r\n\n  \nb\nunfinished".to_vec();
        drain_lines(&mut partial, &mut |l| got.push(l.to_string()));
        assert_eq!(got, ["a", "b"]);
        assert_eq!(partial, b"unfinished");
        // No newline ever: pieces of at most MAX_LINE_BYTES, cut between characters.
        let mut partial = "é".repeat(MAX_LINE_BYTES).into_bytes();
        got.clear();
        drain_lines(&mut partial, &mut |l| got.push(l.to_string()));
        assert!(partial.len() <= MAX_LINE_BYTES);
        assert!(
            got.iter()
                .all(|l| l.len() <= MAX_LINE_BYTES && !l.contains('\u{fffd}'))
        );
        assert_eq!(got.concat().len() + partial.len(), 2 * MAX_LINE_BYTES);
    }

    #[test]
    fn a_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        assert!(Follower::start(d.path().to_path_buf(), Start::End, |_| {}).is_err());
    }
}
