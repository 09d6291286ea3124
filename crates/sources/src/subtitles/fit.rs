//! How fast to say a cue so that it ends before the next one starts, and what to do when even
//! the fastest speed the user allows is not enough.

use std::time::Duration;

/// What happens to a cue whose speech does not fit its slot at the maximum speed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Overflow {
    /// Say it at the maximum speed and cut it off when the slot ends (with a short fade), so
    /// the next cue starts on time. The default: the start of a line carries most of it.
    #[default]
    Shorten,
    /// Leave it out: every cue spoken is whole, and the ones that cannot be are skipped.
    Drop,
}

impl Overflow {
    pub const ALL: [Overflow; 2] = [Self::Shorten, Self::Drop];
}

/// The speeds a cue may be said at, as multiples of normal speed: the user's own, which a
/// cue is never slower than, and the most the user accepts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    pub speed: f32,
    pub max_speed: f32,
}

/// How a cue is said.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fit {
    /// At `speed`; if `cut` is set, stopped that long after it starts.
    Speak { speed: f32, cut: Option<Duration> },
    /// Not at all.
    Drop,
}

/// The fit of speech that lasts `at_normal_speed` at 1× into `slot` of wall-clock time:
/// the user's speed when it fits, faster when it must be (up to `max_speed`), then the rule.
/// Speech at speed `s` lasts `at_normal_speed / s` (the engine's tempo holds it to that).
pub fn fit(at_normal_speed: Duration, slot: Duration, limits: Limits, rule: Overflow) -> Fit {
    let base = limits.speed.max(f32::MIN_POSITIVE);
    let max = limits.max_speed.max(base);
    if slot.is_zero() {
        return match rule {
            Overflow::Drop => Fit::Drop,
            Overflow::Shorten => Fit::Speak {
                speed: max,
                cut: Some(Duration::ZERO),
            },
        };
    }
    // Rounded up a little, so that rounding never makes speech overrun its slot.
    let needed = (at_normal_speed.as_secs_f64() / slot.as_secs_f64() * (1.0 + 1e-5)) as f32;
    if needed <= base {
        Fit::Speak {
            speed: base,
            cut: None,
        }
    } else if needed <= max {
        Fit::Speak {
            speed: needed,
            cut: None,
        }
    } else {
        match rule {
            Overflow::Drop => Fit::Drop,
            Overflow::Shorten => Fit::Speak {
                speed: max,
                cut: Some(slot),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        speed: 1.2,
        max_speed: 3.0,
    };

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn speech_that_fits_keeps_the_users_speed() {
        let f = fit(secs(2.0), secs(3.0), LIMITS, Overflow::Shorten);
        assert_eq!(
            f,
            Fit::Speak {
                speed: 1.2,
                cut: None
            }
        );
    }

    #[test]
    fn long_speech_is_made_just_fast_enough() {
        let Fit::Speak { speed, cut: None } = fit(secs(5.0), secs(2.0), LIMITS, Overflow::Drop)
        else {
            panic!("should fit at 2.5×");
        };
        assert!((speed - 2.5).abs() < 1e-4, "{speed}");
        // It ends within its slot.
        assert!(5.0 / f64::from(speed) <= 2.0 + 1e-6);
    }

    #[test]
    fn past_the_maximum_the_rule_applies() {
        assert_eq!(fit(secs(9.0), secs(2.0), LIMITS, Overflow::Drop), Fit::Drop);
        assert_eq!(
            fit(secs(9.0), secs(2.0), LIMITS, Overflow::Shorten),
            Fit::Speak {
                speed: 3.0,
                cut: Some(secs(2.0))
            }
        );
        assert_eq!(
            fit(secs(1.0), Duration::ZERO, LIMITS, Overflow::Drop),
            Fit::Drop
        );
    }
}
