//! Timed subtitles: a file played against the wall clock, mpv followed through its IPC, or a
//! file rendered to a track (`--out`) with each cue at its start time.

use super::cue_voice::EngineCueVoice;
use super::{FollowArgs, Running, limits};
use anyhow::Context;
use hark_audio::wav::{WavFormat, WavSink};
use hark_engine::{BackendChoice, Input, Synthesizer, UtteranceId};
use hark_sources::mpv::Mpv;
use hark_sources::subtitles::drive::{self, Clock, WallClock};
use hark_sources::subtitles::{self, Fit, Timeline, fit};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A cue's inaudible start is skipped, up to this long, so its sound starts on its time.
const MAX_LEAD_IN: Duration = Duration::from_millis(250);
/// Below this level (−60 dBFS) a sample is inaudible.
const SILENT: f32 = 0.001;
/// The fade where the shorten rule cuts a cue.
const FADE: Duration = Duration::from_millis(15);

fn last_started(running: &Running) -> Option<UtteranceId> {
    running
        .log
        .cues
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .keys()
        .max()
        .copied()
}

pub(super) fn play_file(
    args: &FollowArgs,
    running: &Running,
    path: &Path,
) -> anyhow::Result<Option<UtteranceId>> {
    let cues = subtitles::load(path)?;
    let timeline = Timeline::new(cues, limits(args)?, args.overflow);
    let clock = WallClock::starting_at(args.from.unwrap_or_default());
    run_timed(args, running, timeline, clock)
}

pub(super) fn follow_mpv(
    args: &FollowArgs,
    running: &Running,
    socket: &Path,
) -> anyhow::Result<Option<UtteranceId>> {
    let mpv = Mpv::connect(socket).map_err(anyhow::Error::msg)?;
    if args.events {
        println!(r#"{{"event":"following"}}"#);
    }
    run_timed(
        args,
        running,
        Timeline::live(limits(args)?, args.overflow),
        mpv,
    )
}

/// Runs `timeline` against `clock` on the engine, until the clock ends.
fn run_timed(
    args: &FollowArgs,
    running: &Running,
    mut timeline: Timeline,
    mut clock: impl Clock,
) -> anyhow::Result<Option<UtteranceId>> {
    timeline.guard = drive::GUARD;
    let mut voice = EngineCueVoice::new(
        &running.engine,
        Arc::clone(&running.voice),
        running.settings,
        Arc::clone(&running.log),
        args.events,
    )?;
    drive::run(
        &mut timeline,
        &mut clock,
        &mut voice,
        &AtomicBool::new(false),
    );
    Ok(last_started(running))
}

/// What the render did, for its closing line.
#[derive(Default)]
struct Tally {
    cues: usize,
    faster: usize,
    fastest: f32,
    shortened: usize,
    dropped: usize,
}

/// Writes the whole track: silence, and each cue's speech from its start time, fitted to end
/// before the next cue (the same rule as when playing). The file appears only when complete.
pub(super) fn render(args: &FollowArgs, path: &Path, out: &Path) -> anyhow::Result<()> {
    let cues = subtitles::load(path)?;
    let voice = args.voice.load()?;
    let voice = Arc::new(voice);
    let rate = voice.config.sample_rate;
    let limits = limits(args)?;
    let mut synth = Synthesizer::with_engine(
        Arc::clone(&voice),
        args.voice.backend,
        args.voice.engine,
        &crate::overrides().gpu,
    )
    .or_else(|e| match args.voice.backend {
        BackendChoice::Auto => Synthesizer::new(Arc::clone(&voice), BackendChoice::Cpu),
        _ => Err(e),
    })?;
    args.voice.apply(&mut synth.scales)?;
    synth.seed = args.voice.seed;
    synth.segmenter.normalize = !args.voice.raw;
    synth.segmenter.options.normalize = args.voice.norm.options()?;
    let (_, pitch) = args.voice.speed_pitch()?;
    synth.pitch = pitch;
    let mut wav = WavSink::create(out, rate, WavFormat::Pcm16)?;
    let to_samples = |d: Duration| (d.as_secs_f64() * f64::from(rate)).round() as u64;
    let (mut written, mut tally) = (0u64, Tally::default());
    let skip = to_samples(args.from.unwrap_or_default());
    for (i, cue) in cues.iter().enumerate() {
        if cue.start < args.from.unwrap_or_default() {
            continue;
        }
        let slot_end = cues.get(i + 1).map_or(cue.end, |n| n.start);
        let slot = slot_end.saturating_sub(cue.start);
        synth.speed = 1.0;
        let at_one = synth
            .length_at_normal_speed(Input::Text(&cue.text))
            .unwrap_or_default();
        tally.cues += 1;
        let (speed, cut) = match fit(at_one, slot, limits, args.overflow) {
            Fit::Drop => {
                tally.dropped += 1;
                continue;
            }
            Fit::Speak { speed, cut } => (speed, cut),
        };
        synth.speed = hark_engine::tempo::clamp_speed(speed);
        let mut audio = Vec::new();
        match synth.speak(Input::Text(&cue.text), |s| {
            audio.extend_from_slice(s);
            Ok(())
        }) {
            Ok(_) => {}
            Err(hark_engine::EngineError::NothingSpeakable) => continue,
            Err(e) => return Err(e).with_context(|| format!("cue {} could not be said", i + 1)),
        }
        let lead = audio
            .iter()
            .take(to_samples(MAX_LEAD_IN) as usize)
            .position(|s| s.abs() > SILENT)
            .unwrap_or(0);
        let mut audio = audio.split_off(lead);
        // Never past the slot: by the rule, or a rounding of the fit.
        let room = to_samples(slot) as usize;
        if audio.len() > room {
            audio.truncate(room);
            let fade = to_samples(FADE).min(room as u64) as usize;
            let n = audio.len();
            for (k, s) in audio[n - fade..].iter_mut().enumerate() {
                *s *= 1.0 - (k + 1) as f32 / fade as f32;
            }
            if cut.is_some() {
                tally.shortened += 1;
            }
        }
        if speed > limits.speed {
            tally.faster += 1;
            tally.fastest = tally.fastest.max(speed);
        }
        let start = to_samples(cue.start).saturating_sub(skip);
        if start > written {
            write_silence(&mut wav, start - written)?;
            written = start;
        }
        wav.write(&audio)?;
        written += audio.len() as u64;
    }
    // The track lasts as long as the subtitles.
    let end = cues
        .last()
        .map_or(0, |c| to_samples(c.end).saturating_sub(skip));
    if end > written {
        write_silence(&mut wav, end - written)?;
    }
    wav.finish()?;
    eprintln!(
        "hark: {} cues in {}: {} sped up (at most {:.2}×), {} shortened, {} dropped",
        tally.cues,
        out.display(),
        tally.faster,
        tally.fastest.max(limits.speed),
        tally.shortened,
        tally.dropped
    );
    Ok(())
}

fn write_silence(wav: &mut WavSink, mut n: u64) -> anyhow::Result<()> {
    let zeros = [0.0f32; 4096];
    while n > 0 {
        let k = n.min(zeros.len() as u64) as usize;
        wav.write(&zeros[..k])?;
        n -= k as u64;
    }
    Ok(())
}
