//! Captions that revise themselves: a live captioner (a speech recogniser) sends its growing
//! hypothesis again and again, and changes its last words as it hears more. Each message
//! replaces the unfinished tail. [`Stabiliser`] hands on only words that have become stable,
//! each once: a word is stable when a final message has it, or when it has come back the
//! same in [`Stabiliser::stable_after`] messages in a row, or unchanged for
//! [`Stabiliser::hold`], and is not the hypothesis's last word (that one may still be half
//! heard), and every word before it is stable too.
//!
//! The protocol: one JSON object per line, `{"text": "…", "final": false}` (`final` may be
//! left out; false). A final message ends the line: its words not yet said are said, and the
//! next message starts a new one.

use serde::Deserialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How often words are checked for having stayed unchanged long enough, between messages.
const TICK: Duration = Duration::from_millis(100);

/// A message's text is at most this long (as a caption line).
pub const MAX_TEXT_BYTES: usize = crate::caption::MAX_LINE_BYTES;

/// One message of the protocol.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    pub text: String,
    #[serde(default, rename = "final")]
    pub is_final: bool,
}

/// Reads one line of the protocol, with a message a user can act on if it is not one.
pub fn parse_line(line: &str) -> Result<Message, String> {
    if line.len() > MAX_TEXT_BYTES + 64 {
        return Err(format!(
            "a caption message of {} bytes is too long (at most {MAX_TEXT_BYTES})",
            line.len()
        ));
    }
    serde_json::from_str(line.trim()).map_err(|e| {
        format!(
            r#"not a caption message ({e}); each line must be {{"text": "…", "final": true|false}}"#
        )
    })
}

/// A word of the current hypothesis: as written, its key (what counts as the same word:
/// letters and digits, lower-cased, so a revised comma or capital is no change), how many
/// messages in a row have had it, and since when.
struct Word {
    text: String,
    key: String,
    seen: u32,
    since: Instant,
}

pub struct Stabiliser {
    /// Messages in a row a word must come back the same to be stable.
    pub stable_after: u32,
    /// How long a word may stay unchanged before it is stable without more messages.
    pub hold: Duration,
    words: Vec<Word>,
    /// Words of this line already handed on.
    said: usize,
}

impl Default for Stabiliser {
    fn default() -> Self {
        Self {
            stable_after: 2,
            hold: Duration::from_millis(700),
            words: Vec::new(),
            said: 0,
        }
    }
}

fn key(word: &str) -> String {
    word.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

impl Stabiliser {
    /// Takes a message; returns the words that became stable (none if nothing did), as one
    /// piece of text to say.
    pub fn update(&mut self, msg: &Message, now: Instant) -> Option<String> {
        let mut text = msg.text.as_str();
        if text.len() > MAX_TEXT_BYTES {
            let mut cut = MAX_TEXT_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text = &text[..cut];
        }
        let mut next = Vec::new();
        for (i, w) in text.split_whitespace().enumerate() {
            let k = key(w);
            let word = match self.words.get(i) {
                Some(old) if old.key == k => Word {
                    text: w.into(),
                    key: k,
                    seen: old.seen + 1,
                    since: old.since,
                },
                _ => Word {
                    text: w.into(),
                    key: k,
                    seen: 1,
                    since: now,
                },
            };
            next.push(word);
        }
        self.words = next;
        if msg.is_final {
            return self.finish();
        }
        self.ripe(now)
    }

    /// The input has ended: the words of the last message not said yet, as if it were final.
    pub fn finish(&mut self) -> Option<String> {
        let out = self.take(self.words.len());
        self.words.clear();
        self.said = 0;
        out
    }

    /// Words that became stable by time alone (call it now and then while no message comes).
    pub fn tick(&mut self, now: Instant) -> Option<String> {
        self.ripe(now)
    }

    fn ripe(&mut self, now: Instant) -> Option<String> {
        // The last word may still be half heard: never stable before the final message.
        let candidates = self.words.len().saturating_sub(1);
        let stable = self.words[..candidates]
            .iter()
            .take_while(|w| w.seen >= self.stable_after || now.duration_since(w.since) >= self.hold)
            .count();
        self.take(stable)
    }

    /// Hands on the words before `upto` not said yet. A revision of a word already said is
    /// not said again (it cannot be unsaid); the count of words said stands.
    fn take(&mut self, upto: usize) -> Option<String> {
        if upto <= self.said {
            return None;
        }
        let out = self.words[self.said..upto]
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        self.said = upto;
        Some(out)
    }
}

/// What the loop of [`follow`] does with what it reads.
pub trait Listener {
    /// Words that became stable, to be said.
    fn say(&mut self, words: String);
    /// A final message ended a line (its whole text).
    fn line_ended(&mut self, _text: &str) {}
    /// Line `number` (1-based) was not a caption message.
    fn bad_line(&mut self, number: u64, error: &str);
}

/// Reads a revising source's lines from `lines` until it ends (then the last message's
/// words not said yet are said: it is all there will be) or `stop` is set (then nothing more
/// is said: the user stopped it).
pub fn follow(lines: &mpsc::Receiver<String>, stop: &AtomicBool, listener: &mut dyn Listener) {
    let mut stabiliser = Stabiliser::default();
    let mut number = 0u64;
    let say = |words: Option<String>, listener: &mut dyn Listener| {
        if let Some(w) = words {
            listener.say(w);
        }
    };
    while !stop.load(Ordering::Acquire) {
        match lines.recv_timeout(TICK) {
            Ok(line) => {
                number += 1;
                match parse_line(&line) {
                    Ok(msg) => {
                        say(stabiliser.update(&msg, Instant::now()), listener);
                        if msg.is_final && !msg.text.trim().is_empty() {
                            listener.line_ended(&msg.text);
                        }
                    }
                    Err(e) => listener.bad_line(number, &e),
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => say(stabiliser.tick(Instant::now()), listener),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                say(stabiliser.finish(), listener);
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    fn msg(text: &str, is_final: bool) -> Message {
        Message {
            text: text.into(),
            is_final,
        }
    }

    #[test]
    fn the_protocol_and_its_errors() {
        assert_eq!(
            parse_line(r#"{"text": "hi there", "final": true}"#),
            Ok(msg("hi there", true))
        );
        assert_eq!(parse_line(r#" {"text":"hi"} "#), Ok(msg("hi", false)));
        for bad in [
            "",
            "hi",
            r#"{"text": 3}"#,
            r#"{"final": true}"#,
            r#"{"text":"a","extra":1}"#,
        ] {
            let e = parse_line(bad).unwrap_err();
            assert!(e.contains(r#"{"text": "…", "final": true|false}"#), "{e}");
        }
    }

    #[test]
    fn only_stable_words_are_said_and_the_final_says_the_rest() {
        let t = Instant::now();
        let mut s = Stabiliser::default();
        assert_eq!(s.update(&msg("the cat", false), t), None);
        // "the" came back twice: stable. "cat" became "cap": not.
        assert_eq!(
            s.update(&msg("the cap sat", false), t).as_deref(),
            Some("the")
        );
        assert_eq!(s.update(&msg("the cat sat on", false), t), None);
        assert_eq!(
            s.update(&msg("The cat sat, on", false), t).as_deref(),
            Some("cat sat,")
        );
        assert_eq!(
            s.update(&msg("the cat sat on the mat.", true), t)
                .as_deref(),
            Some("on the mat.")
        );
        // A new line.
        assert_eq!(s.update(&msg("next", false), t), None);
        assert_eq!(
            s.update(&msg("next one", true), t).as_deref(),
            Some("next one")
        );
    }

    #[test]
    fn time_makes_a_word_stable_when_messages_stop() {
        let t = Instant::now();
        let mut s = Stabiliser::default();
        s.update(&msg("wait for it", false), t);
        assert_eq!(s.tick(t + Duration::from_millis(300)), None);
        // Not the last word, which may be half heard.
        assert_eq!(
            s.tick(t + Duration::from_millis(800)).as_deref(),
            Some("wait for")
        );
    }

    /// A captioner's stream: each line grows a word at a time; now and then the newest word
    /// comes out wrong first, or the one before it is revised, and is put right in the next
    /// message; some messages repeat; the line ends with a final message.
    fn stream(rng: &mut StdRng, lines: &[&str]) -> Vec<Message> {
        let mut out = Vec::new();
        for line in lines {
            let words: Vec<&str> = line.split(' ').collect();
            for n in 1..=words.len() {
                let mut hyp: Vec<String> = words[..n].iter().map(|w| w.to_string()).collect();
                if rng.random_bool(0.3) {
                    let last = hyp.len() - 1;
                    hyp[last] = format!("{}x", hyp[last]);
                    out.push(msg(&hyp.join(" "), false));
                    hyp[last] = words[last].to_string();
                }
                if n >= 2 && rng.random_bool(0.2) {
                    // The word before the newest, revised in a message of its own, once.
                    let mut wrong = hyp.clone();
                    wrong[n - 2] = "uh".into();
                    out.push(msg(&words[..n - 1].join(" "), false));
                    out.push(msg(&wrong.join(" "), false));
                }
                for _ in 0..rng.random_range(1..=2) {
                    out.push(msg(&hyp.join(" "), false));
                }
            }
            out.push(msg(line, true));
        }
        out
    }

    #[test]
    fn a_generated_stream_says_every_word_once_and_in_order() {
        let lines = [
            "good evening and welcome to the news",
            "the storm has moved north overnight",
            "more on that after the break",
        ];
        for seed in 0..50 {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut s = Stabiliser {
                hold: Duration::from_secs(3600),
                ..Default::default()
            };
            let mut said = Vec::new();
            let t = Instant::now();
            for m in stream(&mut rng, &lines) {
                if let Some(words) = s.update(&m, t) {
                    said.extend(words.split(' ').map(str::to_string));
                }
            }
            let want: Vec<&str> = lines.iter().flat_map(|l| l.split(' ')).collect();
            assert_eq!(said, want, "seed {seed}");
        }
    }

    #[derive(Default)]
    struct Heard {
        said: Vec<String>,
        ended: Vec<String>,
        bad: Vec<u64>,
    }

    impl Listener for Heard {
        fn say(&mut self, words: String) {
            self.said.push(words);
        }
        fn line_ended(&mut self, text: &str) {
            self.ended.push(text.to_string());
        }
        fn bad_line(&mut self, number: u64, _error: &str) {
            self.bad.push(number);
        }
    }

    #[test]
    fn the_loop_says_the_rest_when_its_source_ends_and_nothing_once_stopped() {
        let lines = [
            r#"{"text": "good evening and", "final": false}"#,
            "not json",
            r#"{"text": "good evening and welcome", "final": true}"#,
            r#"{"text": "the storm has"}"#,
        ];
        let run = |stop: bool| {
            let (tx, rx) = mpsc::channel();
            lines.iter().for_each(|l| tx.send(l.to_string()).unwrap());
            drop(tx);
            let mut heard = Heard::default();
            follow(&rx, &AtomicBool::new(stop), &mut heard);
            heard
        };
        let heard = run(false);
        assert_eq!(
            heard.said.join(" "),
            "good evening and welcome the storm has"
        );
        assert_eq!(heard.ended, ["good evening and welcome"]);
        assert_eq!(heard.bad, [2]);
        let stopped = run(true);
        assert!(stopped.said.is_empty() && stopped.bad.is_empty());
    }
}
