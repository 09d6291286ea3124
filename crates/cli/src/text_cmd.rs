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
    /// Voice whose espeak voice and phoneme map to use (and whose locale sets the date order).
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
    /// Order of ambiguous numeric dates (03/04/2026). Default: the voice's (month-day for US
    /// English, day-month for most others).
    #[arg(long, value_parser = crate::names::by_name(&DateOrder::ALL))]
    pub date_order: Option<DateOrder>,
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
            // The voice's, filled in where the voice is known.
            locale: String::new(),
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
    if args.normalize || args.segments {
        // Read as the voice would (its locale sets the date order): the named voice, else
        // the default one if a voice is installed.
        let mut normalize = args.norm.options()?;
        let dir = &crate::overrides().voices_dir;
        let voice = match args.voice.as_deref() {
            Some(name) => Some(Voice::load_config(dir, Some(name))?),
            None => Voice::load_config(dir, None).ok(),
        };
        if let Some(v) = voice {
            normalize.default_voice_locale(&v.espeak_voice, &v.name);
        }
        if args.normalize {
            // The rules are English: a voice of another language reads the text as written.
            if normalize.english_rules() {
                println!(
                    "{}",
                    hark_text::normalize::normalize(&input, &normalize).text
                );
            } else {
                println!("{input}");
            }
            return Ok(());
        }
        let segmenter = Segmenter {
            normalize: true,
            options: SegmentOptions {
                normalize,
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
