//! Adaptive step count: how many frames the next engine step decodes.
//!
//! Small steps start audio quickly; large steps amortise the decoder's fixed context cost
//! (on CPU a 16-frame step costs about a third of a 128-frame one). The policy is a pure
//! function of what the engine can observe, so it is tested with a simulated clock.

use serde::{Deserialize, Serialize};

/// How the engine picks the frames per step. Serialised by snake-case names: `"auto"` or
/// `{"fixed": frames}` (the app's settings store it so).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepMode {
    /// Start small, grow while playback has plenty buffered, shrink when it runs low.
    #[default]
    Auto,
    /// Always this many frames (at least 1).
    Fixed(usize),
}

/// Tuning of [`StepMode::Auto`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepPolicy {
    /// Frames of the first step after silence or an interrupt.
    pub start: usize,
    /// Largest step.
    pub cap: usize,
    /// Grow only while at least this much audio is buffered ahead of playback.
    pub grow_above_ms: f64,
    /// Buffered audio must cover this many times the estimated cost of the bigger step.
    pub safety: f64,
    /// Audio per frame, in ms.
    pub frame_ms: f64,
    /// A step that cost more than this fraction of the audio it made (1: slower than real
    /// time) cannot keep up at that size, because the fixed context cost dominates (e.g. on a
    /// busy machine): grow, whatever the buffer.
    pub max_step_rtf: f64,
}

impl Default for StepPolicy {
    fn default() -> Self {
        Self {
            start: 16,
            cap: 128,
            grow_above_ms: 250.0,
            safety: 2.0,
            frame_ms: 256.0 / 22.05,
            max_step_rtf: 1.0,
        }
    }
}

/// What the engine knows before a step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepInput {
    /// Segments waiting in the phoneme queue.
    pub queue_depth: usize,
    /// Audio buffered ahead of playback, in ms.
    pub buffered_ms: f64,
    /// The previous step of this run of speech: `(frames, cost_ms)`; `None` after silence or
    /// an interrupt.
    pub last: Option<(usize, f64)>,
}

/// Frames for the next step.
pub fn next_step(mode: StepMode, policy: &StepPolicy, input: &StepInput) -> usize {
    let n = match mode {
        StepMode::Fixed(n) => return n.max(1),
        StepMode::Auto => policy.start.max(1),
    };
    let Some((prev, cost_ms)) = input.last else {
        return n;
    };
    let prev = prev.max(1);
    // Cost grows sub-linearly with frames (fixed context), so scaling linearly overestimates:
    // a safe guess for a step of `k` frames.
    let est = |k: usize| cost_ms * k as f64 / prev as f64;
    let cap = policy.cap.max(n);
    if cost_ms > policy.max_step_rtf * prev as f64 * policy.frame_ms {
        // Smaller steps would only fall further behind: bigger ones cost less per frame.
        return (prev * 2).clamp(n, cap);
    }
    if input.buffered_ms < policy.safety * est(prev)
        || (input.queue_depth == 0 && input.buffered_ms < policy.grow_above_ms / 2.0)
    {
        // Running low: halve towards the start size so the next chunk arrives sooner.
        return (prev / 2).clamp(n, cap);
    }
    let bigger = (prev * 2).min(cap);
    if input.buffered_ms >= policy.grow_above_ms && input.buffered_ms >= policy.safety * est(bigger)
    {
        bigger
    } else {
        prev.clamp(n, cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME_MS: f64 = 256.0 / 22.05;

    /// A CPU-like cost model: fixed context plus a per-frame cost, in ms.
    fn cost(frames: usize, per_frame: f64) -> f64 {
        60.0 + per_frame * frames as f64
    }

    /// Simulates speaking `total` frames with playback draining in real time; returns
    /// (steps taken, underruns, largest step).
    fn simulate(mode: StepMode, total: usize, per_frame: f64) -> (Vec<usize>, usize, usize) {
        let policy = StepPolicy::default();
        let mut clock = 0.0f64; // ms
        let mut play_until = 0.0f64; // the time playback runs out of audio
        let mut started = false;
        let mut last = None;
        let (mut done, mut underruns, mut steps) = (0, 0, Vec::new());
        while done < total {
            let buffered = (play_until - clock).max(0.0);
            let n = next_step(
                mode,
                &policy,
                &StepInput {
                    queue_depth: 1,
                    buffered_ms: buffered,
                    last,
                },
            )
            .min(total - done);
            let c = cost(n, per_frame);
            clock += c;
            if started && clock > play_until {
                underruns += 1;
            }
            play_until = play_until.max(clock) + n as f64 * FRAME_MS;
            started = true;
            last = Some((n, c));
            done += n;
            steps.push(n);
        }
        let max = steps.iter().copied().max().unwrap_or(0);
        (steps, underruns, max)
    }

    #[test]
    fn starts_small_grows_to_the_cap_without_underruns() {
        // 30 s of speech at a per-frame cost that gives RTF ≈ 0.2 for big steps.
        let (steps, underruns, max) = simulate(StepMode::Auto, 2600, 1.1);
        assert_eq!(steps[0], 16);
        assert_eq!(max, 128);
        assert_eq!(underruns, 0, "steps {steps:?}");
    }

    #[test]
    fn fixed_small_steps_underrun_where_auto_does_not() {
        // On a slow machine the fixed context cost makes 8-frame steps slower than real time
        // (100 ms for 93 ms of audio); auto grows past that.
        let (_, auto_underruns, _) = simulate(StepMode::Auto, 1500, 5.0);
        let (_, fixed_underruns, _) = simulate(StepMode::Fixed(8), 1500, 5.0);
        assert_eq!(auto_underruns, 0);
        assert!(fixed_underruns > 0);
    }

    #[test]
    fn a_starved_engine_grows_its_steps_instead_of_shrinking() {
        // A busy machine: every step pays 250 ms of overhead, so 16 frames (186 ms of audio)
        // can never keep up; bigger steps can.
        let cost = |n: usize| 250.0 + 1.1 * n as f64;
        let policy = StepPolicy::default();
        let run = |mode: StepMode| {
            let (mut clock, mut play_until, mut last, mut underruns) = (0.0f64, 0.0f64, None, 0);
            for i in 0..60 {
                let input = StepInput {
                    queue_depth: 1,
                    buffered_ms: (play_until - clock).max(0.0),
                    last,
                };
                let n = next_step(mode, &policy, &input);
                clock += cost(n);
                if i > 0 && clock > play_until {
                    underruns += 1;
                }
                play_until = play_until.max(clock) + n as f64 * FRAME_MS;
                last = Some((n, cost(n)));
            }
            underruns
        };
        let (auto, fixed) = (run(StepMode::Auto), run(StepMode::Fixed(16)));
        assert!(fixed > 50, "fixed 16: {fixed}");
        assert!(auto <= 3, "auto: {auto}");
    }

    #[test]
    fn pinned_count_is_respected() {
        let (steps, _, _) = simulate(StepMode::Fixed(64), 1000, 1.1);
        assert!(steps[..steps.len() - 1].iter().all(|&n| n == 64));
        assert_eq!(
            next_step(
                StepMode::Fixed(0),
                &StepPolicy::default(),
                &StepInput::default()
            ),
            1
        );
    }

    #[test]
    fn shrinks_when_dry_and_restarts_after_interrupt() {
        let p = StepPolicy::default();
        let dry = StepInput {
            queue_depth: 0,
            buffered_ms: 20.0,
            last: Some((128, 190.0)),
        };
        assert_eq!(next_step(StepMode::Auto, &p, &dry), 64);
        let after_interrupt = StepInput {
            queue_depth: 3,
            buffered_ms: 0.0,
            last: None,
        };
        assert_eq!(next_step(StepMode::Auto, &p, &after_interrupt), 16);
    }

    #[test]
    fn does_not_grow_when_a_bigger_step_would_outrun_the_buffer() {
        let p = StepPolicy::default();
        // 300 ms buffered but a 64-frame step is estimated at 2 × 180 ms: stay.
        let input = StepInput {
            queue_depth: 2,
            buffered_ms: 300.0,
            last: Some((32, 90.0)),
        };
        assert_eq!(next_step(StepMode::Auto, &p, &input), 32);
    }
}
