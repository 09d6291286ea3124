//! `hark voice import|list`.

use clap::Subcommand;
use hark_voice::WeightDtype;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum VoiceCommand {
    /// Convert a Piper voice (.onnx + .onnx.json) into Hark's format and install it.
    Import {
        onnx: PathBuf,
        /// The voice's JSON config (default: ONNX path + ".json").
        json: Option<PathBuf>,
        /// Weight storage type.
        #[arg(long, default_value = "f32")]
        dtype: WeightDtype,
        /// Install under this name (default: the ONNX file's stem).
        #[arg(long)]
        name: Option<String>,
    },
    /// List installed voices.
    List,
}

pub fn run(cmd: VoiceCommand) -> anyhow::Result<()> {
    let dir = &crate::overrides().voices_dir;
    match cmd {
        VoiceCommand::Import {
            onnx,
            json,
            dtype,
            name,
        } => {
            let out =
                hark_voice::import_piper(&onnx, json.as_deref(), dir, name.as_deref(), dtype)?;
            println!("installed {}", out.display());
        }
        VoiceCommand::List => {
            let voices = hark_voice::list(dir);
            if voices.is_empty() {
                println!(
                    "no voices in {} (install one: hark voice import VOICE.onnx)",
                    dir.display()
                );
            }
            for v in voices {
                let mb = v.size_bytes as f64 / 1e6;
                println!(
                    "{}\t{} Hz\t{}\t{mb:.1} MB\t{}",
                    v.name,
                    v.sample_rate,
                    v.dtype,
                    v.dir.display()
                );
            }
        }
    }
    Ok(())
}
