//! `hark voice import|list|install`.

use clap::Subcommand;
use hark_catalogue::Catalogue;
use hark_voice::WeightDtype;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;

/// Overrides the catalogue's address, as `--catalogue` does.
const CATALOGUE_VAR: &str = "HARK_VOICE_CATALOGUE";

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
    /// List installed voices, or with --available the voices of the catalogue.
    List {
        /// The voices that can be installed (`hark voice install NAME`).
        #[arg(long)]
        available: bool,
        /// The catalogue: a voices.json URL or file (default: $HARK_VOICE_CATALOGUE, else
        /// Piper's own).
        #[arg(long, value_name = "URL", requires = "available")]
        catalogue: Option<String>,
    },
    /// Download a voice from the catalogue (checked, resumed if cut off) and install it.
    Install {
        name: String,
        #[arg(long, value_name = "URL")]
        catalogue: Option<String>,
        #[arg(long, default_value = "f32")]
        dtype: WeightDtype,
    },
}

fn catalogue(flag: Option<String>) -> anyhow::Result<Catalogue> {
    let source = flag
        .or_else(|| std::env::var(CATALOGUE_VAR).ok())
        .unwrap_or_else(|| hark_catalogue::DEFAULT_URL.to_string());
    Ok(Catalogue::fetch(&source)?)
}

/// A download's progress on stderr: a bar on a terminal, else a line every tenth.
enum Bytes {
    Bar(ProgressBar),
    Lines {
        name: String,
        total: u64,
        tenth: u64,
    },
}

impl Bytes {
    fn new(name: &str) -> Self {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec}, ETA {eta}",
            ) {
                bar.set_style(style);
            }
            bar.set_message(name.to_string());
            Self::Bar(bar)
        } else {
            Self::Lines {
                name: name.to_string(),
                total: 1,
                tenth: 0,
            }
        }
    }
}

impl hark_catalogue::Progress for Bytes {
    fn begin(&mut self, n: u64) {
        match self {
            Self::Bar(bar) => bar.set_length(n),
            Self::Lines { total, .. } => *total = n.max(1),
        }
    }

    fn advance(&mut self, done: u64) {
        match self {
            Self::Bar(bar) => bar.set_position(done),
            Self::Lines { name, total, tenth } => {
                let now = done.min(*total) * 10 / *total;
                if now > *tenth {
                    *tenth = now;
                    eprintln!(
                        "hark: {name}: {}% ({:.1} of {:.1} MB)",
                        now * 10,
                        done as f64 / 1e6,
                        *total as f64 / 1e6
                    );
                }
            }
        }
    }
}

/// "1 speaker", or "3 speakers: ada, brian, chloe" (the first few names; `--speaker` takes a
/// name or an id).
fn speakers(names: &[String]) -> String {
    const SHOWN: usize = 8;
    match names.len() {
        0 | 1 => "1 speaker".into(),
        n => {
            let mut s = format!("{n} speakers: {}", names[..n.min(SHOWN)].join(", "));
            if n > SHOWN {
                s.push_str(", …");
            }
            s
        }
    }
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
        VoiceCommand::List {
            available: true,
            catalogue: source,
        } => {
            let c = catalogue(source)?;
            let installed: Vec<String> =
                hark_voice::list(dir).into_iter().map(|v| v.name).collect();
            println!("{} voices in {}", c.voices.len(), c.source);
            for v in &c.voices {
                let speakers = match v.speakers {
                    1 => String::new(),
                    n => format!("\t{n} speakers"),
                };
                let mark = if installed.contains(&v.name) {
                    "\tinstalled"
                } else {
                    ""
                };
                println!(
                    "{}\t{}\t{}\t{:.1} MB{speakers}{mark}",
                    v.name,
                    v.language_name,
                    v.quality,
                    v.download_bytes() as f64 / 1e6
                );
            }
        }
        VoiceCommand::Install {
            name,
            catalogue: source,
            dtype,
        } => {
            let c = catalogue(source)?;
            let mut progress = Bytes::new(&name);
            let out = hark_catalogue::install(&c, &name, dir, dtype, &mut progress);
            if let Bytes::Bar(bar) = progress {
                bar.finish_and_clear();
            }
            println!("installed {}", out?.display());
        }
        VoiceCommand::List { .. } => {
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
                    "{}\t{} Hz\t{}\t{mb:.1} MB\t{}\t{}",
                    v.name,
                    v.sample_rate,
                    v.dtype,
                    v.dir.display(),
                    speakers(&v.speakers)
                );
            }
        }
    }
    Ok(())
}
