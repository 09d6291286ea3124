//! Keys while `hark speak` plays in a terminal: move through the sentences, pause, stop. Read
//! from the controlling terminal (`/dev/tty`), so the text can still come from stdin; with no
//! terminal, or stderr not on one (a script, a test, CI), there are no keys and nothing
//! changes.
//!
//! The terminal is put in non-canonical, no-echo mode with two termios calls (libc, already a
//! dependency) and restored when the guard drops; the signal keys are off too, so Ctrl-C
//! arrives as a byte and stops speech like `q`, and the terminal is restored before exit.
//! Only three escape sequences are decoded (the arrows), which a terminal crate would be a
//! large dependency for.

use hark_engine::Engine;
use std::fs::File;
use std::io::{IsTerminal, Read};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

/// What a key asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Key {
    PreviousSentence,
    RepeatSentence,
    NextSentence,
    Skip(f32),
    PauseResume,
    Stop,
}

/// The help line printed when keys are on.
pub const HELP: &str = "keys: ←/p previous sentence · r repeat · →/n next · b/f back/forward \
                        5 s · space pause/resume · q stop";

/// The keys in `bytes` (as the terminal sends them), in order; unknown bytes are ignored.
pub fn decode(bytes: &[u8]) -> Vec<Key> {
    let mut keys = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let key = match bytes[i] {
            // ESC [ C / ESC [ D: the right and left arrows (ESC O C/D in application mode).
            0x1b if i + 2 < bytes.len() && matches!(bytes[i + 1], b'[' | b'O') => {
                let k = match bytes[i + 2] {
                    b'C' => Some(Key::NextSentence),
                    b'D' => Some(Key::PreviousSentence),
                    _ => None,
                };
                i += 2;
                k
            }
            b'p' | b'P' => Some(Key::PreviousSentence),
            b'n' | b'N' => Some(Key::NextSentence),
            b'r' | b'R' => Some(Key::RepeatSentence),
            b'b' | b'B' => Some(Key::Skip(-5.0)),
            b'f' | b'F' => Some(Key::Skip(5.0)),
            b' ' => Some(Key::PauseResume),
            // q, Esc alone, Ctrl-C, Ctrl-D.
            b'q' | b'Q' | 0x1b | 0x03 | 0x04 => Some(Key::Stop),
            _ => None,
        };
        keys.extend(key);
        i += 1;
    }
    keys
}

/// The terminal in key mode; restored on drop.
pub struct Keys {
    tty: File,
    saved: libc::termios,
    /// Set when the user stopped speech with a key (an exit status of 0, not an error).
    pub stopped_by_user: Arc<AtomicBool>,
}

impl Keys {
    /// Key mode on the controlling terminal, or `None` where there is none (or it cannot be
    /// set up: then speech plays without keys).
    pub fn open() -> Option<Self> {
        // Only where someone sees the key line: stderr on the terminal (not a test or a
        // script that captures it, which would otherwise lose its terminal's keys to us).
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let tty = File::options().read(true).open("/dev/tty").ok()?;
        let fd = tty.as_raw_fd();
        // SAFETY: `fd` is an open file; termios is plain data filled in by tcgetattr.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::isatty(fd) } != 1 || unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
            return None;
        }
        let mut raw = saved;
        raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG);
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        // SAFETY: as above; `raw` is a valid termios.
        if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &raw) } != 0 {
            return None;
        }
        Some(Self {
            tty,
            saved,
            stopped_by_user: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Reads keys on a thread of its own and acts on `engine` while it lives; the thread
    /// ends with the process (a blocking read on the terminal).
    pub fn drive(&self, engine: Weak<Engine>) {
        let Ok(mut tty) = self.tty.try_clone() else {
            return;
        };
        let stopped = Arc::clone(&self.stopped_by_user);
        let spawned = std::thread::Builder::new()
            .name("hark-keys".into())
            .spawn(move || {
                let (mut buf, mut paused) = ([0u8; 16], false);
                while let Ok(n @ 1..) = tty.read(&mut buf) {
                    let Some(engine) = engine.upgrade() else {
                        return;
                    };
                    for key in decode(&buf[..n]) {
                        match key {
                            Key::PreviousSentence => engine.previous_sentence(),
                            Key::RepeatSentence => engine.repeat_sentence(),
                            Key::NextSentence => engine.next_sentence(),
                            Key::Skip(s) => engine.skip(s),
                            Key::PauseResume if paused => engine.resume(),
                            Key::PauseResume => engine.pause(),
                            Key::Stop => {
                                stopped.store(true, Ordering::Release);
                                engine.stop();
                            }
                        }
                        if key == Key::PauseResume {
                            paused = !paused;
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            eprintln!("hark: warning: no keys ({e})");
        }
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        // SAFETY: restores the settings read in `open` on the same open terminal.
        unsafe { libc::tcsetattr(self.tty.as_raw_fd(), libc::TCSANOW, &self.saved) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_arrows_decode_and_the_rest_is_ignored() {
        assert_eq!(
            decode(b"\x1b[D\x1b[Cr bfq"),
            [
                Key::PreviousSentence,
                Key::NextSentence,
                Key::RepeatSentence,
                Key::PauseResume,
                Key::Skip(-5.0),
                Key::Skip(5.0),
                Key::Stop
            ]
        );
        assert_eq!(decode(b"\x1bOC"), [Key::NextSentence]);
        assert_eq!(decode(b"xyz\x1b[A"), []);
        assert_eq!(decode(b"\x03"), [Key::Stop]);
        assert_eq!(decode(b"\x1b"), [Key::Stop]);
        assert_eq!(decode(b""), []);
    }
}
