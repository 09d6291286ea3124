//! `hark speak`: text (or ids) → audio device or WAV file.
//! Playing goes through the streaming engine (sound starts after the first chunk); `--out`
//! through the blocking synthesiser on the same pipeline, each sentence decoded whole: the
//! reference output.

use super::voice_args::VoiceArgs;
use anyhow::Context;
use clap::Args;
use hark_audio::{WavFormat, WavSink};
use hark_engine::{Engine, EngineError, Event, Input, Mode, Synthesizer};
use hark_text::segment::{SegmentOptions, Segmenter};
use hark_voice::Voice;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub struct SpeakArgs {
    #[command(flatten)]
    voice: VoiceArgs,
    /// Write a WAV file instead of playing.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Sample format of the WAV file.
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

/// Segment budget for file output: long enough for any real sentence (about 160 words), and
/// under `hark_text::MAX_SENTENCE_PHONEMES` for English words, so that a longer one is cut by
/// the segmenter, at a clause or before a conjunction, rather than by the phoneme limit.
const FILE_SEGMENT_CHARS: usize = 900;

/// Time for the device's own buffer to play out after the last sample left the callback: its
/// reported latency plus a margin, within bounds.
pub(super) fn device_tail(engine: &Engine) -> Duration {
    (engine.output_latency() + Duration::from_millis(200))
        .clamp(Duration::from_millis(250), Duration::from_secs(3))
}

pub fn run(args: SpeakArgs) -> anyhow::Result<()> {
    let voice = Voice::load_from(&crate::overrides().voices_dir, args.voice.voice.as_deref())?;
    let text = match &args.ids {
        Some(_) => None,
        None => Some(super::read_text_arg(args.text.clone())?),
    };
    if let Some(t) = &text {
        check_text(t, args.any_text, !args.voice.raw)?;
    }
    let input = match (&args.ids, &text) {
        (Some(ids), _) => Input::Ids(ids),
        (None, Some(t)) => Input::Text(t),
        (None, None) => unreachable!("text is read when ids are absent"),
    };
    match &args.out {
        Some(path) => write_file(&args, voice, input, path),
        None => play(&args, voice, input),
    }
}

fn write_file(args: &SpeakArgs, voice: Voice, input: Input, path: &Path) -> anyhow::Result<()> {
    let mut synth = Synthesizer::with_engine(
        voice,
        args.voice.backend,
        args.voice.engine,
        &crate::overrides().gpu,
    )?;
    args.voice.apply(&mut synth.scales)?;
    synth.seed = args.voice.seed;
    (synth.speed, synth.pitch) = args.voice.speed_pitch()?;
    // A file has no onset to protect: keep whole sentences, so prosody (and the samples) are
    // exactly what Piper makes of each sentence.
    synth.segmenter = Segmenter {
        normalize: !args.voice.raw,
        options: SegmentOptions {
            normalize: args.voice.norm.options()?,
            max_chars: FILE_SEGMENT_CHARS,
            first_max_chars: FILE_SEGMENT_CHARS,
        },
    };
    // A partial file is removed on an error (the sink is dropped) and on Ctrl-C or a kill.
    hark_audio::remove_partial_on_signals();
    let mut wav = WavSink::create(path, synth.voice().config.sample_rate, args.format)?;
    let mut words = Vec::new();
    synth.speak_timed(
        input,
        |s| wav.write(s).map_err(|e| e.to_string()),
        |sentence| words.extend(sentence.words),
    )?;
    wav.finish()?;
    if let (Some(out), Input::Text(text)) = (&args.timings, input) {
        let json = serde_json::to_string_pretty(&word_timings(text, &words))?;
        std::fs::write(out, json + "\n")
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    Ok(())
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
    let (engine, mut events) = Engine::start(cfg).context("cannot play audio")?;
    let id = engine.speak_input(input, Mode::Queue);
    let (mut started, mut failure) = (false, None);
    // The engine always ends an utterance with `Finished`, and the channel closes if it dies.
    while let Some(ev) = events.blocking_recv() {
        match ev {
            Event::Started { .. } => started = true,
            Event::Error { message, .. } => {
                eprintln!("hark: warning: {message}");
                failure = Some(message);
            }
            Event::Finished { id: done, stopped } if done == id => {
                if stopped {
                    anyhow::bail!(failure.unwrap_or_else(|| "speech was stopped".into()));
                }
                break;
            }
            _ => {}
        }
    }
    if !started {
        return Err(failure
            .map(anyhow::Error::msg)
            .unwrap_or_else(|| EngineError::NothingSpeakable.into()));
    }
    if !args.discard {
        std::thread::sleep(device_tail(&engine));
    }
    drop(engine);
    Ok(())
}
