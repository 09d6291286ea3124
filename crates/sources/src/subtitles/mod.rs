//! Timed subtitles: WebVTT and SubRip files read into [`Cue`]s (text cleaned for speech), the
//! rule that fits each cue's speech into its slot ([`fit`]), and the timeline that says what to
//! do as a clock runs ([`timeline`]).
//!
//! The parser is lenient, as players are: a block that does not parse is skipped, not the
//! file. It is written here rather than taken from a crate because the ones published (subtp,
//! srtparse) are strict grammars that refuse a whole file for one bad block, and none strips
//! styling for speech; the whole parser is about 200 lines.

pub mod drive;
pub mod fit;
mod parse;
pub mod timeline;

pub use fit::{Fit, Limits, Overflow, fit};
pub use parse::{clean_text, parse, parse_timestamp};
pub use timeline::{Action, Position, Timeline};

use std::path::Path;
use std::time::Duration;

/// A subtitle file larger than this is refused (a two-hour film's track is about 100 KB).
pub const MAX_FILE_BYTES: u64 = 32 << 20;
/// A cue's spoken text is cut to this many bytes (at a word), whatever the file holds.
pub const MAX_CUE_BYTES: usize = 4096;
/// A file may hold at most this many cues (a cue every second for 27 hours).
pub const MAX_CUES: usize = 100_000;

/// One cue: its text, cleaned for speech, and when it is shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cue {
    pub start: Duration,
    pub end: Duration,
    pub text: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SubtitleError {
    #[error("cannot read the subtitle file {0}: {1}")]
    Read(String, String),
    #[error("the subtitle file {0} is {1} bytes; at most {MAX_FILE_BYTES} are read")]
    TooBig(String, u64),
    #[error("no cues found: this is not a WebVTT or SubRip file, or every cue is empty")]
    NoCues,
}

/// Reads a WebVTT or SubRip file (told apart by its content, not its name). Text that is not
/// UTF-8 is read as Windows-1252, which most older SubRip files are.
pub fn load(path: &Path) -> Result<Vec<Cue>, SubtitleError> {
    let shown = path.display().to_string();
    let read_err = |e: std::io::Error| SubtitleError::Read(shown.clone(), e.to_string());
    let len = std::fs::metadata(path).map_err(read_err)?.len();
    if len > MAX_FILE_BYTES {
        return Err(SubtitleError::TooBig(shown, len));
    }
    let bytes = std::fs::read(path).map_err(read_err)?;
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => e.into_bytes().iter().map(|&b| windows_1252(b)).collect(),
    };
    let cues = parse(&text);
    if cues.is_empty() {
        return Err(SubtitleError::NoCues);
    }
    Ok(cues)
}

/// One byte of Windows-1252 (its 0x80–0x9F punctuation; elsewhere Latin-1).
fn windows_1252(b: u8) -> char {
    const HIGH: [char; 32] = [
        '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž',
        '\u{8f}', '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}',
        'ž', 'Ÿ',
    ];
    match b {
        0x80..=0x9f => HIGH[usize::from(b - 0x80)],
        _ => char::from(b),
    }
}
