//! The timed-subtitle drivers' voice ([`CueVoice`]) on the streaming engine: each cue is an
//! interrupting `speak` at the speed the timeline chose; lengths at normal speed come from a
//! CPU synthesizer of the same voice (the model's durations only), and the onset the
//! timeline leads by is measured on the engine's own utterances.

use hark_engine::{Engine, Input, Mode, Settings, Synthesizer, UtteranceId};
use hark_sources::subtitles::drive::{self, CueVoice};
use hark_sources::subtitles::timeline::Skip;
use hark_voice::Voice;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Shared with the event thread: the onsets measured (µs, a running mean) and which cue
/// each utterance says, for the event lines.
#[derive(Default)]
pub struct CueLog {
    onset_us: AtomicU64,
    pub cues: Mutex<HashMap<UtteranceId, u64>>,
}

impl CueLog {
    /// Takes an utterance's measured onset into the running mean (a quarter weight each).
    pub fn onset(&self, ms: f64) {
        let us = (ms * 1000.0).clamp(0.0, 2e6) as u64;
        let old = self.onset_us.load(Ordering::Relaxed);
        let new = if old == 0 { us } else { (3 * old + us) / 4 };
        self.onset_us.store(new.max(1), Ordering::Relaxed);
    }
}

pub struct EngineCueVoice<'a> {
    pub engine: &'a Engine,
    pub settings: Settings,
    pub measure: Synthesizer,
    pub log: Arc<CueLog>,
    pub print: bool,
}

impl<'a> EngineCueVoice<'a> {
    pub fn new(
        engine: &'a Engine,
        voice: Arc<Voice>,
        settings: Settings,
        log: Arc<CueLog>,
        print: bool,
    ) -> anyhow::Result<Self> {
        let measure = Synthesizer::measuring(voice, settings.scales, settings.seed)?;
        Ok(Self {
            engine,
            settings,
            measure,
            log,
            print,
        })
    }
}

impl CueVoice for EngineCueVoice<'_> {
    fn speak(&mut self, cue: u64, text: &str, speed: f32) {
        let mut s = self.settings;
        s.speed = hark_engine::tempo::clamp_speed(speed);
        self.engine.set_settings(s);
        let id = self.engine.speak(text, Mode::Interrupt);
        self.log
            .cues
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, cue);
        if self.print {
            println!(
                r#"{{"event":"cue","cue":{cue},"id":{id},"speed":{:.3}}}"#,
                s.speed
            );
        }
    }

    fn stop(&mut self) {
        self.engine.stop();
    }

    fn pause(&mut self) {
        self.engine.pause();
    }

    fn resume(&mut self) {
        self.engine.resume();
    }

    fn length(&mut self, text: &str) -> Duration {
        self.measure
            .length_at_normal_speed(Input::Text(text))
            .unwrap_or_default()
    }

    fn onset(&self) -> Duration {
        match self.log.onset_us.load(Ordering::Relaxed) {
            0 => drive::ASSUMED_ONSET,
            us => Duration::from_micros(us),
        }
    }

    fn skipped(&mut self, cue: u64, why: Skip) {
        if self.print {
            let why = match why {
                Skip::Late => "late",
                Skip::TooLong => "too_long",
            };
            println!(r#"{{"event":"cue_skipped","cue":{cue},"why":"{why}"}}"#);
        }
    }
}
