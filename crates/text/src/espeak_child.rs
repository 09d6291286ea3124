//! espeak-ng in a child process, so that a crash inside it ends the child, not Hark.
//!
//! Debian's libespeak-ng 1.51, which Hark linked before 1.52, had memory errors that
//! [`super::espeak::make_safe`] and the sanitiser keep away from the inputs known to trigger
//! them, but not all can be known: the fuzzer also found crashes that depend on what espeak
//! read before (docs/RELIABILITY.md). 1.52 is kept in the child as well (defence in depth). A
//! binary that calls [`isolate`] at start-up (the `hark` command and the app do) runs espeak
//! in a copy of itself started with [`CHILD_ARG`], which answers requests on a pipe. When the
//! child dies or hangs on a text, that text is reported as an error (the engine skips the
//! piece and says so), and the next request starts a new child.
//!
//! The protocol, little-endian, one request at a time:
//! - request: `1`, voice (`u32` length, bytes), text (`u32` length, bytes); `2` and the same
//!   makes the child abort instead (for tests of the recovery).
//! - reply: `0`, clause count (`u32`), per clause `start`, `end` (`u32::MAX` for none), IPA
//!   (`u32` length, bytes); or `1`, message (`u32` length, bytes).

use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use super::TextError;
use super::espeak::{Espeak, RawClause};

/// The first argument that makes a binary serve as the phonemiser child ([`serve`]).
pub const CHILD_ARG: &str = "--hark-espeak-child";

/// A request's text may be this long at most (the segmenter's pieces are far shorter).
const MAX_REQUEST_BYTES: usize = 16 << 20;

/// A child that takes longer than this over one text is taken to hang, and is ended.
const REPLY_TIMEOUT: Duration = Duration::from_secs(20);

static CHILD_EXE: OnceLock<PathBuf> = OnceLock::new();

/// From now on, espeak-ng runs in a child process started as `exe CHILD_ARG`; `exe` must call
/// [`serve_if_child`] first thing in `main` (the `hark` binary and the app do). The child is
/// started at once, so its start-up is off the path of the first utterance. When it cannot
/// start, an error is returned and espeak-ng stays in process.
pub fn isolate(exe: &Path) -> Result<(), TextError> {
    let mut slot = slot();
    if slot.is_none() {
        *slot = Some(Phonemiser::start(exe)?);
    }
    let _ = CHILD_EXE.set(exe.to_path_buf());
    Ok(())
}

/// First thing in a binary's `main`: when this process was started as the phonemiser child
/// (first argument [`CHILD_ARG`]), serve requests until the parent goes, then exit.
pub fn serve_if_child() {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == CHILD_ARG) {
        // The parent's espeak-ng data folder, when it set one (`DATA_ARG` PATH).
        if args.next().is_some_and(|a| a == DATA_ARG)
            && let Some(dir) = args.next()
        {
            super::espeak::set_data_dir(PathBuf::from(dir));
        }
        serve();
    }
}

/// After [`CHILD_ARG`]: the espeak-ng data folder the parent uses ([`super::espeak::data_dir`]).
const DATA_ARG: &str = "--espeak-data";

/// Whether espeak-ng runs in a child process ([`isolate`] was called).
pub fn isolated() -> bool {
    CHILD_EXE.get().is_some()
}

fn slot() -> std::sync::MutexGuard<'static, Option<Phonemiser>> {
    static SLOT: Mutex<Option<Phonemiser>> = Mutex::new(None);
    SLOT.lock().unwrap_or_else(|p| p.into_inner())
}

/// The clauses of `text` from the child (started or restarted as needed).
pub(crate) fn clauses(voice: &str, text: &str) -> Result<Vec<RawClause>, TextError> {
    let exe = CHILD_EXE
        .get()
        .ok_or_else(|| TextError::Espeak("no phonemiser child configured".into()))?;
    let mut slot = slot();
    // Test hook: this request makes the child abort instead of answering.
    let crash = CRASH_ON
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .is_some_and(|marker| text.contains(marker.as_str()));
    let kind = if crash { 2 } else { 1 };
    if ready(&mut slot, exe)?.send(kind, voice, text).is_err() {
        // The child died while idle: replace it and send the request once more.
        if let Some(c) = slot.take() {
            c.end();
        }
        ready(&mut slot, exe)?
            .send(kind, voice, text)
            .map_err(|e| TextError::Espeak(format!("phonemiser child: {e}")))?;
    }
    match ready(&mut slot, exe)?.reply() {
        Ok(r) => r,
        Err(why) => {
            let status = slot.take().map(Phonemiser::end).unwrap_or_default();
            tracing::warn!("espeak-ng {why} on a text ({status}); it is skipped");
            Err(TextError::EspeakCrashed(format!(
                "espeak-ng {why} on a text ({status}); that text is skipped"
            )))
        }
    }
}

/// The running child, started if there is none.
fn ready<'a>(
    slot: &'a mut Option<Phonemiser>,
    exe: &Path,
) -> Result<&'a mut Phonemiser, TextError> {
    if slot.is_none() {
        *slot = Some(Phonemiser::start(exe)?);
    }
    slot.as_mut()
        .ok_or_else(|| TextError::EspeakInit("no phonemiser child".into()))
}

static CRASH_ON: Mutex<Option<String>> = Mutex::new(None);

/// Test hook: the child aborts, as a crash inside espeak-ng would, on any text containing
/// `marker`, instead of answering.
#[doc(hidden)]
pub fn crash_on_text_for_test(marker: &str) {
    *CRASH_ON.lock().unwrap_or_else(|p| p.into_inner()) = Some(marker.to_string());
}

/// The running child's process id, if one runs.
pub fn child_id() -> Option<u32> {
    slot().as_ref().map(|c| c.child.id())
}

struct Phonemiser {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    replies: Receiver<io::Result<Result<Vec<RawClause>, TextError>>>,
}

impl Phonemiser {
    fn start(exe: &Path) -> Result<Self, TextError> {
        let mut command = Command::new(exe);
        command.arg(CHILD_ARG);
        // The child reads the same data, wherever the parent found it.
        if let Ok(dir) = super::espeak::data_dir() {
            command.arg(DATA_ARG).arg(dir);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| TextError::EspeakInit(format!("cannot start {}: {e}", exe.display())))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(TextError::EspeakInit(
                "the phonemiser child has no pipes".into(),
            ));
        };
        // Replies are read on their own thread, so a child that hangs can be timed out.
        let (tx, replies) = mpsc::channel();
        std::thread::Builder::new()
            .name("hark-espeak-reply".into())
            .spawn(move || {
                let mut r = BufReader::new(stdout);
                loop {
                    let reply = read_reply(&mut r);
                    let failed = reply.is_err();
                    if tx.send(reply).is_err() || failed {
                        return;
                    }
                }
            })
            .map_err(|e| TextError::EspeakInit(format!("cannot start a thread: {e}")))?;
        Ok(Self {
            child,
            stdin: BufWriter::new(stdin),
            replies,
        })
    }

    fn send(&mut self, kind: u8, voice: &str, text: &str) -> io::Result<()> {
        self.stdin.write_all(&[kind])?;
        write_bytes(&mut self.stdin, voice.as_bytes())?;
        write_bytes(&mut self.stdin, text.as_bytes())?;
        self.stdin.flush()
    }

    /// The reply, or why there is none ("stopped", "hung").
    fn reply(&mut self) -> Result<Result<Vec<RawClause>, TextError>, &'static str> {
        match self.replies.recv_timeout(REPLY_TIMEOUT) {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => Err("stopped"),
            Err(RecvTimeoutError::Timeout) => Err("hung"),
        }
    }

    /// Ends the child (if it still runs) and says how it ended.
    fn end(mut self) -> String {
        let _ = self.child.kill();
        match self.child.wait() {
            Ok(s) => s.to_string(),
            Err(e) => e.to_string(),
        }
    }
}

fn write_bytes(w: &mut impl Write, b: &[u8]) -> io::Result<()> {
    let n = u32::try_from(b.len()).map_err(|_| io::ErrorKind::InvalidInput)?;
    w.write_all(&n.to_le_bytes())?;
    w.write_all(b)
}

fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_bytes(r: &mut impl Read) -> io::Result<Vec<u8>> {
    let n = read_u32(r)? as usize;
    if n > MAX_REQUEST_BYTES {
        return Err(io::ErrorKind::InvalidData.into());
    }
    let mut b = vec![0u8; n];
    r.read_exact(&mut b)?;
    Ok(b)
}

fn read_string(r: &mut impl Read) -> io::Result<String> {
    String::from_utf8(read_bytes(r)?).map_err(|_| io::ErrorKind::InvalidData.into())
}

fn read_reply(r: &mut impl Read) -> io::Result<Result<Vec<RawClause>, TextError>> {
    let mut status = [0u8; 1];
    r.read_exact(&mut status)?;
    if status[0] != 0 {
        return Ok(Err(TextError::Espeak(read_string(r)?)));
    }
    let n = read_u32(r)? as usize;
    let mut out = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        let start = read_u32(r)? as usize;
        let end = read_u32(r)?;
        let ipa = read_string(r)?;
        out.push(RawClause {
            start,
            end: (end != u32::MAX).then_some(end as usize),
            ipa,
        });
    }
    Ok(Ok(out))
}

/// The child's side: answers requests from stdin on stdout until stdin closes, then exits
/// ([`serve_if_child`] calls it).
pub fn serve() -> ! {
    let mut input = BufReader::new(io::stdin().lock());
    let mut output = BufWriter::new(io::stdout().lock());
    let code = match serve_on(&mut input, &mut output) {
        Ok(()) => 0,
        Err(_) => 1,
    };
    std::process::exit(code)
}

fn serve_on(input: &mut impl Read, output: &mut impl Write) -> io::Result<()> {
    loop {
        let mut kind = [0u8; 1];
        match input.read_exact(&mut kind) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            r => r?,
        }
        let voice = read_string(input)?;
        let text = read_string(input)?;
        match kind[0] {
            1 => {
                let result = Espeak::lock().and_then(|mut e| {
                    e.set_voice(&voice)?;
                    e.clauses(&text)
                });
                match result {
                    Ok(clauses) => {
                        output.write_all(&[0])?;
                        output.write_all(&(clauses.len() as u32).to_le_bytes())?;
                        for c in &clauses {
                            output.write_all(&(c.start as u32).to_le_bytes())?;
                            let end = c.end.map_or(u32::MAX, |e| e as u32);
                            output.write_all(&end.to_le_bytes())?;
                            write_bytes(output, c.ipa.as_bytes())?;
                        }
                    }
                    Err(e) => {
                        output.write_all(&[1])?;
                        write_bytes(output, e.to_string().as_bytes())?;
                    }
                }
                output.flush()?;
            }
            2 => std::process::abort(),
            _ => return Err(io::ErrorKind::InvalidData.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protocol_round_trips() {
        let mut req = Vec::new();
        req.push(1);
        write_bytes(&mut req, b"en-us").unwrap();
        write_bytes(&mut req, "Hello there. How are you?".as_bytes()).unwrap();
        req.push(1);
        write_bytes(&mut req, b"no-such-voice").unwrap();
        write_bytes(&mut req, b"Hi.").unwrap();
        let mut out = Vec::new();
        serve_on(&mut req.as_slice(), &mut out).unwrap();
        let mut r = out.as_slice();
        let want = Espeak::lock()
            .and_then(|mut e| {
                e.set_voice("en-us")?;
                e.clauses("Hello there. How are you?")
            })
            .unwrap();
        assert_eq!(read_reply(&mut r).unwrap().unwrap(), want);
        assert!(read_reply(&mut r).unwrap().is_err());
        assert!(r.is_empty());
        // Garbage is an error, never a panic or a huge allocation.
        let mut junk: &[u8] = &[1, 0xff, 0xff, 0xff, 0xff];
        assert!(serve_on(&mut junk, &mut Vec::new()).is_err());
        let mut junk: &[u8] = &[9];
        assert!(serve_on(&mut junk, &mut Vec::new()).is_err());
    }
}
