//! A small SSIP client (speech-dispatcher's client protocol, as Orca speaks it through
//! libspeechd): commands and their replies, and the events speech-dispatcher sends for each
//! message (`701 BEGIN`, `702 END`, `703 CANCELED`, `700 INDEX MARK`, …), each stamped when
//! it was read. Only what `hark bench --speechd` needs.

use anyhow::{Context, bail};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// One event of a message.
#[derive(Clone, Debug)]
pub struct SsipEvent {
    pub at: Instant,
    /// 700 index mark, 701 begin, 702 end, 703 canceled, 704 paused, 705 resumed.
    pub code: u16,
    pub msg_id: u64,
}

pub struct Ssip {
    w: UnixStream,
    replies: Receiver<(u16, Vec<String>)>,
    events: Receiver<SsipEvent>,
}

const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

impl Ssip {
    pub fn connect(socket: &Path, client: &str) -> anyhow::Result<Self> {
        let stream = UnixStream::connect(socket).with_context(|| {
            format!(
                "cannot connect to speech-dispatcher at {}",
                socket.display()
            )
        })?;
        let r = stream.try_clone()?;
        let (reply_tx, replies) = channel();
        let (event_tx, events) = channel();
        std::thread::Builder::new()
            .name("hark-bench-ssip".into())
            .spawn(move || {
                let mut data = Vec::new();
                for line in BufReader::new(r).lines() {
                    let Ok(line) = line else { return };
                    let at = Instant::now();
                    let line = line.trim_end_matches('\r');
                    let code: u16 = line.get(..3).and_then(|c| c.parse().ok()).unwrap_or(0);
                    let rest = line.get(4..).unwrap_or("").to_string();
                    if line.as_bytes().get(3) == Some(&b'-') {
                        data.push(rest);
                        continue;
                    }
                    let lines = std::mem::take(&mut data);
                    if (700..800).contains(&code) {
                        let msg_id = lines.first().and_then(|m| m.parse().ok()).unwrap_or(0);
                        if event_tx.send(SsipEvent { at, code, msg_id }).is_err() {
                            return;
                        }
                    } else if reply_tx.send((code, lines)).is_err() {
                        return;
                    }
                }
            })?;
        let mut c = Ssip {
            w: stream,
            replies,
            events,
        };
        c.command(&format!("SET SELF CLIENT_NAME user:{client}:bench"))?;
        c.command("SET SELF NOTIFICATION ALL ON")?;
        Ok(c)
    }

    /// Sends one command line; its reply code and data lines (an error for 3xx–5xx).
    pub fn command(&mut self, line: &str) -> anyhow::Result<(u16, Vec<String>)> {
        self.w.write_all(line.as_bytes())?;
        self.w.write_all(b"\r\n")?;
        self.reply(line)
    }

    fn reply(&mut self, what: &str) -> anyhow::Result<(u16, Vec<String>)> {
        let (code, data) = self
            .replies
            .recv_timeout(REPLY_TIMEOUT)
            .with_context(|| format!("speech-dispatcher did not answer {what:?}"))?;
        if !(200..300).contains(&code) {
            bail!("speech-dispatcher refused {what:?} ({code})");
        }
        Ok((code, data))
    }

    /// `SPEAK` with `text`; when its last line was sent, and the message's id.
    pub fn speak(&mut self, text: &str) -> anyhow::Result<(Instant, u64)> {
        self.command("SPEAK")?;
        let body = hark_speechd::protocol::data_block(text, "\r\n");
        self.w.write_all(body.as_bytes())?;
        let sent = Instant::now();
        let (_, data) = self.reply("SPEAK data")?;
        Ok((sent, msg_id(&data)?))
    }

    /// `CHAR c`; when it was sent, and the message's id.
    pub fn char(&mut self, c: char) -> anyhow::Result<(Instant, u64)> {
        let arg = if c == ' ' {
            "space".into()
        } else {
            c.to_string()
        };
        let line = format!("CHAR {arg}\r\n");
        self.w.write_all(line.as_bytes())?;
        let sent = Instant::now();
        let (_, data) = self.reply("CHAR")?;
        Ok((sent, msg_id(&data)?))
    }

    /// `CANCEL SELF`; when it was sent.
    pub fn cancel(&mut self) -> anyhow::Result<Instant> {
        self.w.write_all(b"CANCEL SELF\r\n")?;
        let sent = Instant::now();
        self.reply("CANCEL")?;
        Ok(sent)
    }

    /// Waits for event `code` of message `id` (events of other messages are dropped).
    pub fn wait_event(&self, id: u64, codes: &[u16], timeout: Duration) -> Option<SsipEvent> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(e) if e.msg_id == id && codes.contains(&e.code) => return Some(e),
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                    return None;
                }
            }
        }
    }
}

impl Drop for Ssip {
    fn drop(&mut self) {
        let _ = self.w.write_all(b"QUIT\r\n");
    }
}

fn msg_id(data: &[String]) -> anyhow::Result<u64> {
    data.first()
        .and_then(|d| d.trim().parse().ok())
        .context("speech-dispatcher's reply has no message id")
}
