//! `hark speak`: text (or ids) → audio device or WAV file.

use crate::audio::{Player, WavFormat, WavSink};
use crate::engine::{BackendChoice, Synthesizer};
use crate::voice::Voice;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

/// Segment budget for file output: long enough for any real sentence.
const FILE_SEGMENT_CHARS: usize = 2000;

#[derive(Args)]
pub struct SpeakArgs {
    /// Voice name (in the voice folder) or path to a voice folder.
    #[arg(long)]
    voice: Option<String>,
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
    /// Speech duration multiplier: 2.0 is half as fast, 0.5 twice as fast.
    #[arg(long)]
    length_scale: Option<f32>,
    /// Prior noise; 0 makes the voice deterministic.
    #[arg(long)]
    noise_scale: Option<f32>,
    /// Duration noise; 0 makes the rhythm deterministic.
    #[arg(long)]
    noise_w: Option<f32>,
    /// Seed for the noise generator.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write a WAV file instead of playing.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Sample format of the WAV file.
    #[arg(long, value_enum, default_value = "pcm16", requires = "out")]
    format: WavFormat,
    /// Comma-separated phoneme ids; bypasses the text front-end.
    #[arg(long, value_delimiter = ',', conflicts_with = "text")]
    ids: Option<Vec<i64>>,
    /// Send the text to espeak as it is, without normalising it.
    #[arg(long)]
    raw: bool,
    #[command(flatten)]
    norm: super::text_cmd::NormArgs,
    /// The text to speak, or `-` to read stdin.
    text: Option<String>,
}

pub fn run(args: SpeakArgs) -> anyhow::Result<()> {
    let voice = Voice::load(args.voice.as_deref())?;
    let mut synth = Synthesizer::new(voice, args.backend)?;
    if let Some(x) = args.length_scale {
        anyhow::ensure!(
            x > 0.0 && x.is_finite(),
            "--length-scale must be a positive number"
        );
        synth.scales.length_scale = x;
    }
    if let Some(x) = args.noise_scale {
        anyhow::ensure!(x >= 0.0 && x.is_finite(), "--noise-scale must be 0 or more");
        synth.scales.noise_scale = x;
    }
    if let Some(x) = args.noise_w {
        anyhow::ensure!(x >= 0.0 && x.is_finite(), "--noise-w must be 0 or more");
        synth.scales.noise_w = x;
    }
    synth.seed = args.seed;
    synth.normalize = !args.raw;
    synth.segment.normalize = args.norm.options()?;
    if args.out.is_some() {
        // A file has no onset to protect: keep whole sentences, so prosody (and the samples)
        // are exactly what Piper makes of each sentence.
        synth.segment.max_chars = FILE_SEGMENT_CHARS;
        synth.segment.first_max_chars = FILE_SEGMENT_CHARS;
    }
    let rate = synth.voice.config.sample_rate;
    let text = match &args.ids {
        Some(_) => None,
        None => Some(super::read_text_arg(args.text.clone())?),
    };
    let speak = |sink: &mut dyn FnMut(&[f32]) -> Result<(), String>| match (&args.ids, &text) {
        (Some(ids), _) => synth.speak_ids(ids, sink),
        (None, Some(t)) => synth.speak_text(t, sink),
        (None, None) => unreachable!("text is read when ids are absent"),
    };
    match &args.out {
        Some(path) => {
            let mut wav = WavSink::create(path, rate, args.format)?;
            speak(&mut |s| wav.write(s).map_err(|e| e.to_string()))?;
            wav.finish()?;
        }
        None => {
            let mut player = Player::open(rate).context("cannot play audio")?;
            speak(&mut |s| player.write(s).map_err(|e| e.to_string()))?;
            player.finish()?;
        }
    }
    Ok(())
}
