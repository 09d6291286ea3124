//! Audio files of any length, streamed: `hark speak --out book.{wav,flac,opus,mp3}` and the
//! app's export. One module per format behind [`Encoder`]; each takes the voice's samples as
//! they are synthesised (nothing is held beyond a frame or a block), writes to a partial file
//! beside the target (`crate::partial`) and puts it in place only when complete.
//!
//! Chapters are known by name before the audio (from the text) and by time only after it, so
//! each format reserves its tags at the start of the file and fills them in at
//! [`Encoder::finish`]: FLAC and Ogg Opus as Vorbis-comment `CHAPTERnnn`/`CHAPTERnnnNAME`
//! tags (`tags.rs`), MP3 as ID3v2 `CHAP` frames under a `CTOC`. WAV has none.

pub mod book;
mod flac;
mod mp3;
mod opus;
pub mod subtitles;
mod tags;

use crate::wav::{WavError, WavFormat, WavSink};
use std::path::Path;

/// Where an export failed, with the file it was writing.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Wav(#[from] WavError),
    #[error("cannot write {path}: {message}")]
    Encoder { path: String, message: String },
}

impl ExportError {
    pub(crate) fn new(path: &Path, message: impl std::fmt::Display) -> Self {
        Self::Encoder {
            path: path.display().to_string(),
            message: message.to_string(),
        }
    }

    /// [`ExportError::new`] for `path`, as a closure for `map_err`.
    pub(crate) fn at(path: &Path) -> impl Fn(&dyn std::fmt::Display) -> Self + '_ {
        move |e| Self::new(path, e)
    }
}

/// The kinds of file an export writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Wav(WavFormat),
    /// 16-bit FLAC, lossless against the 16-bit WAV.
    Flac,
    /// Ogg Opus, 32 kbit/s mono at 24 kHz (resampled).
    Opus,
    /// MP3, 64 kbit/s CBR mono at the voice's rate, with a LAME tag (gapless).
    Mp3,
}

impl ExportFormat {
    /// The format a file name asks for by its extension (none: WAV, as `--out` always wrote);
    /// `wav` says which WAV samples.
    pub fn from_path(path: &Path, wav: WavFormat) -> Result<Self, String> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            None | Some("wav") => Ok(Self::Wav(wav)),
            Some("flac") => Ok(Self::Flac),
            Some("opus" | "ogg") => Ok(Self::Opus),
            Some("mp3") => Ok(Self::Mp3),
            _ => Err(format!(
                "cannot tell the audio format of {}: name it .wav, .flac, .opus or .mp3",
                path.display()
            )),
        }
    }

    /// Whether the format stores chapter marks.
    pub fn has_chapters(self) -> bool {
        !matches!(self, Self::Wav(_))
    }
}

/// An audio file being written, one voice-rate mono stream.
pub trait Encoder {
    /// Appends samples (at the voice's rate, full scale ±1).
    fn write(&mut self, samples: &[f32]) -> Result<(), ExportError>;
    /// Completes the file and puts it in place. `chapter_starts` gives, for each chapter
    /// title given at creation, its first sample; until then the target is untouched.
    fn finish(self: Box<Self>, chapter_starts: &[u64]) -> Result<(), ExportError>;
}

/// What an encoder is created for: the file, the voice's rate, the chapter titles.
pub(crate) struct Target<'a> {
    path: &'a Path,
    rate: u32,
    titles: &'a [String],
}

/// Starts writing `path` in `format`, at `sample_rate`, with room for `chapters` (their
/// titles; formats without chapters ignore them).
pub fn create(
    path: &Path,
    format: ExportFormat,
    sample_rate: u32,
    chapters: &[String],
) -> Result<Box<dyn Encoder>, ExportError> {
    let target = Target {
        path,
        rate: sample_rate,
        titles: chapters,
    };
    Ok(match format {
        ExportFormat::Wav(f) => Box::new(WavSink::create(path, sample_rate, f)?),
        ExportFormat::Flac => Box::new(flac::FlacEncoder::create(&target)?),
        ExportFormat::Opus => Box::new(opus::OpusEncoder::create(&target)?),
        ExportFormat::Mp3 => Box::new(mp3::Mp3Encoder::create(&target)?),
    })
}

impl Encoder for WavSink {
    fn write(&mut self, samples: &[f32]) -> Result<(), ExportError> {
        Ok(WavSink::write(self, samples)?)
    }

    fn finish(self: Box<Self>, _: &[u64]) -> Result<(), ExportError> {
        Ok(WavSink::finish(*self)?)
    }
}

/// Places chapters as the sentences are written: a chapter starts with the first sentence
/// that reaches past its first byte (a heading its own sentence, or the one it begins).
pub struct ChapterClock {
    /// Byte offsets in the text where the chapters start, in order.
    bytes: Vec<usize>,
    starts: Vec<u64>,
}

impl ChapterClock {
    pub fn new(bytes: Vec<usize>) -> Self {
        Self {
            starts: Vec::with_capacity(bytes.len()),
            bytes,
        }
    }

    /// A sentence of text `range` was written from sample `first`.
    pub fn sentence(&mut self, range: std::ops::Range<usize>, first: u64) {
        while self.starts.len() < self.bytes.len() && self.bytes[self.starts.len()] < range.end {
            self.starts.push(first);
        }
    }

    /// Each chapter's first sample; chapters after the last sentence start at `total`.
    pub fn finish(mut self, total: u64) -> Vec<u64> {
        self.starts.resize(self.bytes.len(), total);
        self.starts
    }
}

/// Chapter `i`'s start and end in samples: it ends where the next begins, the last at `total`.
pub(crate) fn chapter_span(starts: &[u64], i: usize, total: u64) -> (u64, u64) {
    let start = starts.get(i).copied().unwrap_or(total).min(total);
    let end = starts
        .get(i + 1)
        .copied()
        .unwrap_or(total)
        .clamp(start, total);
    (start, end)
}

/// One line of at most 200 characters: what a chapter title may hold in any format.
pub(crate) fn clean_title(title: &str) -> String {
    let one_line = title.split_whitespace().collect::<Vec<_>>().join(" ");
    one_line.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_picks_the_format() {
        let f = |p: &str| ExportFormat::from_path(Path::new(p), WavFormat::Pcm16);
        assert_eq!(f("a.WAV"), Ok(ExportFormat::Wav(WavFormat::Pcm16)));
        assert_eq!(f("book.flac"), Ok(ExportFormat::Flac));
        assert_eq!(f("book.opus"), Ok(ExportFormat::Opus));
        assert_eq!(f("book.mp3"), Ok(ExportFormat::Mp3));
        assert!(f("book.aac").unwrap_err().contains(".opus"));
        assert_eq!(f("/dev/null"), Ok(ExportFormat::Wav(WavFormat::Pcm16)));
    }

    #[test]
    fn a_chapter_starts_with_the_sentence_that_reaches_it() {
        let mut c = ChapterClock::new(vec![0, 10, 12, 40, 90]);
        c.sentence(0..8, 0); // chapter 1
        c.sentence(8..20, 500); // chapters 2 and 3 start inside it
        c.sentence(20..60, 900); // chapter 4
        assert_eq!(c.finish(1200), [0, 500, 500, 900, 1200]);
    }

    #[test]
    fn chapters_end_where_the_next_begins() {
        assert_eq!(chapter_span(&[0, 100, 250], 1, 400), (100, 250));
        assert_eq!(chapter_span(&[0, 100, 250], 2, 400), (250, 400));
        assert_eq!(chapter_span(&[0, 500], 1, 400), (400, 400));
        assert_eq!(clean_title("  Part\n one\t "), "Part one");
    }
}
