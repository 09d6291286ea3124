//! A long export's progress on stderr: a bar with an ETA (indicatif) when stderr is a
//! terminal, else, when asked (`--progress`), a plain line every few seconds. The measure is
//! the text read so far, so the ETA follows the synthesis rate.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How often the plain lines come.
const LINE_EVERY: Duration = Duration::from_secs(5);

pub enum Progress {
    Off,
    Bar(ProgressBar),
    Lines {
        total: u64,
        begun: Instant,
        last: Instant,
    },
}

impl Progress {
    /// Progress over `total` units (bytes of text): a bar on a terminal, plain lines when
    /// `asked` without one, else nothing.
    pub fn new(total: u64, asked: bool) -> Self {
        let now = Instant::now();
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:30} {percent:>3}%  {elapsed} elapsed, ETA {eta}  {msg}",
            ) {
                bar.set_style(style);
            }
            Self::Bar(bar)
        } else if asked {
            Self::Lines {
                total: total.max(1),
                begun: now,
                last: now,
            }
        } else {
            Self::Off
        }
    }

    /// `done` units read, `audio_s` seconds of audio written so far.
    pub fn update(&mut self, done: u64, audio_s: f64) {
        match self {
            Self::Off => {}
            Self::Bar(bar) => {
                bar.set_position(done);
                bar.set_message(format!("{} of audio", clock(audio_s)));
            }
            Self::Lines { total, begun, last } => {
                if last.elapsed() < LINE_EVERY {
                    return;
                }
                *last = Instant::now();
                let f = (done as f64 / *total as f64).clamp(0.0, 1.0);
                let spent = begun.elapsed().as_secs_f64();
                let eta = if f > 0.0 {
                    clock(spent * (1.0 - f) / f)
                } else {
                    "?".into()
                };
                eprintln!(
                    "hark: {:.0}%, {} elapsed, ETA {eta}, {} of audio",
                    100.0 * f,
                    clock(spent),
                    clock(audio_s)
                );
            }
        }
    }

    pub fn finish(self, audio_s: f64) {
        match self {
            Self::Off => {}
            Self::Bar(bar) => bar.finish_and_clear(),
            Self::Lines { begun, .. } => eprintln!(
                "hark: 100%, {} of audio in {}",
                clock(audio_s),
                clock(begun.elapsed().as_secs_f64())
            ),
        }
    }
}

/// `1h02m03s`, `2m03s`, `3s`.
fn clock(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_short() {
        assert_eq!(super::clock(3.4), "3s");
        assert_eq!(super::clock(123.0), "2m03s");
        assert_eq!(super::clock(3723.0), "1h02m03s");
    }
}
