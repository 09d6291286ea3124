//! `hark text`: what the front-end makes of a text.

use clap::Args;
use hark_text::normalize::{DateOrder, EmojiMode, NormalizeOptions, PunctuationVerbosity, UrlMode};
use hark_text::segment::{SegmentOptions, Segmenter};
use hark_voice::Voice;

#[derive(Args)]
pub struct TextArgs {
    /// Print the IPA phonemes and the phoneme ids of each sentence.
    #[arg(long)]
    phonemes: bool,
    /// Print the normalised text (what is read aloud).
    #[arg(long, conflicts_with = "phonemes")]
    normalize: bool,
    /// Print the segments the engine speaks, with their byte ranges in the input.
    #[arg(long, conflicts_with_all = ["phonemes", "normalize"])]
    segments: bool,
    #[command(flatten)]
    norm: NormArgs,
    /// Voice whose espeak voice and phoneme map to use.
    #[arg(long)]
    voice: Option<String>,
    /// The text, or `-` to read stdin.
    text: Option<String>,
}

/// Normaliser settings on the command line (also used by `hark speak`).
#[derive(Args, Clone)]
pub struct NormArgs {
    /// How much punctuation is spoken.
    #[arg(long, value_parser = crate::names::by_name(&PunctuationVerbosity::ALL), default_value = "some")]
    pub verbosity: PunctuationVerbosity,
    /// How web and e-mail addresses are read.
    #[arg(long, value_parser = crate::names::by_name(&UrlMode::ALL), default_value = "compact")]
    pub urls: UrlMode,
    /// Emoji by name, or skipped.
    #[arg(long, value_parser = crate::names::by_name(&EmojiMode::ALL), default_value = "name")]
    pub emoji: EmojiMode,
    /// Order of ambiguous numeric dates (03/04/2026).
    #[arg(long, value_parser = crate::names::by_name(&DateOrder::ALL), default_value = "day-month")]
    pub date_order: DateOrder,
    /// A JSON file with the pronunciation dictionary: [{"pattern": …, "replacement": …}].
    #[arg(long)]
    pub dictionary: Option<std::path::PathBuf>,
}

impl NormArgs {
    pub fn options(&self) -> anyhow::Result<NormalizeOptions> {
        let dictionary = match &self.dictionary {
            Some(p) => {
                let bytes = std::fs::read(p)
                    .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?;
                serde_json::from_slice(&bytes)
                    .map_err(|e| anyhow::anyhow!("{}: not a dictionary: {e}", p.display()))?
            }
            None => Vec::new(),
        };
        Ok(NormalizeOptions {
            verbosity: self.verbosity,
            urls: self.urls,
            emoji: self.emoji,
            date_order: self.date_order,
            dictionary,
        })
    }
}

pub fn run(args: TextArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.phonemes || args.normalize || args.segments,
        "say what to show: --phonemes, --normalize or --segments"
    );
    let input = super::read_text_arg(args.text)?;
    if args.normalize {
        println!(
            "{}",
            hark_text::normalize::normalize(&input, &args.norm.options()?).text
        );
        return Ok(());
    }
    if args.segments {
        let segmenter = Segmenter {
            normalize: true,
            options: SegmentOptions {
                normalize: args.norm.options()?,
                ..SegmentOptions::default()
            },
        };
        for s in segmenter.iter(&input, true) {
            println!("{}..{}\t{}", s.range.start, s.range.end, s.text);
        }
        return Ok(());
    }
    let voice = Voice::load_config(&crate::overrides().voices_dir, args.voice.as_deref())?;
    let sentences = hark_text::text_to_ids(&input, &voice.espeak_voice, &voice.phoneme_id_map)?;
    for s in sentences {
        println!("{}", s.phonemes);
        let ids: Vec<String> = s.ids.iter().map(i64::to_string).collect();
        println!("{}", ids.join(","));
    }
    Ok(())
}
