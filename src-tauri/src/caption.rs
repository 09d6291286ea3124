//! Live captions: follow a growing file (like `tail -f`) or a named pipe and hand each complete
//! new line to a callback, which speaks it queued, the same engine path as `hark follow`.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileTypeExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often a followed file is checked for new data (as `hark follow`).
const FILE_POLL: Duration = Duration::from_millis(50);

pub struct Follower {
    stop: Arc<AtomicBool>,
    path: PathBuf,
    fifo: bool,
}

impl Follower {
    pub fn start(
        path: PathBuf,
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
        let (p, s) = (path.clone(), Arc::clone(&stop));
        std::thread::Builder::new()
            .name("hark-caption".into())
            .spawn(move || {
                let r = if fifo {
                    follow_pipe(&p, &s, on_line)
                } else {
                    follow_file(&p, &s, on_line)
                };
                if let Err(e) = r {
                    tracing::warn!("caption source stopped: {e}");
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(Self { stop, path, fifo })
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if self.fifo {
            // The reader may be blocked in open/read: opening the write end (without blocking)
            // and closing it wakes it with an EOF, and it then sees the stop flag.
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&self.path);
        }
    }
}

/// Splits complete lines off `partial` and hands them on.
fn drain_lines(partial: &mut Vec<u8>, on_line: &mut impl FnMut(&str)) {
    while let Some(nl) = partial.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = partial.drain(..=nl).collect();
        let line = String::from_utf8_lossy(&line);
        if !line.trim().is_empty() {
            on_line(line.trim_end());
        }
    }
}

fn follow_file(
    path: &PathBuf,
    stop: &AtomicBool,
    mut on_line: impl FnMut(&str),
) -> std::io::Result<()> {
    let mut file = File::open(path)?;
    // Only what is appended from now on, as `hark follow --file` without --from-start.
    let mut pos = file.seek(SeekFrom::End(0))?;
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
    path: &PathBuf,
    stop: &AtomicBool,
    mut on_line: impl FnMut(&str),
) -> std::io::Result<()> {
    let mut chunk = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Acquire) {
        // Blocks until a writer opens the pipe; EOF when the last writer closes it.
        let mut pipe = File::open(path)?;
        let mut partial = Vec::new();
        loop {
            let n = pipe.read(&mut chunk)?;
            if n == 0 || stop.load(Ordering::Acquire) {
                break;
            }
            partial.extend_from_slice(&chunk[..n]);
            drain_lines(&mut partial, &mut on_line);
        }
        if !partial.is_empty() && !stop.load(Ordering::Acquire) {
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

    #[test]
    fn appended_lines_arrive_in_order_and_old_ones_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("captions.txt");
        std::fs::write(&p, "old line\n").unwrap();
        let (tx, rx) = mpsc::channel();
        let f = Follower::start(p.clone(), move |l| tx.send(l.to_string()).unwrap()).unwrap();
        std::thread::sleep(Duration::from_millis(120));
        let mut file = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        file.write_all(b"first\nsec").unwrap();
        file.flush().unwrap();
        std::thread::sleep(Duration::from_millis(120));
        file.write_all(b"ond\n").unwrap();
        let got: Vec<String> = (0..2)
            .map(|_| rx.recv_timeout(Duration::from_secs(2)).unwrap())
            .collect();
        assert_eq!(got, ["first", "second"]);
        drop(f);
    }

    #[test]
    fn a_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        assert!(Follower::start(d.path().to_path_buf(), |_| {}).is_err());
    }
}
