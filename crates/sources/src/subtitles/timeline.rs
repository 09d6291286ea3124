//! What to say when, as a clock runs over timed cues: each cue is said when its start comes
//! (a little before, by the voice's measured onset, so that sound starts on time), at the
//! speed that ends it before the next cue starts, and a cue the clock has already passed is
//! skipped rather than said late. Pause, seek and the player's speed come with each
//! [`Position`]. The timeline only decides; its caller (the CLI's `hark follow`, the app) does
//! it on the engine. Tested against a simulated clock.

use super::Cue;
use super::fit::{Fit, Limits, Overflow, fit};
use std::collections::VecDeque;
use std::time::Duration;

/// How far behind its start a cue may still be begun; later than this it is skipped.
pub const LATE: Duration = Duration::from_millis(250);
/// After a seek, a cue that started this shortly before the new position is still said.
const SEEK_GRACE: Duration = Duration::from_millis(250);
/// A live source's cues are kept at most this many (older ones are gone from the screen).
const MAX_KEPT: usize = 256;

/// Where the clock is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Position {
    /// The media time now.
    pub media: Duration,
    pub paused: bool,
    /// The player's speed (media seconds per second).
    pub rate: f64,
    /// How many seeks the clock has seen; a change means a jump.
    pub seeks: u64,
}

impl Position {
    pub fn at(media: Duration) -> Self {
        Self {
            media,
            paused: false,
            rate: 1.0,
            seeks: 0,
        }
    }
}

/// Why a cue was not said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// Its start had passed (the clock jumped, or a cue came late).
    Late,
    /// It does not fit at the maximum speed, and the rule is to drop.
    TooLong,
}

/// What the caller should do now, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Say cue `cue` (its number since the start) now, at `speed`, interrupting anything.
    Speak {
        cue: u64,
        text: String,
        speed: f32,
    },
    /// Silence what is being said (its slot is over, or the clock jumped).
    Stop,
    Skipped {
        cue: u64,
        why: Skip,
    },
    Pause,
    Resume,
}

struct Speaking {
    /// When (media time) to cut it, by the shorten rule.
    cut_at: Option<Duration>,
}

pub struct Timeline {
    /// Cues not yet due, with their numbers; `ended` says whether more may be pushed.
    cues: VecDeque<(u64, Cue, Option<Duration>)>,
    /// Every cue, for a file (so a seek back finds them again); empty for a live source.
    all: Vec<Cue>,
    pushed: u64,
    pub limits: Limits,
    pub rule: Overflow,
    /// How long before a cue's start to begin it: the voice's onset.
    pub lead: Duration,
    /// Speech is fitted to end this long before its slot does (onset jitter, the fade).
    pub guard: Duration,
    speaking: Option<Speaking>,
    paused: bool,
    seeks: u64,
}

impl Timeline {
    /// A timeline over a whole file's cues (in time order, as [`super::parse`] gives them).
    pub fn new(cues: Vec<Cue>, limits: Limits, rule: Overflow) -> Self {
        let mut t = Self::live(limits, rule);
        t.all = cues;
        t.reposition(Duration::ZERO);
        t
    }

    /// A timeline for a live source, whose cues come one by one ([`Timeline::push`]).
    pub fn live(limits: Limits, rule: Overflow) -> Self {
        Self {
            cues: VecDeque::new(),
            all: Vec::new(),
            pushed: 0,
            limits,
            rule,
            lead: Duration::ZERO,
            guard: Duration::ZERO,
            speaking: None,
            paused: false,
            seeks: 0,
        }
    }

    /// A cue of a live source (a player showing it now): said at the next poll.
    pub fn push(&mut self, cue: Cue) {
        if self.cues.len() >= MAX_KEPT {
            self.cues.pop_front();
        }
        self.cues.push_back((self.pushed, cue, None));
        self.pushed += 1;
    }

    /// The next cue whose length at normal speed is not known yet: measuring it ahead keeps
    /// the measuring off the moment it is due; only cues that start before `until` are.
    pub fn to_measure(&self, until: Duration) -> Option<(u64, &str)> {
        self.cues
            .iter()
            .take_while(|(_, c, _)| c.start <= until)
            .find(|(_, _, len)| len.is_none())
            .map(|(n, c, _)| (*n, c.text.as_str()))
    }

    pub fn set_length(&mut self, cue: u64, at_normal_speed: Duration) {
        if let Some(entry) = self.cues.iter_mut().find(|(n, _, _)| *n == cue) {
            entry.2 = Some(at_normal_speed);
        }
    }

    /// Whether every cue has been dealt with (a file's track is over).
    pub fn finished(&self) -> bool {
        self.cues.is_empty()
    }

    /// What to do at `pos`; `measure` gives a text's length at normal speed when it was not
    /// measured ahead.
    pub fn poll(
        &mut self,
        pos: Position,
        measure: &mut dyn FnMut(&str) -> Duration,
    ) -> Vec<Action> {
        let mut acts = Vec::new();
        if pos.seeks != self.seeks {
            self.seeks = pos.seeks;
            self.speaking = None;
            acts.push(Action::Stop);
            self.reposition(pos.media);
        }
        if pos.paused != self.paused {
            self.paused = pos.paused;
            acts.push(if pos.paused {
                Action::Pause
            } else {
                Action::Resume
            });
        }
        if pos.paused {
            return acts;
        }
        let rate = if pos.rate.is_finite() && pos.rate > 0.0 {
            pos.rate
        } else {
            1.0
        };
        if let Some(cut) = self.speaking.as_ref().and_then(|s| s.cut_at)
            && pos.media >= cut
        {
            self.speaking = None;
            acts.push(Action::Stop);
        }
        let ahead = pos.media + self.lead.mul_f64(rate);
        // Of the cues now due, only the last is said: the ones before it are behind already.
        let due = self
            .cues
            .iter()
            .take_while(|(_, c, _)| c.start <= ahead)
            .count();
        if due == 0 {
            return acts;
        }
        for _ in 1..due {
            let (n, _, _) = self.cues.pop_front().expect("counted");
            acts.push(Action::Skipped {
                cue: n,
                why: Skip::Late,
            });
        }
        let (n, cue, len) = self.cues.pop_front().expect("counted");
        if pos.media > cue.start + LATE.mul_f64(rate) {
            acts.push(Action::Skipped {
                cue: n,
                why: Skip::Late,
            });
            return acts;
        }
        // The slot runs to the next cue's start; a live source's next cue is unknown, so
        // there it is the cue's own end.
        let slot_end = self.cues.front().map_or(cue.end, |(_, c, _)| c.start);
        let begins = cue.start.max(pos.media);
        let wall = slot_end
            .saturating_sub(begins)
            .div_f64(rate)
            .saturating_sub(self.guard);
        let len = len.unwrap_or_else(|| measure(&cue.text));
        match fit(len, wall, self.limits, self.rule) {
            Fit::Drop => acts.push(Action::Skipped {
                cue: n,
                why: Skip::TooLong,
            }),
            Fit::Speak { speed, cut } => {
                // Cut at the slot's end: the guard is for fitting, not for cutting.
                let cut_at = cut.map(|_| slot_end);
                self.speaking = Some(Speaking { cut_at });
                acts.push(Action::Speak {
                    cue: n,
                    text: cue.text,
                    speed,
                });
            }
        }
        acts
    }

    /// After a jump to `media`: a file's cues from there on (a live source's are dropped; the
    /// player shows the cue of the new place, which comes as a new push).
    fn reposition(&mut self, media: Duration) {
        self.cues.clear();
        let from = media.saturating_sub(SEEK_GRACE);
        let first = self.all.partition_point(|c| c.start < from);
        // Cue numbers are their places in the file, so they stay the same across seeks.
        self.cues.extend(
            self.all[first..]
                .iter()
                .enumerate()
                .map(|(k, c)| ((first + k) as u64, c.clone(), None)),
        );
        if !self.all.is_empty() {
            self.pushed = self.all.len() as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        speed: 1.0,
        max_speed: 2.5,
    };
    /// A voice that says 15 characters a second at 1×.
    fn length(text: &str) -> Duration {
        Duration::from_secs_f64(text.len() as f64 / 15.0)
    }

    fn cue(start_ms: u64, end_ms: u64, text: &str) -> Cue {
        Cue {
            start: Duration::from_millis(start_ms),
            end: Duration::from_millis(end_ms),
            text: text.into(),
        }
    }

    /// Cues: one that fits, one too long for 1× but fine at 2×, one too long for 2.5×, and
    /// two after it, one of them right behind the long one.
    fn track() -> Vec<Cue> {
        vec![
            cue(1_000, 2_500, "A short line."), // 13 chars, 0.87 s
            cue(3_000, 4_000, "This one is quite a bit longer."), // 31 chars, 2.07 s in 1.5 s
            cue(4_500, 5_500, &"far too long for its slot ".repeat(3)), // 78 chars, 5.2 s in 1 s
            cue(5_500, 7_000, "Right behind it."),
            cue(9_000, 10_000, "The end."),
        ]
    }

    /// A simulated speaker on a simulated clock, stepping 10 ms: when each cue began and when
    /// its speech would end (cut short by a stop or the next cue).
    struct Run {
        spoken: Vec<(u64, Duration, Duration, f32)>,
        skipped: Vec<(u64, Skip)>,
        actions: Vec<(Duration, Action)>,
    }

    fn run(t: &mut Timeline, until_ms: u64, mut pos_at: impl FnMut(Duration) -> Position) -> Run {
        let mut r = Run {
            spoken: Vec::new(),
            skipped: Vec::new(),
            actions: Vec::new(),
        };
        for step in 0..=until_ms / 10 {
            let pos = pos_at(Duration::from_millis(step * 10));
            for a in t.poll(pos, &mut length) {
                match &a {
                    Action::Speak { cue, text, speed } => {
                        if let Some(last) = r.spoken.last_mut() {
                            last.2 = last.2.min(pos.media);
                        }
                        let end =
                            pos.media + length(text).div_f64(f64::from(*speed)).mul_f64(pos.rate);
                        r.spoken.push((*cue, pos.media, end, *speed));
                    }
                    Action::Stop => {
                        if let Some(last) = r.spoken.last_mut() {
                            last.2 = last.2.min(pos.media);
                        }
                    }
                    Action::Skipped { cue, why } => r.skipped.push((*cue, *why)),
                    _ => {}
                }
                r.actions.push((pos.media, a));
            }
        }
        r
    }

    #[test]
    fn each_cue_starts_on_time_and_ends_before_the_next_or_the_rule_applies() {
        let cues = track();
        for rule in Overflow::ALL {
            let mut t = Timeline::new(cues.clone(), LIMITS, rule);
            let r = run(&mut t, 11_000, Position::at);
            let said: Vec<u64> = r.spoken.iter().map(|s| s.0).collect();
            match rule {
                Overflow::Drop => {
                    assert_eq!(said, [0, 1, 3, 4]);
                    assert_eq!(r.skipped, [(2, Skip::TooLong)]);
                }
                Overflow::Shorten => assert_eq!(said, [0, 1, 2, 3, 4]),
            }
            for &(n, began, ended, speed) in &r.spoken {
                let c = &cues[n as usize];
                let late = began.saturating_sub(c.start);
                assert!(
                    late <= Duration::from_millis(50),
                    "cue {n} began {late:?} late"
                );
                let slot_end = cues.get(n as usize + 1).map_or(c.end, |next| next.start);
                assert!(
                    ended <= slot_end,
                    "cue {n} ran to {ended:?}, past {slot_end:?}"
                );
                assert!(
                    (LIMITS.speed..=LIMITS.max_speed).contains(&speed),
                    "{speed}"
                );
                // Said at its natural length, it would have been cut only by the rule.
                let whole = began + length(&c.text).div_f64(f64::from(speed));
                if whole > slot_end {
                    assert_eq!(
                        (rule, n),
                        (Overflow::Shorten, 2),
                        "cue {n} cut without the rule"
                    );
                }
            }
            // The second cue needed 2.07 s in 1.5 s: about 1.38×.
            assert!((r.spoken[1].3 - 1.38).abs() < 0.02, "{}", r.spoken[1].3);
        }
    }

    #[test]
    fn a_late_clock_skips_cues_instead_of_falling_behind() {
        let mut t = Timeline::new(track(), LIMITS, Overflow::Shorten);
        // The clock first reads 5.8 s: the first four cues are past (the fourth by 300 ms).
        let r = run(&mut t, 11_000, |d| {
            Position::at(d + Duration::from_millis(5_800))
        });
        assert_eq!(r.spoken.iter().map(|s| s.0).collect::<Vec<_>>(), [4]);
        assert_eq!(r.skipped.len(), 4);
        assert!(r.skipped.iter().all(|s| s.1 == Skip::Late));
    }

    #[test]
    fn pause_holds_and_resume_goes_on() {
        let mut t = Timeline::new(track(), LIMITS, Overflow::Shorten);
        // Paused from 2.0 s of wall time to 4.0 s, at media time 2.0 s.
        let r = run(&mut t, 6_000, |d| {
            let ms = d.as_millis() as u64;
            let media = if ms < 2_000 {
                ms
            } else if ms < 4_000 {
                2_000
            } else {
                ms - 2_000
            };
            Position {
                paused: (2_000..4_000).contains(&ms),
                ..Position::at(Duration::from_millis(media))
            }
        });
        let kinds: Vec<&Action> = r.actions.iter().map(|a| &a.1).collect();
        assert!(matches!(kinds[0], Action::Speak { cue: 0, .. }));
        assert_eq!(kinds[1], &Action::Pause);
        assert_eq!(kinds[2], &Action::Resume);
        // Nothing new was begun while paused, and the next cue came at its media time.
        assert!(matches!(kinds[3], Action::Speak { cue: 1, .. }));
        assert_eq!(r.spoken[1].1, Duration::from_millis(3_000));
    }

    #[test]
    fn a_seek_stops_and_goes_on_from_the_new_place() {
        let mut t = Timeline::new(track(), LIMITS, Overflow::Shorten);
        // At wall 1.5 s the player jumps to 8.9 s, then back to 0.9 s at wall 2.0 s.
        let r = run(&mut t, 3_000, |d| {
            let ms = d.as_millis() as u64;
            let (media, seeks) = match ms {
                0..1_500 => (ms, 0),
                1_500..2_000 => (ms - 1_500 + 8_900, 1),
                _ => (ms - 2_000 + 900, 2),
            };
            Position {
                seeks,
                ..Position::at(Duration::from_millis(media))
            }
        });
        let spoken: Vec<(u64, u128)> = r.spoken.iter().map(|s| (s.0, s.1.as_millis())).collect();
        assert_eq!(spoken, [(0, 1_000), (4, 9_000), (0, 1_000)]);
        let stops = r.actions.iter().filter(|a| a.1 == Action::Stop).count();
        assert_eq!(stops, 2);
    }

    #[test]
    fn a_faster_player_gets_faster_speech() {
        let mut t = Timeline::new(track(), LIMITS, Overflow::Shorten);
        let r = run(&mut t, 3_500, |d| Position {
            rate: 1.5,
            ..Position::at(d.mul_f64(1.5))
        });
        // The first cue (0.87 s) has 1.33 s of wall time at 1.5×: still 1×. The second
        // (2.07 s) has 1 s: 2.07×.
        assert_eq!(r.spoken[0].3, 1.0);
        assert!((r.spoken[1].3 - 2.07).abs() < 0.02, "{}", r.spoken[1].3);
    }

    #[test]
    fn the_lead_begins_a_cue_by_the_onset_early() {
        let mut t = Timeline::new(track(), LIMITS, Overflow::Shorten);
        t.lead = Duration::from_millis(80);
        let r = run(&mut t, 1_500, Position::at);
        assert_eq!(r.spoken[0].1, Duration::from_millis(920));
    }

    #[test]
    fn a_live_source_says_each_pushed_cue_within_its_own_end() {
        let mut t = Timeline::live(LIMITS, Overflow::Drop);
        t.push(cue(0, 1_000, "Hello there."));
        let acts = t.poll(Position::at(Duration::from_millis(100)), &mut length);
        let [Action::Speak { speed, .. }] = acts.as_slice() else {
            panic!("{acts:?}")
        };
        // 0.8 s of speech in 0.9 s: 1×.
        assert_eq!(*speed, 1.0);
        t.push(cue(1_000, 1_200, "Much too long for a fifth of a second."));
        let acts = t.poll(Position::at(Duration::from_millis(1_000)), &mut length);
        assert_eq!(
            acts,
            [Action::Skipped {
                cue: 1,
                why: Skip::TooLong
            }]
        );
        for k in 0..1000 {
            t.push(cue(2_000 + k, 3_000 + k, "x"));
        }
        assert!(t.cues.len() <= MAX_KEPT);
    }
}
