//! speech-dispatcher's output-module protocol, as speech-dispatcher 0.11 speaks it to a
//! module on its stdin and stdout (`src/modules/module_process.c`, `module_readline.c`,
//! `src/server/output.c` of brailcom/speechd): one command per line; `SPEAK`, `CHAR`, `KEY`
//! and `SOUND_ICON` are followed by data lines ending with a line holding a single dot (a
//! data line that starts with a dot has one more dot in front); `SET`, `AUDIO` and
//! `LOGLEVEL` by `key=value` lines ending the same way.
//!
//! This file is pure: a [`Parser`] takes one line at a time and says what to answer at once
//! and which command is complete. The module (`module.rs`) does the rest.

/// What a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsgKind {
    Text,
    Char,
    Key,
    SoundIcon,
}

/// A complete command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `SPEAK`/`CHAR`/`KEY`/`SOUND_ICON` with their data (the last newline removed; a CHAR
    /// `space` is already a space, as speech-dispatcher's own modules get it).
    Speak {
        kind: MsgKind,
        text: String,
    },
    Stop,
    Pause,
    ListVoices,
    /// `SET`'s `key=value` lines.
    Set(Vec<(String, String)>),
    Audio(Vec<(String, String)>),
    LogLevel(Vec<(String, String)>),
    /// `DEBUG ON <file>` / `DEBUG OFF`.
    Debug {
        on: bool,
        file: Option<String>,
    },
    Quit,
}

/// What one line leads to: a reply to send now (several lines joined by `\n`, without the
/// last newline), and a command to carry out.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Step {
    pub reply: Option<String>,
    pub command: Option<Command>,
}

impl Step {
    fn reply(r: &str) -> Self {
        Step {
            reply: Some(r.to_string()),
            command: None,
        }
    }
    fn command(c: Command) -> Self {
        Step {
            reply: None,
            command: Some(c),
        }
    }
}

pub const BAD_SYNTAX: &str = "302 ERROR BAD SYNTAX";
pub const BAD_PARAM: &str = "303 ERROR INVALID PARAMETER OR VALUE";
pub const BAD_MULTILINE: &str = "305 DATA MORE THAN ONE LINE";
pub const CANT_SPEAK: &str = "301 ERROR CANT SPEAK";
pub const UNKNOWN: &str = "300 ERR UNKNOWN COMMAND";
pub const SPEAKING: &str = "200 OK SPEAKING";

/// The most text one message may carry; a longer one is read to its end and refused.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug)]
enum State {
    Command,
    Data {
        kind: MsgKind,
        text: String,
        lines: usize,
        too_long: bool,
    },
    Params {
        which: Params,
        pairs: Vec<(String, String)>,
        error: Option<&'static str>,
    },
}

#[derive(Clone, Copy, Debug)]
enum Params {
    Set,
    Audio,
    LogLevel,
}

/// Reads the protocol line by line.
#[derive(Debug)]
pub struct Parser {
    state: State,
}

impl Default for Parser {
    fn default() -> Self {
        Self {
            state: State::Command,
        }
    }
}

impl Parser {
    /// True while inside a message's data or a block of settings.
    pub fn in_block(&self) -> bool {
        !matches!(self.state, State::Command)
    }

    /// One line as read, with its `\n` (a last line without one is taken as it is).
    pub fn line(&mut self, line: &str) -> Step {
        match std::mem::replace(&mut self.state, State::Command) {
            State::Command => self.command(line),
            State::Data {
                kind,
                mut text,
                lines,
                too_long,
            } => {
                if line == ".\n" || line == "." {
                    return finish_data(kind, text, lines, too_long);
                }
                // One leading dot is the escape of a data line starting with a dot.
                let data = line.strip_prefix('.').unwrap_or(line);
                let too_long = too_long || text.len() + data.len() > MAX_MESSAGE_BYTES;
                if !too_long {
                    text.push_str(data);
                }
                self.state = State::Data {
                    kind,
                    text,
                    lines: lines + 1,
                    too_long,
                };
                Step::default()
            }
            State::Params {
                which,
                mut pairs,
                mut error,
            } => {
                if line == ".\n" || line == "." {
                    let command = match which {
                        Params::Set => Command::Set(pairs),
                        Params::Audio => Command::Audio(pairs),
                        Params::LogLevel => Command::LogLevel(pairs),
                    };
                    return match error {
                        Some(e) => Step::reply(e),
                        None => Step::command(command),
                    };
                }
                match parse_pair(line) {
                    Some(p) => {
                        if pairs.len() < 256 {
                            pairs.push(p);
                        }
                    }
                    None => error = Some(BAD_SYNTAX),
                }
                self.state = State::Params {
                    which,
                    pairs,
                    error,
                };
                Step::default()
            }
        }
    }

    fn command(&mut self, line: &str) -> Step {
        let data = |kind| State::Data {
            kind,
            text: String::new(),
            lines: 0,
            too_long: false,
        };
        let params = |which| State::Params {
            which,
            pairs: Vec::new(),
            error: None,
        };
        let cmd = line.strip_suffix('\n').unwrap_or(line);
        match cmd {
            "SPEAK" => {
                self.state = data(MsgKind::Text);
                Step::reply("202 OK RECEIVING MESSAGE")
            }
            "CHAR" => {
                self.state = data(MsgKind::Char);
                Step::reply("202 OK RECEIVING MESSAGE")
            }
            "KEY" => {
                self.state = data(MsgKind::Key);
                Step::reply("202 OK RECEIVING MESSAGE")
            }
            "SOUND_ICON" => {
                self.state = data(MsgKind::SoundIcon);
                Step::reply("202 OK RECEIVING MESSAGE")
            }
            "SET" => {
                self.state = params(Params::Set);
                Step::reply("203 OK RECEIVING SETTINGS")
            }
            "AUDIO" => {
                self.state = params(Params::Audio);
                Step::reply("207 OK RECEIVING AUDIO SETTINGS")
            }
            "LOGLEVEL" => {
                self.state = params(Params::LogLevel);
                Step::reply("207 OK RECEIVING LOGLEVEL SETTINGS")
            }
            "STOP" => Step::command(Command::Stop),
            "PAUSE" => Step::command(Command::Pause),
            "LIST VOICES" => Step::command(Command::ListVoices),
            "QUIT" => Step::command(Command::Quit),
            _ if cmd.starts_with("DEBUG") => debug(cmd),
            _ => Step::reply(UNKNOWN),
        }
    }
}

fn finish_data(kind: MsgKind, mut text: String, lines: usize, too_long: bool) -> Step {
    if too_long {
        return Step::reply(CANT_SPEAK);
    }
    if text.ends_with('\n') {
        text.pop();
    }
    if text.is_empty() {
        return Step::reply(CANT_SPEAK);
    }
    if kind != MsgKind::Text && lines > 1 {
        return Step::reply(BAD_MULTILINE);
    }
    if kind == MsgKind::Char && text == "space" {
        text = " ".into();
    }
    Step::command(Command::Speak { kind, text })
}

/// `key=value` (the value runs to the end of the line; both must be there).
fn parse_pair(line: &str) -> Option<(String, String)> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let (k, v) = line.split_once('=')?;
    if k.is_empty() || v.is_empty() {
        return None;
    }
    Some((k.to_string(), v.to_string()))
}

fn debug(cmd: &str) -> Step {
    let mut words = cmd.split_whitespace();
    if words.next() != Some("DEBUG") {
        return Step::reply(UNKNOWN);
    }
    match (words.next(), words.next()) {
        (Some("ON"), Some(file)) => Step::command(Command::Debug {
            on: true,
            file: Some(file.to_string()),
        }),
        (Some("OFF"), _) => Step::command(Command::Debug {
            on: false,
            file: None,
        }),
        _ => Step::reply(BAD_SYNTAX),
    }
}

/// `text` as a data block of speech-dispatcher's protocols (a line that starts with a dot
/// gets one more; a line with a single dot ends the block), each line ended with `eol`
/// (`"\n"` to a module, `"\r\n"` in SSIP).
pub fn data_block(text: &str, eol: &str) -> String {
    let mut body = String::with_capacity(text.len() + 8);
    for line in text.lines() {
        if line.starts_with('.') {
            body.push('.');
        }
        body.push_str(line);
        body.push_str(eol);
    }
    body.push('.');
    body.push_str(eol);
    body
}

/// Events the module reports while speaking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    Begin,
    End,
    Stop,
    Pause,
    IndexMark(String),
}

impl Report {
    /// The lines to write (without the last newline).
    pub fn lines(&self) -> String {
        match self {
            Report::Begin => "701 BEGIN".into(),
            Report::End => "702 END".into(),
            Report::Stop => "703 STOP".into(),
            Report::Pause => "704 PAUSE".into(),
            // A mark name is one line: anything that would break the line is dropped.
            Report::IndexMark(name) => {
                let name: String = name.chars().filter(|c| *c != '\n' && *c != '\r').collect();
                format!("700-{name}\n700 INDEX MARK")
            }
        }
    }
}

/// The `LIST VOICES` answer: `200-name\tlanguage\tvariant` per voice, then
/// `200 OK VOICE LIST SENT` (or `304 CANT LIST VOICES` with none).
pub fn voice_list(voices: &[(String, String)]) -> String {
    if voices.is_empty() {
        return "304 CANT LIST VOICES".into();
    }
    let mut s = String::new();
    for (name, lang) in voices {
        let clean = |t: &str| t.replace(['\t', '\n', '\r'], " ");
        s.push_str(&format!("200-{}\t{}\tnone\n", clean(name), clean(lang)));
    }
    s.push_str("200 OK VOICE LIST SENT");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(p: &mut Parser, lines: &[&str]) -> Vec<Step> {
        lines.iter().map(|l| p.line(l)).collect()
    }

    #[test]
    fn speak_reads_data_to_the_dot_and_unescapes_dots() {
        let mut p = Parser::default();
        let steps = feed(
            &mut p,
            &[
                "SPEAK\n",
                "<speak>Hello\n",
                "..and more\n",
                "</speak>\n",
                ".\n",
            ],
        );
        assert_eq!(steps[0].reply.as_deref(), Some("202 OK RECEIVING MESSAGE"));
        assert!(steps[1..4].iter().all(|s| *s == Step::default()));
        assert_eq!(
            steps[4].command,
            Some(Command::Speak {
                kind: MsgKind::Text,
                text: "<speak>Hello\n.and more\n</speak>".into()
            })
        );
        assert!(!p.in_block());
    }

    #[test]
    fn a_data_block_reads_back_as_it_was() {
        let text = "line one\n.dotted\n..two dots\nlast";
        let block = data_block(text, "\n");
        assert_eq!(block, "line one\n..dotted\n...two dots\nlast\n.\n");
        let mut p = Parser::default();
        p.line("SPEAK\n");
        let steps: Vec<Step> = block.split_inclusive('\n').map(|l| p.line(l)).collect();
        assert_eq!(
            steps.last().unwrap().command,
            Some(Command::Speak {
                kind: MsgKind::Text,
                text: text.into()
            })
        );
        assert!(data_block("x", "\r\n").ends_with("x\r\n.\r\n"));
    }

    #[test]
    fn char_space_and_multiline_keys() {
        let mut p = Parser::default();
        let s = feed(&mut p, &["CHAR\n", "space\n", ".\n"]);
        assert_eq!(
            s[2].command,
            Some(Command::Speak {
                kind: MsgKind::Char,
                text: " ".into()
            })
        );
        let s = feed(&mut p, &["KEY\n", "a\n", "b\n", ".\n"]);
        assert_eq!(s[3].reply.as_deref(), Some(BAD_MULTILINE));
        let s = feed(&mut p, &["SPEAK\n", ".\n"]);
        assert_eq!(s[1].reply.as_deref(), Some(CANT_SPEAK));
    }

    #[test]
    fn set_collects_pairs_and_reports_bad_syntax_at_the_end() {
        let mut p = Parser::default();
        let s = feed(&mut p, &["SET\n", "rate=20\n", "language=NULL\n", ".\n"]);
        assert_eq!(s[0].reply.as_deref(), Some("203 OK RECEIVING SETTINGS"));
        assert_eq!(
            s[3].command,
            Some(Command::Set(vec![
                ("rate".into(), "20".into()),
                ("language".into(), "NULL".into())
            ]))
        );
        let s = feed(&mut p, &["SET\n", "rate\n", "pitch=3\n", ".\n"]);
        assert_eq!(s[3].reply.as_deref(), Some(BAD_SYNTAX));
        assert_eq!(s[3].command, None);
    }

    #[test]
    fn other_commands() {
        let mut p = Parser::default();
        assert_eq!(p.line("STOP\n").command, Some(Command::Stop));
        assert_eq!(p.line("PAUSE\n").command, Some(Command::Pause));
        assert_eq!(p.line("LIST VOICES\n").command, Some(Command::ListVoices));
        assert_eq!(p.line("QUIT\n").command, Some(Command::Quit));
        assert_eq!(p.line("BOGUS\n").reply.as_deref(), Some(UNKNOWN));
        assert_eq!(p.line("DEBUG\n").reply.as_deref(), Some(BAD_SYNTAX));
        assert_eq!(
            p.line("DEBUG ON /tmp/x\n").command,
            Some(Command::Debug {
                on: true,
                file: Some("/tmp/x".into())
            })
        );
        let s = feed(&mut p, &["AUDIO\n", "audio_output_method=pulse\n", ".\n"]);
        assert_eq!(
            s[0].reply.as_deref(),
            Some("207 OK RECEIVING AUDIO SETTINGS")
        );
        assert!(matches!(s[2].command, Some(Command::Audio(_))));
    }

    #[test]
    fn reports_are_speech_dispatchers_lines() {
        assert_eq!(Report::Stop.lines(), "703 STOP");
        assert_eq!(
            Report::IndexMark("__spd_3".into()).lines(),
            "700-__spd_3\n700 INDEX MARK"
        );
        assert_eq!(
            voice_list(&[("en_US-joe-medium".into(), "en-US".into())]),
            "200-en_US-joe-medium\ten-US\tnone\n200 OK VOICE LIST SENT"
        );
    }

    #[test]
    fn an_oversized_message_is_refused_after_its_end() {
        let mut p = Parser::default();
        p.line("SPEAK\n");
        let line = "x".repeat(1 << 20) + "\n";
        for _ in 0..17 {
            assert_eq!(p.line(&line), Step::default());
        }
        assert_eq!(p.line(".\n").reply.as_deref(), Some(CANT_SPEAK));
    }
}
