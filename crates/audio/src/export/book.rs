//! A whole text into one audio file: the blocking synthesiser into the encoder, a sentence at
//! a time (memory stays flat for a book), with chapters from the text's headings or sections
//! and subtitles beside it. `hark speak --out` and the app's Export… both run this.

use super::subtitles::{SubtitleFormat, SubtitleWriter};
use super::{ChapterClock, ExportError, ExportFormat};
use hark_engine::{EngineError, Input, SentenceTiming, Synthesizer, WordTiming};
use hark_text::chapters::{Chapter, chapters, heading_pieces, unmark_headings};
use hark_text::normalize::NormalizeOptions;
use hark_text::segment::{SegmentOptions, Segmenter};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Segment budget for a file: long enough for any real sentence (about 160 words), and under
/// `hark_text::MAX_SENTENCE_PHONEMES` for English words, so that a longer one is cut by the
/// segmenter, at a clause or before a conjunction, rather than by the phoneme limit.
pub const FILE_SEGMENT_CHARS: usize = 900;

/// The segmenter for a file: a file has no onset to protect, so whole sentences keep prosody
/// (and the samples) exactly what Piper makes of each.
pub fn file_segmenter(normalize: bool, options: NormalizeOptions) -> Segmenter {
    Segmenter {
        normalize,
        options: SegmentOptions {
            normalize: options,
            max_chars: FILE_SEGMENT_CHARS,
            first_max_chars: FILE_SEGMENT_CHARS,
        },
    }
}

/// What to write and where.
pub struct Book<'a> {
    pub path: &'a Path,
    pub format: ExportFormat,
    /// A `.vtt` or `.srt` file of the words' timing, written beside the audio.
    pub subtitles: Option<&'a Path>,
    /// Keep every word's timing in [`Exported::words`] (for `--timings`).
    pub keep_words: bool,
    /// Set (from any thread) to stop at the next sentence; the partial file is removed.
    pub cancel: Option<&'a AtomicBool>,
}

/// How far an export has come, after each sentence.
#[derive(Clone, Copy, Debug)]
pub struct BookProgress {
    /// Bytes of the text read so far, of `text_total`.
    pub text_done: usize,
    pub text_total: usize,
    /// Seconds of audio written so far.
    pub audio_s: f64,
}

impl BookProgress {
    /// The share of the text read, 0…1.
    pub fn fraction(&self) -> f64 {
        (self.text_done as f64 / self.text_total.max(1) as f64).clamp(0.0, 1.0)
    }
}

/// What a finished export wrote.
pub struct Exported {
    pub samples: u64,
    /// Every word's timing, in order, when [`Book::keep_words`] asked.
    pub words: Vec<WordTiming>,
    /// The chapters found in the text and each one's first sample.
    pub chapters: Vec<(Chapter, u64)>,
}

#[derive(Debug, thiserror::Error)]
pub enum BookError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Export(#[from] ExportError),
    #[error("{0}")]
    Subtitles(String),
    #[error("the export was cancelled; no file was written")]
    Cancelled,
}

/// Speaks `input` into `book.path`, calling `progress` after each sentence.
pub fn export(
    synth: &mut Synthesizer,
    input: Input<'_>,
    book: &Book<'_>,
    mut progress: impl FnMut(BookProgress),
) -> Result<Exported, BookError> {
    let rate = synth.voice().config.sample_rate;
    let text = match input {
        Input::Text(t) => Some(t),
        _ => None,
    };
    let found: Vec<Chapter> = text.map(chapters).unwrap_or_default();
    let titles: Vec<String> = found.iter().map(|c| c.title.clone()).collect();
    // Found in the text as written: the heading marks are blanked for reading.
    let pieces = text.map(heading_pieces).unwrap_or_default();
    let unmarked = text.map(unmark_headings);
    let subtitles = match book.subtitles {
        Some(p) => {
            let f = SubtitleFormat::from_path(p).map_err(BookError::Subtitles)?;
            Some(SubtitleWriter::create(p, f, rate)?)
        }
        None => None,
    };
    let mut encoder = super::create(book.path, book.format, rate, &titles)?;
    let mut clock = ChapterClock::new(found.iter().map(|c| c.start).collect());
    let text_total = text.map_or(0, str::len);
    let (mut words, mut samples) = (Vec::new(), 0u64);
    let (mut subtitles, mut failed) = (subtitles, None);
    let mut on_sentence = |sentence: SentenceTiming| {
        clock.sentence(sentence.range.clone(), sentence.samples.start);
        progress(BookProgress {
            text_done: sentence.range.end,
            text_total,
            audio_s: sentence.samples.end as f64 / rate as f64,
        });
        if let (Some(subs), Some(t), true) = (subtitles.as_mut(), text, failed.is_none()) {
            failed = subs.add(t, &sentence.words).err();
        }
        if book.keep_words {
            words.extend(sentence.words);
        }
    };
    let cancelled = || book.cancel.is_some_and(|c| c.load(Ordering::Relaxed));
    let mut sink = |s: &[f32]| {
        if cancelled() {
            return Err("cancelled".to_string());
        }
        samples += s.len() as u64;
        encoder.write(s).map_err(|e| e.to_string())
    };
    let spoken = match &unmarked {
        // Each heading read as a sentence of its own: one call per piece, its sentences and
        // samples placed after the pieces before it.
        Some(t) if !found.is_empty() => {
            let (seed, mut sentences, mut written) = (synth.seed, 0u64, 0u64);
            let mut result = Ok(());
            for piece in pieces {
                if t[piece.clone()].trim().is_empty() {
                    continue;
                }
                synth.seed = seed.wrapping_add(sentences);
                let report = synth.speak_timed(Input::Text(&t[piece.clone()]), &mut sink, |s| {
                    on_sentence(shifted(s, piece.start, written))
                });
                match report {
                    Ok(r) => {
                        sentences += r.sentences as u64;
                        written += r.samples as u64;
                    }
                    Err(EngineError::NothingSpeakable) => {}
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
            synth.seed = seed;
            result.and(match sentences {
                0 => Err(EngineError::NothingSpeakable),
                _ => Ok(()),
            })
        }
        _ => synth
            .speak_timed(input, &mut sink, &mut on_sentence)
            .map(drop),
    };
    // The encoder, dropped unfinished on any error, removes its partial file.
    match spoken {
        Err(_) if cancelled() => return Err(BookError::Cancelled),
        Err(e) => return Err(e.into()),
        Ok(()) => {}
    }
    if let Some(e) = failed {
        return Err(e.into());
    }
    let starts = clock.finish(samples);
    encoder.finish(&starts)?;
    if let Some(subs) = subtitles {
        subs.finish()?;
    }
    Ok(Exported {
        samples,
        words,
        chapters: found.into_iter().zip(starts).collect(),
    })
}

/// A sentence of a piece starting at byte `at` of the text and sample `from` of the file, as
/// placed in the whole.
fn shifted(mut s: SentenceTiming, at: usize, from: u64) -> SentenceTiming {
    let shift = |r: &mut std::ops::Range<usize>| *r = r.start + at..r.end + at;
    shift(&mut s.range);
    s.samples = s.samples.start + from..s.samples.end + from;
    for w in &mut s.words {
        shift(&mut w.range);
        w.samples = w.samples.start + from..w.samples.end + from;
    }
    s
}
