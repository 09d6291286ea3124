//! The Live captions panel's sources, the same four as `hark follow`: lines of a growing file
//! or a pipe; revising captions (JSON messages whose tail is replaced; only stable words are
//! said, once); a subtitle file timed against the clock from Start; and mpv, followed through
//! its IPC socket. Each runs on its own thread and ends when the [`Captions`] is dropped.

use crate::events;
use crate::managers::engine::EngineManager;
use crate::managers::history::HistoryManager;
use crate::state::{Level, Source};
use hark_engine::{Input, Mode, Synthesizer};
use hark_sources::caption::{Follower, Start};
use hark_sources::mpv::Mpv;
use hark_sources::revise;
use hark_sources::subtitles::drive::{self, Clock, CueVoice, WallClock};
use hark_sources::subtitles::{self, Limits, Overflow, Timeline};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;
use tauri::{AppHandle, Manager};

/// What the followed path holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaptionKind {
    /// Lines, each said in order.
    #[default]
    Lines,
    /// One JSON message per line, `{"text": …, "final": bool}`.
    Revising,
    /// A WebVTT or SubRip file.
    Subtitles,
    /// mpv's IPC socket.
    Mpv,
}

/// How timed captions fit their slots (the panel's Timed captions fields).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// The fastest a cue is said to fit its slot (never below the user's own speed).
    pub max_rate: f32,
    pub overflow: Overflow,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            max_rate: drive::DEFAULT_MAX_SPEED,
            overflow: Overflow::Shorten,
        }
    }
}

/// A source being followed; dropping it stops it.
pub struct Captions {
    stop: Arc<AtomicBool>,
    _follower: Option<Follower>,
}

impl Drop for Captions {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

pub fn start(
    app: &AppHandle,
    path: PathBuf,
    kind: CaptionKind,
    timing: Timing,
) -> Result<Captions, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let follower = match kind {
        CaptionKind::Lines => {
            let app = app.clone();
            Some(Follower::start(path, Start::End, move |line| {
                say_line(&app, line)
            })?)
        }
        CaptionKind::Revising => {
            let (tx, rx) = mpsc::channel::<String>();
            let f = Follower::start(path, Start::End, move |line| {
                let _ = tx.send(line.to_string());
            })?;
            let (app, stop) = (app.clone(), Arc::clone(&stop));
            spawn("hark-revising", move || revising(&app, rx, &stop))?;
            Some(f)
        }
        CaptionKind::Subtitles => {
            let cues = subtitles::load(&path).map_err(|e| e.to_string())?;
            let timeline = Timeline::new(cues, limits(app, timing), timing.overflow);
            let (app, stop) = (app.clone(), Arc::clone(&stop));
            spawn("hark-subtitles", move || {
                timed(
                    &app,
                    timeline,
                    WallClock::starting_at(Duration::ZERO),
                    &stop,
                )
            })?;
            None
        }
        CaptionKind::Mpv => {
            let mpv = Mpv::connect(&path)?;
            let timeline = Timeline::live(limits(app, timing), timing.overflow);
            let (app, stop) = (app.clone(), Arc::clone(&stop));
            spawn("hark-mpv", move || timed(&app, timeline, mpv, &stop))?;
            None
        }
    };
    Ok(Captions {
        stop,
        _follower: follower,
    })
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), String> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn say_line(app: &AppHandle, line: &str) {
    let engine = app.state::<EngineManager>();
    match engine.speak(line.to_string(), Source::Caption, Mode::Queue) {
        Ok((id, _)) => {
            let history = app.state::<HistoryManager>();
            history.add(Source::Caption, line, Some(id));
            events::history(app, &history.list());
        }
        Err(e) => events::notice(app, Level::Error, &e),
    }
}

/// Revising captions: stable words are said as they become stable; a final message's whole
/// line goes into the history.
fn revising(app: &AppHandle, rx: mpsc::Receiver<String>, stop: &AtomicBool) {
    let mut listener = AppReviser {
        app: app.clone(),
        warned: false,
    };
    revise::follow(&rx, stop, &mut listener);
}

struct AppReviser {
    app: AppHandle,
    warned: bool,
}

impl revise::Listener for AppReviser {
    fn say(&mut self, words: String) {
        let engine = self.app.state::<EngineManager>();
        if let Err(e) = engine.speak(words, Source::Caption, Mode::Queue) {
            events::notice(&self.app, Level::Error, &e);
        }
    }

    fn line_ended(&mut self, text: &str) {
        let history = self.app.state::<HistoryManager>();
        history.add(Source::Caption, text, None);
        events::history(&self.app, &history.list());
    }

    fn bad_line(&mut self, _number: u64, error: &str) {
        // Once per source: a stream of bad lines must not flood the notices.
        if !std::mem::replace(&mut self.warned, true) {
            events::notice(
                &self.app,
                Level::Warning,
                &format!("A caption line was skipped: {error}"),
            );
        }
    }
}

/// The speeds a timed caption may take: the user's, up to the panel's fastest (a number out
/// of the engine's range is brought into it; never below the user's own speed).
fn limits(app: &AppHandle, timing: Timing) -> Limits {
    use hark_engine::tempo::{SPEED_MAX, SPEED_MIN};
    let rate = app
        .state::<crate::managers::settings::SettingsManager>()
        .get()
        .rate;
    let max = if timing.max_rate.is_finite() {
        timing.max_rate.clamp(SPEED_MIN, SPEED_MAX)
    } else {
        Timing::default().max_rate
    };
    Limits {
        speed: rate,
        max_speed: max.max(rate),
    }
}

fn timed(app: &AppHandle, mut timeline: Timeline, mut clock: impl Clock, stop: &AtomicBool) {
    timeline.guard = drive::GUARD;
    let measure = app.state::<EngineManager>().measurer();
    let Some(measure) = measure else {
        return events::notice(
            app,
            Level::Error,
            "Timed captions need the speech engine; it is not running.",
        );
    };
    let mut voice = AppCueVoice {
        app: app.clone(),
        measure,
    };
    drive::run(&mut timeline, &mut clock, &mut voice, stop);
    app.state::<EngineManager>().restore_speed();
}

struct AppCueVoice {
    app: AppHandle,
    measure: Synthesizer,
}

impl CueVoice for AppCueVoice {
    fn speak(&mut self, _cue: u64, text: &str, speed: f32) {
        if let Err(e) = self
            .app
            .state::<EngineManager>()
            .speak_fitted(text.to_string(), speed)
        {
            events::notice(&self.app, Level::Error, &e);
        }
    }

    fn stop(&mut self) {
        self.app.state::<EngineManager>().stop();
    }

    fn pause(&mut self) {
        self.app.state::<EngineManager>().set_paused(true);
    }

    fn resume(&mut self) {
        self.app.state::<EngineManager>().set_paused(false);
    }

    fn length(&mut self, text: &str) -> Duration {
        self.measure
            .length_at_normal_speed(Input::Text(text))
            .unwrap_or_default()
    }

    fn onset(&self) -> Duration {
        drive::ASSUMED_ONSET
    }
}
