//! `hark speak`: text (or ids) → audio device or an audio file (`export.rs`).
//! Playing goes through the streaming engine (sound starts after the first chunk); `--out`
//! through the blocking synthesiser on the same pipeline, each sentence decoded whole: the
//! reference output.

mod export;
mod keys;

use super::voice_args::VoiceArgs;
use anyhow::Context;
use clap::Args;
use hark_audio::export::book::file_segmenter;
use hark_audio::{ExportFormat, WavFormat};
use hark_engine::{Engine, EngineError, Event, Input, Mode, Synthesizer};
use hark_voice::Voice;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[derive(Args)]
pub struct SpeakArgs {
    #[command(flatten)]
    voice: VoiceArgs,
    /// Write an audio file instead of playing: .wav, .flac, .opus (Ogg Opus) or .mp3, by its
    /// extension. Chapters come from the text's markdown headings, or else its blank-line
    /// sections, as chapter marks (FLAC and Opus: CHAPTERnnn tags; MP3: ID3v2 CHAP frames).
    #[arg(long)]
    out: Option<PathBuf>,
    /// With --out: subtitles from the word timing, .vtt (WebVTT) or .srt (SubRip), a cue per
    /// sentence or per 7 words.
    #[arg(long, requires = "out", conflicts_with_all = ["ids", "ssml"])]
    subtitles: Option<PathBuf>,
    /// With --out: also write the chapters as a JSON list of {"title", "start_char",
    /// "start_sample"}.
    #[arg(long, requires = "out", conflicts_with_all = ["ids", "ssml"])]
    chapters: Option<PathBuf>,
    /// With --out: show progress and an ETA on stderr even when it is not a terminal (on a
    /// terminal it is always shown).
    #[arg(long, requires = "out")]
    progress: bool,
    /// Sample format of a WAV file.
    #[arg(long, value_parser = crate::names::by_name(&WavFormat::ALL), default_value = "pcm16", requires = "out")]
    format: WavFormat,
    /// With --out: also write where each word is, as a JSON list of {"text", "start_char",
    /// "end_char", "start_sample", "end_sample"} (characters are Unicode scalar values of the
    /// input text, end exclusive; samples of the WAV file, end exclusive).
    #[arg(long, requires = "out", conflicts_with = "ids")]
    timings: Option<PathBuf>,
    /// Comma-separated phoneme ids; bypasses the text front-end.
    #[arg(long, value_delimiter = ',', conflicts_with = "text")]
    ids: Option<Vec<i64>>,
    /// The text is an SSML document (speak, s, p, mark, break, prosody, say-as, sub,
    /// emphasis, phoneme with IPA); marks are printed as they are heard.
    #[arg(long, conflicts_with = "ids")]
    ssml: bool,
    /// Frames per engine step when playing (default: adaptive).
    #[arg(long, conflicts_with = "out")]
    steps: Option<usize>,
    /// Read the text even when it is mostly not words (binary data, random characters).
    #[arg(long)]
    any_text: bool,
    /// Speak through the streaming engine as fast as it goes, and drop the audio: no device
    /// (tests and measurements of the playing path).
    #[arg(long, hide = true, conflicts_with = "out")]
    discard: bool,
    /// The text to speak, or `-` to read stdin.
    text: Option<String>,
}

/// Time for the device's own buffer to play out after the last sample left the callback: its
/// reported latency plus a margin, within bounds.
pub(super) fn device_tail(engine: &Engine) -> Duration {
    (engine.output_latency() + Duration::from_millis(200))
        .clamp(Duration::from_millis(250), Duration::from_secs(3))
}

pub fn run(args: SpeakArgs) -> anyhow::Result<()> {
    let voice = args.voice.load()?;
    let text = match &args.ids {
        Some(_) => None,
        None => Some(super::read_text_arg(args.text.clone())?),
    };
    let doc = match (&text, args.ssml) {
        (Some(t), true) => Some(hark_text::ssml::parse(t).context("the text is not valid SSML")?),
        _ => None,
    };
    // What will be read: a document's text without its tags.
    match (&doc, &text) {
        (Some(d), _) => check_text(&d.text(), args.any_text, !args.voice.raw)?,
        (None, Some(t)) => check_text(t, args.any_text, !args.voice.raw)?,
        (None, None) => {}
    }
    let input = match (&args.ids, &text, &doc) {
        (Some(ids), _, _) => Input::Ids(ids),
        (None, _, Some(d)) => {
            anyhow::ensure!(!d.is_empty(), EngineError::EmptyText);
            Input::Document(d)
        }
        (None, Some(t), None) => Input::Text(t),
        (None, None, _) => unreachable!("text is read when ids are absent"),
    };
    match &args.out {
        Some(path) => {
            // A name that says no format fails before the voice is loaded.
            let format = ExportFormat::from_path(path, args.format).map_err(anyhow::Error::msg)?;
            if !matches!(format, ExportFormat::Wav(_)) && args.format != WavFormat::Pcm16 {
                anyhow::bail!("--format is the sample format of a .wav file only");
            }
            let synth = file_synthesizer(&args, voice)?;
            export::write_file(&args, format, synth, input, path)
        }
        None => play(&args, voice, input),
    }
}

/// The blocking synthesiser as `--out` uses it: the voice and settings of `args`, whole
/// sentences.
fn file_synthesizer(args: &SpeakArgs, voice: Voice) -> anyhow::Result<Synthesizer> {
    let mut synth = Synthesizer::with_engine(
        voice,
        args.voice.backend,
        args.voice.engine,
        &crate::overrides().gpu,
    )?;
    args.voice.apply(&mut synth.scales)?;
    synth.seed = args.voice.seed;
    (synth.speed, synth.pitch) = args.voice.speed_pitch()?;
    synth.segmenter = file_segmenter(!args.voice.raw, args.voice.norm.options()?);
    Ok(synth)
}

/// One entry of `--timings`.
#[derive(serde::Serialize, Debug, PartialEq)]
pub(crate) struct WordEntry {
    pub text: String,
    pub start_char: usize,
    pub end_char: usize,
    pub start_sample: u64,
    pub end_sample: u64,
}

/// The words (byte ranges of `text`, in order) with character indices: Unicode scalar
/// values counted from the start of `text`.
pub(crate) fn word_timings(text: &str, words: &[hark_engine::WordTiming]) -> Vec<WordEntry> {
    // Words come in order, so one pass over the text counts the characters.
    let (mut byte, mut chars) = (0usize, 0usize);
    let mut char_at = |b: usize| {
        let mut b = b.min(text.len());
        while !text.is_char_boundary(b) {
            b -= 1;
        }
        if b < byte {
            (byte, chars) = (0, 0);
        }
        chars += text[byte..b].chars().count();
        byte = b;
        chars
    };
    words
        .iter()
        .map(|w| {
            let (start_char, end_char) = (char_at(w.range.start), char_at(w.range.end));
            WordEntry {
                text: text[w.range.clone()].to_string(),
                start_char,
                end_char,
                start_sample: w.samples.start,
                end_sample: w.samples.end,
            }
        })
        .collect()
}

/// Refuses text that is mostly not words unless `any_text`, and says which long runs are
/// announced rather than read (`normalized`: the normaliser announces them).
fn check_text(text: &str, any_text: bool, normalized: bool) -> anyhow::Result<()> {
    let v = hark_text::assess(text);
    if !v.mostly_words() && !any_text {
        anyhow::bail!(
            "the text is mostly not words (only {:.0}% of its {} characters are in words: \
             binary data or random characters?), so it is not read; use --any-text to read it \
             anyway",
            100.0 * v.word_share(),
            v.chars
        );
    }
    if normalized && v.long_runs > 0 {
        eprintln!(
            "hark: note: {} run(s) of more than {} characters without a space are not read \
             out; each is announced as \"N characters skipped\"",
            v.long_runs,
            hark_text::normalize::MAX_RUN_CHARS
        );
    }
    Ok(())
}

fn play(args: &SpeakArgs, voice: Voice, input: Input) -> anyhow::Result<()> {
    if matches!(input, Input::Text(t) if t.trim().is_empty()) {
        return Err(EngineError::EmptyText.into());
    }
    let mut cfg = args.voice.engine_config(voice, args.steps)?;
    // One utterance, at once: a warm-up would only come before it.
    cfg.warm_up = false;
    if args.discard {
        cfg.output = hark_engine::Output::None;
    }
    // Keys from the terminal, where there is one (after the engine, so a failure to start
    // leaves the terminal as it was).
    let (engine, mut events) = Engine::start(cfg).context("cannot play audio")?;
    let engine = Arc::new(engine);
    let keys = if args.discard {
        None
    } else {
        keys::Keys::open()
    };
    if let Some(k) = &keys {
        eprintln!("hark: {}", keys::HELP);
        k.drive(Arc::downgrade(&engine));
    }
    let by_user = || {
        keys.as_ref()
            .is_some_and(|k| k.stopped_by_user.load(Ordering::Acquire))
    };
    let id = engine.speak_input(input, Mode::Queue);
    let (mut started, mut failure) = (false, None);
    // The engine always ends an utterance with `Finished`, and the channel closes if it dies.
    while let Some(ev) = events.blocking_recv() {
        match ev {
            Event::Started { .. } => started = true,
            Event::Mark { name, .. } => println!("mark {name}"),
            Event::Error { message, .. } => {
                eprintln!("hark: warning: {message}");
                failure = Some(message);
            }
            Event::Finished { id: done, stopped } if done == id => {
                if stopped && !by_user() {
                    anyhow::bail!(failure.unwrap_or_else(|| "speech was stopped".into()));
                }
                break;
            }
            _ => {}
        }
    }
    if !started && !by_user() {
        return Err(failure
            .map(anyhow::Error::msg)
            .unwrap_or_else(|| EngineError::NothingSpeakable.into()));
    }
    if !args.discard && !by_user() {
        std::thread::sleep(device_tail(&engine));
    }
    drop(engine);
    drop(keys);
    Ok(())
}
