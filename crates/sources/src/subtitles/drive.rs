//! The loop that runs a [`Timeline`] against a clock and does what it says on a voice: the
//! same for a subtitle file against the wall clock (`hark follow --subtitles`) and for a
//! player (`hark follow --mpv`).

use super::timeline::{Action, Position, Skip, Timeline};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the clock is read: a cue begins at most this late.
pub const TICK: Duration = Duration::from_millis(5);

/// Speech is fitted to end this long before its slot does (the binaries' `Timeline::guard`).
pub const GUARD: Duration = Duration::from_millis(100);

/// How long a voice is taken to need from `speak` to sound until it has been measured.
pub const ASSUMED_ONSET: Duration = Duration::from_millis(40);

/// The fastest a cue is said to fit its slot unless the user chose (or speaks faster).
pub const DEFAULT_MAX_SPEED: f32 = 2.5;

/// Cues are measured this far ahead of the clock (not a whole film at the start).
const MEASURE_AHEAD: Duration = Duration::from_secs(20);

/// What speaks the cues (the engine, in the binaries).
pub trait CueVoice {
    /// Says `text` at `speed`, interrupting whatever is being said.
    fn speak(&mut self, cue: u64, text: &str, speed: f32);
    fn stop(&mut self);
    fn pause(&mut self);
    fn resume(&mut self);
    /// How long `text` lasts at normal speed.
    fn length(&mut self, text: &str) -> Duration;
    /// How long the voice takes from `speak` to sound (the timeline begins cues that early).
    fn onset(&self) -> Duration {
        Duration::ZERO
    }
    /// A cue was left out (reported, never said).
    fn skipped(&mut self, _cue: u64, _why: Skip) {}
}

/// Where the media time comes from.
pub trait Clock {
    /// The position now, after pushing any new cues (a live source); `None` when it has ended.
    fn poll(&mut self, timeline: &mut Timeline) -> Option<Position>;
}

/// A subtitle file's own clock: media time is the wall time since start, plus `from`.
pub struct WallClock {
    started: Instant,
    from: Duration,
}

impl WallClock {
    pub fn starting_at(from: Duration) -> Self {
        Self {
            started: Instant::now(),
            from,
        }
    }
}

impl Clock for WallClock {
    fn poll(&mut self, timeline: &mut Timeline) -> Option<Position> {
        (!timeline.finished()).then(|| Position::at(self.from + self.started.elapsed()))
    }
}

/// Runs until the clock ends or `stop` is set.
pub fn run(
    timeline: &mut Timeline,
    clock: &mut dyn Clock,
    voice: &mut dyn CueVoice,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Acquire) {
        let Some(pos) = clock.poll(timeline) else {
            break;
        };
        timeline.lead = voice.onset();
        let mut measure = |t: &str| voice.length(t);
        let actions = timeline.poll(pos, &mut measure);
        for a in actions {
            match a {
                Action::Speak { cue, text, speed } => voice.speak(cue, &text, speed),
                Action::Stop => voice.stop(),
                Action::Pause => voice.pause(),
                Action::Resume => voice.resume(),
                Action::Skipped { cue, why } => voice.skipped(cue, why),
            }
        }
        // Measure the next cue while there is time, so it is ready when due.
        if let Some((n, text)) = timeline.to_measure(pos.media + MEASURE_AHEAD) {
            let text = text.to_string();
            let len = voice.length(&text);
            timeline.set_length(n, len);
        }
        std::thread::sleep(TICK);
    }
}
