//! `hark speak --out FILE`: `hark_audio::export::book` into the encoder the file's extension
//! names, with word timings and chapters as JSON beside it when asked, and progress on stderr.

use super::{SpeakArgs, word_timings};
use anyhow::Context;
use hark_audio::export::ExportFormat;
use hark_audio::export::book::{self, Book};
use hark_engine::{Input, Synthesizer};
use std::path::Path;

/// One entry of `--chapters`.
#[derive(serde::Serialize)]
struct ChapterEntry<'a> {
    title: &'a str,
    start_char: usize,
    start_sample: u64,
}

pub(super) fn write_file(
    args: &SpeakArgs,
    format: ExportFormat,
    mut synth: Synthesizer,
    input: Input,
    path: &Path,
) -> anyhow::Result<()> {
    let rate = synth.voice().config.sample_rate;
    let text = match input {
        Input::Text(t) => Some(t),
        _ => None,
    };
    let book = Book {
        path,
        format,
        subtitles: args.subtitles.as_deref(),
        keep_words: args.timings.is_some(),
        cancel: None,
    };
    // A partial file is removed on an error (the encoder is dropped) and on Ctrl-C or a kill.
    hark_audio::remove_partial_on_signals();
    let mut progress =
        crate::progress::Progress::new(text.map_or(0, |t| t.len()) as u64, args.progress);
    let done = book::export(&mut synth, input, &book, |p| {
        progress.update(p.text_done as u64, p.audio_s)
    })?;
    progress.finish(done.samples as f64 / rate as f64);
    if let (Some(out), Some(text)) = (&args.timings, text) {
        let json = serde_json::to_string_pretty(&word_timings(text, &done.words))?;
        std::fs::write(out, json + "\n")
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    if let (Some(out), Some(text)) = (&args.chapters, text) {
        let entries: Vec<ChapterEntry> = done
            .chapters
            .iter()
            .map(|(c, start_sample)| ChapterEntry {
                title: &c.title,
                start_char: text[..c.start].chars().count(),
                start_sample: *start_sample,
            })
            .collect();
        let json = serde_json::to_string_pretty(&entries)?;
        std::fs::write(out, json + "\n")
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    Ok(())
}
