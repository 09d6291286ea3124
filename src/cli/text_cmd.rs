//! `hark text`: what the front-end makes of a text.

use crate::text;
use crate::voice::Voice;
use clap::Args;

#[derive(Args)]
pub struct TextArgs {
    /// Print the IPA phonemes and the phoneme ids of each sentence.
    #[arg(long)]
    phonemes: bool,
    /// Voice whose espeak voice and phoneme map to use.
    #[arg(long)]
    voice: Option<String>,
    /// The text, or `-` to read stdin.
    text: Option<String>,
}

pub fn run(args: TextArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.phonemes, "say what to show: --phonemes");
    let input = super::read_text_arg(args.text)?;
    let voice = Voice::load_config(args.voice.as_deref())?;
    let sentences = text::text_to_ids(&input, &voice.espeak_voice, &voice.phoneme_id_map)?;
    for s in sentences {
        println!("{}", s.phonemes);
        let ids: Vec<String> = s.ids.iter().map(i64::to_string).collect();
        println!("{}", ids.join(","));
    }
    Ok(())
}
