//! `hark follow`: live and timed captions, four ways in.
//! - Lines (the default): each line of stdin, or of a growing file (`--file`), said in order.
//! - Revising captions (`--revising`): a captioner's JSON messages, each replacing the
//!   unfinished tail of the last; only stable words are said, each once ([`revising`]).
//! - Timed subtitles (`--subtitles FILE`): each cue said when its time comes, fitted to its
//!   slot, or the whole track rendered to a WAV (`--out`) ([`subtitles`]).
//! - A player (`--mpv SOCKET`): whatever subtitle mpv shows, in step with its clock.

mod cue_voice;
mod lines;
mod revising;
mod subtitles;

use super::voice_args::VoiceArgs;
use anyhow::Context;
use clap::Args;
use cue_voice::CueLog;
use hark_engine::{Engine, EngineConfig, Event, UtteranceId};
use hark_sources::subtitles::Overflow;
use hark_voice::Voice;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;

/// Where the audio goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AudioChoice {
    /// The default output device.
    Device,
    /// No sound card: a timer plays the device's callback in real time (tests, benchmarks).
    Simulated,
}

#[derive(Args)]
pub struct FollowArgs {
    #[command(flatten)]
    voice: VoiceArgs,
    /// Each new line interrupts the one being spoken (default: queue them).
    #[arg(long)]
    interrupt: bool,
    /// Follow this file as it grows (like `tail -f`) instead of reading stdin.
    #[arg(long)]
    file: Option<PathBuf>,
    /// With --file: speak the lines already in the file first.
    #[arg(long, requires = "file")]
    from_start: bool,
    /// Frames per engine step (default: adaptive).
    #[arg(long)]
    steps: Option<usize>,
    /// Print one JSON line per engine event on stdout (ids and ranges, never text).
    #[arg(long)]
    events: bool,
    /// Captions that revise themselves: each line is {"text": "…", "final": true|false}, and
    /// replaces the unfinished tail of the one before (docs/CAPTIONS.md).
    #[arg(long, conflicts_with_all = ["subtitles", "mpv"])]
    revising: bool,
    /// With --revising: take messages from captioners connecting to this Unix socket.
    #[arg(long, requires = "revising", conflicts_with = "file")]
    socket: Option<PathBuf>,
    /// Timed subtitles (WebVTT or SubRip): each cue said when its time comes.
    #[arg(long, conflicts_with_all = ["file", "mpv"])]
    subtitles: Option<PathBuf>,
    /// With --subtitles: write the whole track to this WAV file (each cue at its time), to mux
    /// with the video, instead of playing it.
    #[arg(long, requires = "subtitles")]
    out: Option<PathBuf>,
    /// With --subtitles: start at this time of the film (SECONDS, MM:SS or HH:MM:SS).
    #[arg(long, requires = "subtitles", value_parser = parse_time)]
    from: Option<std::time::Duration>,
    /// Follow mpv through its IPC socket (mpv --input-ipc-server=SOCKET): the subtitles it
    /// shows, in step with its position, pause, seeks and speed.
    #[arg(long, conflicts_with = "file")]
    mpv: Option<PathBuf>,
    /// The fastest a cue may be said to fit its slot (default: 2.5, or --rate if higher).
    #[arg(long)]
    max_rate: Option<f32>,
    /// A cue that does not fit even at --max-rate: cut it off when the next cue starts
    /// (shorten), or leave it out (drop).
    #[arg(long, value_parser = crate::names::by_name(&Overflow::ALL), default_value = "shorten")]
    overflow: Overflow,
    /// Where the audio goes.
    #[arg(long, value_enum, default_value = "device")]
    audio: AudioChoice,
}

fn parse_time(s: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("{s:?} is not a time: give SECONDS, MM:SS or HH:MM:SS (with .mmm)");
    if let Ok(secs) = s.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| std::time::Duration::from_secs_f64(secs))
            .ok_or_else(bad);
    }
    hark_sources::subtitles::parse_timestamp(s).ok_or_else(bad)
}

/// The engine a follow speaks through, and what its event thread shares.
struct Running {
    engine: Engine,
    voice: Arc<Voice>,
    settings: hark_engine::Settings,
    log: Arc<CueLog>,
    finished: mpsc::Receiver<UtteranceId>,
    printer: std::thread::JoinHandle<()>,
}

fn start(args: &FollowArgs) -> anyhow::Result<Running> {
    let voice = args.voice.load()?;
    let mut cfg: EngineConfig = args.voice.engine_config(voice, args.steps)?;
    if args.audio == AudioChoice::Simulated {
        cfg.output = hark_audio::simulated(crate::overrides().audio_buffer_ms);
    }
    let (voice, settings) = (Arc::clone(&cfg.voice), cfg.settings);
    let (engine, mut events) = Engine::start(cfg).context("cannot play audio")?;
    let print = args.events;
    let log = Arc::new(CueLog::default());
    let (done_tx, finished) = mpsc::channel::<UtteranceId>();
    // Events are handled on their own thread so reading input never waits on them.
    let shared = Arc::clone(&log);
    let printer = std::thread::spawn(move || {
        while let Some(ev) = events.blocking_recv() {
            if print && let Ok(line) = serde_json::to_string(&ev) {
                println!("{line}");
            }
            match ev {
                Event::Error { message, .. } => eprintln!("hark: warning: {message}"),
                Event::Stats(s) => {
                    if let Some(ms) = s.onset_ms {
                        shared.onset(ms);
                    }
                }
                Event::Finished { id, .. } => {
                    shared
                        .cues
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&id);
                    let _ = done_tx.send(id);
                }
                _ => {}
            }
        }
    });
    Ok(Running {
        engine,
        voice,
        settings,
        log,
        finished,
        printer,
    })
}

impl Running {
    /// Lets `last` (and everything before it) finish, then the device play it out.
    fn finish(self, last: Option<UtteranceId>) {
        if let Some(last) = last {
            while let Ok(id) = self.finished.recv() {
                if id >= last {
                    break;
                }
            }
            std::thread::sleep(super::speak::device_tail(&self.engine));
        }
        drop(self.engine);
        let _ = self.printer.join();
    }
}

/// The speeds a cue may take: never slower than --rate, at most --max-rate.
fn limits(args: &FollowArgs) -> anyhow::Result<hark_sources::subtitles::Limits> {
    let (speed, _) = args.voice.speed_pitch()?;
    let max = args
        .max_rate
        .unwrap_or(speed.max(hark_sources::subtitles::drive::DEFAULT_MAX_SPEED));
    let range = hark_engine::tempo::SPEED_MIN..=hark_engine::tempo::SPEED_MAX;
    anyhow::ensure!(
        range.contains(&max),
        "--max-rate must be between {} and {}",
        range.start(),
        range.end()
    );
    anyhow::ensure!(max >= speed, "--max-rate ({max}) is below --rate ({speed})");
    Ok(hark_sources::subtitles::Limits {
        speed,
        max_speed: max,
    })
}

pub fn run(args: FollowArgs) -> anyhow::Result<()> {
    if let (Some(subs), Some(out)) = (&args.subtitles, &args.out) {
        return subtitles::render(&args, subs, out);
    }
    let running = start(&args)?;
    let last = if let Some(path) = &args.subtitles {
        subtitles::play_file(&args, &running, path)?
    } else if let Some(socket) = &args.mpv {
        subtitles::follow_mpv(&args, &running, socket)?
    } else if args.revising {
        revising::run(&args, &running)?
    } else {
        lines::run(&args, &running)?
    };
    running.finish(last);
    Ok(())
}
