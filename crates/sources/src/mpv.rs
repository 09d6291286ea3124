//! Following mpv through its JSON IPC (`mpv --input-ipc-server=SOCKET`): the subtitle it shows
//! (embedded or external, whatever track is on), its position, pause, speed and seeks. Each
//! subtitle mpv shows becomes a cue of a live [`Timeline`], fitted to end when mpv takes it
//! off the screen.
//!
//! The protocol is one JSON object per line each way; std's Unix socket and serde_json are
//! all it needs (the mpv crates on crates.io wrap the same calls around an async runtime or
//! libmpv, neither of which Hark has).

use crate::subtitles::drive::Clock;
use crate::subtitles::{Cue, Position, Timeline, clean_text};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A line from mpv longer than this is not read (a subtitle's text is a few hundred bytes).
const MAX_MESSAGE_BYTES: usize = 256 * 1024;
/// How often the position is asked for (between answers it runs on at mpv's speed).
const ASK_EVERY: Duration = Duration::from_millis(100);
const ASK_POSITION: u64 = 1;
/// How long to wait for mpv's first answer about the position before giving up.
const NO_ANSWER: Duration = Duration::from_secs(30);
/// How long a new subtitle's text waits for its times.
const TIMES_WAIT: Duration = Duration::from_millis(100);
/// How long a cue whose times never came is taken to last.
const UNTIMED_CUE: Duration = Duration::from_secs(3);

/// The properties followed, in the order of their observer ids (1-based).
const OBSERVED: [&str; 5] = ["sub-text", "sub-start", "sub-end", "pause", "speed"];

/// What a line from mpv says, as far as following it goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    Property {
        name: String,
        value: Value,
    },
    /// The answer to a `get_property`.
    Reply {
        request_id: u64,
        value: Value,
    },
    Seek,
    /// Playback of the file ended, or mpv quits.
    Ended,
    Other,
}

/// One line from mpv; `None` if it is not JSON at all.
pub fn parse_message(line: &str) -> Option<Message> {
    if line.len() > MAX_MESSAGE_BYTES {
        return None;
    }
    let v: Value = serde_json::from_str(line).ok()?;
    let o = v.as_object()?;
    if let Some(event) = o.get("event").and_then(Value::as_str) {
        return Some(match event {
            "property-change" => Message::Property {
                name: o
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                value: o.get("data").cloned().unwrap_or(Value::Null),
            },
            "seek" => Message::Seek,
            "end-file" | "shutdown" => Message::Ended,
            _ => Message::Other,
        });
    }
    match o.get("request_id").and_then(Value::as_u64) {
        Some(request_id) => Some(Message::Reply {
            request_id,
            value: o.get("data").cloned().unwrap_or(Value::Null),
        }),
        None => Some(Message::Other),
    }
}

/// A connection to mpv: commands go out on the socket, messages come in on a reader thread.
pub struct Mpv {
    socket: UnixStream,
    messages: mpsc::Receiver<Message>,
    state: State,
}

#[derive(Default)]
struct State {
    /// The media time last heard, and when.
    media: Option<(f64, Instant)>,
    paused: bool,
    speed: f64,
    seeks: u64,
    sub_text: String,
    sub_start: Option<f64>,
    sub_end: Option<f64>,
    /// The subtitle last made a cue (its start and text), so a repeat is not said again.
    last_cue: Option<(u64, String)>,
    /// A new subtitle text waits (since when) until its times have come too: they arrive in
    /// messages of their own, right after it.
    pending: Option<Instant>,
    asked: Option<Instant>,
    ended: bool,
}

impl Mpv {
    pub fn connect(path: &Path) -> Result<Self, String> {
        let socket = UnixStream::connect(path).map_err(|e| {
            format!(
                "cannot connect to mpv at {}: {e} (start mpv with --input-ipc-server={})",
                path.display(),
                path.display()
            )
        })?;
        let reader = socket.try_clone().map_err(|e| e.to_string())?;
        let (tx, messages) = mpsc::channel();
        std::thread::Builder::new()
            .name("hark-mpv".into())
            .spawn(move || {
                let mut lines = BufReader::new(reader);
                let mut line = String::new();
                loop {
                    line.clear();
                    // Bounded: a line past the limit is read no further and ends following.
                    let n = Read::by_ref(&mut lines)
                        .take(MAX_MESSAGE_BYTES as u64)
                        .read_line(&mut line)
                        .unwrap_or_default();
                    let whole = line.ends_with('\n');
                    let msg = if n == 0 || !whole {
                        Some(Message::Ended)
                    } else {
                        parse_message(&line)
                    };
                    let ended = msg == Some(Message::Ended);
                    if let Some(m) = msg
                        && tx.send(m).is_err()
                    {
                        break;
                    }
                    if ended {
                        break;
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        let mut mpv = Self {
            socket,
            messages,
            state: State {
                speed: 1.0,
                ..Default::default()
            },
        };
        for (i, name) in OBSERVED.iter().enumerate() {
            mpv.command(&json!(["observe_property", i + 1, name]), None)?;
        }
        Ok(mpv)
    }

    pub fn command(&mut self, args: &Value, request_id: Option<u64>) -> Result<(), String> {
        let mut msg = json!({ "command": args });
        if let Some(id) = request_id {
            msg["request_id"] = id.into();
        }
        let mut line = msg.to_string();
        line.push('\n');
        self.socket
            .write_all(line.as_bytes())
            .map_err(|e| format!("mpv went away: {e}"))
    }

    fn handle(&mut self, m: Message, now: Instant) {
        let s = &mut self.state;
        match m {
            Message::Property { name, value } => match name.as_str() {
                "sub-text" => {
                    s.sub_text = value.as_str().unwrap_or_default().to_string();
                    // Its times follow in their own messages: wait for the new ones.
                    s.pending = Some(now);
                    s.sub_start = None;
                    s.sub_end = None;
                }
                "sub-start" => s.sub_start = value.as_f64(),
                "sub-end" => s.sub_end = value.as_f64(),
                // Both change how the position runs on from here: hold where it is now.
                "pause" => {
                    s.rebase(now);
                    s.paused = value.as_bool().unwrap_or(false);
                }
                "speed" => {
                    s.rebase(now);
                    s.speed = value.as_f64().filter(|v| *v > 0.0).unwrap_or(1.0);
                }
                _ => {}
            },
            Message::Reply {
                request_id: ASK_POSITION,
                value,
            } => {
                if let Some(t) = value.as_f64() {
                    s.media = Some((t, now));
                }
            }
            Message::Reply { .. } | Message::Other => {}
            Message::Seek => {
                s.seeks += 1;
                s.last_cue = None;
                // The old position is wrong now: ask at once, and wait for the answer.
                s.media = None;
                s.asked = None;
            }
            Message::Ended => s.ended = true,
        }
    }

    fn media_now(&self, now: Instant) -> Option<f64> {
        self.state.media_at(now)
    }
}

impl State {
    /// The media time at `now`, run on from the last answer at mpv's speed.
    fn media_at(&self, now: Instant) -> Option<f64> {
        let (t, at) = self.media?;
        let run = if self.paused {
            0.0
        } else {
            now.duration_since(at).as_secs_f64() * self.speed
        };
        Some(t + run)
    }

    /// Takes the position at `now` as the last one heard.
    fn rebase(&mut self, now: Instant) {
        if let Some(t) = self.media_at(now) {
            self.media = Some((t, now));
        }
    }
}

impl Clock for Mpv {
    fn poll(&mut self, timeline: &mut Timeline) -> Option<Position> {
        let mut now = Instant::now();
        while let Ok(m) = self.messages.try_recv() {
            self.handle(m, now);
        }
        if self
            .state
            .asked
            .is_none_or(|a| now.duration_since(a) >= ASK_EVERY)
        {
            self.state.asked = Some(now);
            self.command(&json!(["get_property", "time-pos"]), Some(ASK_POSITION))
                .ok()?;
        }
        // No position yet (the start, a seek): wait for mpv's answer.
        let waited = now;
        while self.state.media.is_none() && !self.state.ended {
            match self.messages.recv_timeout(Duration::from_millis(20)) {
                Ok(m) => self.handle(m, Instant::now()),
                Err(mpsc::RecvTimeoutError::Timeout) if waited.elapsed() < NO_ANSWER => {
                    // Nothing is playing yet (mpv starting, or idle): ask again.
                    self.command(&json!(["get_property", "time-pos"]), Some(ASK_POSITION))
                        .ok()?;
                }
                Err(_) => return None,
            }
            now = Instant::now();
        }
        if self.state.ended {
            return None;
        }
        let media = self.media_now(now)?;
        let s = &mut self.state;
        if let Some(since) = s.pending {
            let times = match (s.sub_start, s.sub_end) {
                (Some(start), Some(end)) => Some((start, end)),
                // mpv sends only changed values: if the times never come, the cue starts now.
                _ if now.duration_since(since) >= TIMES_WAIT => {
                    Some((media, media + UNTIMED_CUE.as_secs_f64()))
                }
                _ => None,
            };
            if let Some((start, end)) = times {
                s.pending = None;
                let lines: Vec<&str> = s.sub_text.lines().collect();
                let text = clean_text(&lines);
                let start_ms = (start.max(0.0) * 1000.0) as u64;
                if !text.is_empty() && s.last_cue.as_ref() != Some(&(start_ms, text.clone())) {
                    s.last_cue = Some((start_ms, text.clone()));
                    timeline.push(Cue {
                        start: Duration::from_millis(start_ms),
                        end: Duration::from_secs_f64(end.max(start).max(0.0)),
                        text,
                    });
                }
            }
        }
        Some(Position {
            media: Duration::from_secs_f64(media.max(0.0)),
            paused: s.paused,
            rate: s.speed,
            seeks: s.seeks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpvs_messages() {
        assert_eq!(
            parse_message(r#"{"event":"property-change","id":1,"name":"sub-text","data":"Hi"}"#),
            Some(Message::Property {
                name: "sub-text".into(),
                value: json!("Hi")
            })
        );
        assert_eq!(
            parse_message(r#"{"request_id":1,"error":"success","data":12.5}"#),
            Some(Message::Reply {
                request_id: 1,
                value: json!(12.5)
            })
        );
        assert_eq!(parse_message(r#"{"event":"seek"}"#), Some(Message::Seek));
        assert_eq!(
            parse_message(r#"{"event":"end-file","reason":"eof"}"#),
            Some(Message::Ended)
        );
        assert_eq!(
            parse_message(r#"{"event":"audio-reconfig"}"#),
            Some(Message::Other)
        );
        assert_eq!(parse_message("not json"), None);
        assert_eq!(parse_message("[1,2]"), None);
    }

    #[test]
    fn the_position_runs_on_at_the_speed_and_holds_while_paused() {
        let t0 = Instant::now();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let mut m = State {
            media: Some((10.0, t0)),
            speed: 1.0,
            ..Default::default()
        };
        assert_eq!(m.media_at(at(1.0)), Some(11.0));
        // Twice as fast from 1 s on: the second before it ran at 1×.
        m.rebase(at(1.0));
        m.speed = 2.0;
        assert_eq!(m.media_at(at(2.0)), Some(13.0));
        // Paused at 2 s: it holds there.
        m.rebase(at(2.0));
        m.paused = true;
        assert_eq!(m.media_at(at(5.0)), Some(13.0));
    }
}
