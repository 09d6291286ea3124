//! Subtitles beside an exported file (`hark speak --out x.opus --subtitles x.vtt`): WebVTT or
//! SubRip cues from the word timing, a sentence at a time; a sentence of more than
//! [`WORDS_PER_CUE`] words is cut into cues of near-equal length. Times are the words' samples
//! to the nearest millisecond. Written as they come, to a partial file like the audio.

use super::ExportError;
use super::tags::clock;
use crate::partial::Partial;
use hark_engine::WordTiming;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The most words one cue shows.
pub const WORDS_PER_CUE: usize = 7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubtitleFormat {
    /// WebVTT (`.vtt`).
    Vtt,
    /// SubRip (`.srt`).
    Srt,
}

impl SubtitleFormat {
    pub fn from_path(path: &Path) -> Result<Self, String> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("vtt") => Ok(Self::Vtt),
            Some("srt") => Ok(Self::Srt),
            _ => Err(format!(
                "cannot tell the subtitle format of {}: name it .vtt or .srt",
                path.display()
            )),
        }
    }
}

pub struct SubtitleWriter {
    out: BufWriter<File>,
    partial: Partial,
    target: PathBuf,
    format: SubtitleFormat,
    rate: u32,
    cues: usize,
}

impl SubtitleWriter {
    /// Starts `path`, for audio at `rate`.
    pub fn create(path: &Path, format: SubtitleFormat, rate: u32) -> Result<Self, ExportError> {
        let err = |e: std::io::Error| ExportError::new(path, e);
        let (partial, file) = Partial::create(path).map_err(err)?;
        let mut out = BufWriter::new(file);
        if format == SubtitleFormat::Vtt {
            out.write_all(b"WEBVTT\n\n").map_err(err)?;
        }
        Ok(Self {
            out,
            partial,
            target: path.to_path_buf(),
            format,
            rate,
            cues: 0,
        })
    }

    /// Adds one sentence's cues: `words` in order, their ranges bytes of `text`.
    pub fn add(&mut self, text: &str, words: &[WordTiming]) -> Result<(), ExportError> {
        for group in cue_groups(words) {
            let (first, last) = (&group[0], &group[group.len() - 1]);
            let Some(shown) = text.get(first.range.start..last.range.end) else {
                continue;
            };
            let shown = shown.split_whitespace().collect::<Vec<_>>().join(" ");
            if shown.is_empty() {
                continue;
            }
            self.cues += 1;
            let (sep, shown) = match self.format {
                SubtitleFormat::Vtt => ('.', escape_vtt(&shown)),
                SubtitleFormat::Srt => (',', shown),
            };
            let (start, end) = (
                first.samples.start,
                last.samples.end.max(first.samples.start),
            );
            let mut cue = String::new();
            if self.format == SubtitleFormat::Srt {
                cue.push_str(&format!("{}\n", self.cues));
            }
            cue.push_str(&format!(
                "{} --> {}\n{shown}\n\n",
                clock(start, self.rate, sep),
                clock(end, self.rate, sep)
            ));
            self.out
                .write_all(cue.as_bytes())
                .map_err(|e| ExportError::new(&self.target, e))?;
        }
        Ok(())
    }

    /// Completes the file and puts it in place.
    pub fn finish(self) -> Result<(), ExportError> {
        let Self {
            out,
            partial,
            target,
            ..
        } = self;
        out.into_inner()
            .map_err(|e| ExportError::new(&target, e.error()))?;
        partial.commit().map_err(|e| ExportError::new(&target, e))
    }
}

/// `words` cut into the fewest groups of at most [`WORDS_PER_CUE`], of near-equal size.
fn cue_groups(words: &[WordTiming]) -> Vec<&[WordTiming]> {
    if words.is_empty() {
        return Vec::new();
    }
    let groups = words.len().div_ceil(WORDS_PER_CUE);
    let (base, extra) = (words.len() / groups, words.len() % groups);
    let mut out = Vec::with_capacity(groups);
    let mut at = 0;
    for g in 0..groups {
        let n = base + usize::from(g < extra);
        out.push(&words[at..at + n]);
        at += n;
    }
    out
}

/// WebVTT's cue text may not hold `<`, `&` or `-->` unescaped.
fn escape_vtt(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(range: std::ops::Range<usize>, samples: std::ops::Range<u64>) -> WordTiming {
        WordTiming { range, samples }
    }

    #[test]
    fn long_sentences_are_cut_into_even_cues() {
        let w: Vec<WordTiming> = (0..16).map(|i| word(i..i + 1, 0..1)).collect();
        let sizes: Vec<usize> = cue_groups(&w).iter().map(|g| g.len()).collect();
        assert_eq!(sizes, [6, 5, 5]);
        assert_eq!(cue_groups(&w[..7]).len(), 1);
        assert!(cue_groups(&[]).is_empty());
    }

    #[test]
    fn cues_are_written_in_each_format() {
        let dir = tempfile::tempdir().unwrap();
        let text = "Hi <there>\n & you.";
        let words = [
            word(0..2, 0..11025),
            word(3..10, 11025..22050),
            word(13..18, 22050..33100),
        ];
        for (name, want) in [
            (
                "x.vtt",
                "WEBVTT\n\n00:00:00.000 --> 00:00:01.501\nHi &lt;there&gt; &amp; you.\n\n",
            ),
            (
                "x.srt",
                "1\n00:00:00,000 --> 00:00:01,501\nHi <there> & you.\n\n",
            ),
        ] {
            let path = dir.path().join(name);
            let f = SubtitleFormat::from_path(&path).unwrap();
            let mut s = SubtitleWriter::create(&path, f, 22050).unwrap();
            s.add(text, &words).unwrap();
            assert!(!path.exists(), "not before it is complete");
            s.finish().unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), want);
        }
        assert!(SubtitleFormat::from_path(Path::new("x.txt")).is_err());
    }
}
