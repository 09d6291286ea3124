//! The audio callback of the streaming output and the state it shares with the engine.
//!
//! The callback never allocates or locks: it talks to the engine only through atomics and
//! three SPSC rings (audio, markers in, marker hits out). The same callback runs inside cpal
//! or, without a sound card, on a timer thread (`clock.rs`).

use cpal::{FromSample, SizedSample};
use hark_engine::output::{NAMED_MARK, Transport};
use ringbuf::traits::{Consumer, Observer, Producer};
use ringbuf::{HeapCons, HeapProd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub(super) struct Shared {
    pub base: Instant,
    pub volume: AtomicU32,
    pub transport: Arc<Transport>,
    pub flush_req: AtomicU64,
    pub flush_ack: AtomicU64,
    /// The device frame up to which the latest flush drops queued audio (what the engine
    /// writes after the flush is kept).
    pub flush_upto: AtomicU64,
    /// Device frames handed out or discarded so far.
    pub read_pos: AtomicU64,
    pub underruns: AtomicU64,
    /// The device buffer in frames (0: not fixed, or not known).
    pub buffer_frames: AtomicU32,
    /// Callbacks, after the first [`SETTLING_CALLBACKS`], that had to refill the whole device
    /// buffer: the device had played everything it was given, so the buffer is no longer
    /// than the sound server's cycle (or this thread was late by a whole buffer), and what
    /// plays is silence in place of speech, or speech again.
    pub drained: AtomicU64,
    /// Callbacks so far.
    pub calls: AtomicU64,
    /// The tap's ring was full: the tapped file misses samples the device got.
    pub tap_overflow: AtomicBool,
    /// The engine has more audio coming: an empty ring now is an underrun.
    pub expecting: AtomicBool,
    pub failed: AtomicBool,
    pub last_callback_ns: AtomicU64,
    /// Stream errors since the data callback last ran.
    pub errors_since_callback: AtomicU64,
    pub error: Mutex<Option<String>>,
}

impl Shared {
    pub fn new(transport: Arc<Transport>) -> Self {
        Self {
            base: Instant::now(),
            volume: AtomicU32::new(1.0f32.to_bits()),
            transport,
            flush_req: AtomicU64::new(0),
            flush_ack: AtomicU64::new(0),
            flush_upto: AtomicU64::new(0),
            read_pos: AtomicU64::new(0),
            underruns: AtomicU64::new(0),
            buffer_frames: AtomicU32::new(0),
            drained: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            tap_overflow: AtomicBool::new(false),
            expecting: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            last_callback_ns: AtomicU64::new(0),
            errors_since_callback: AtomicU64::new(0),
            error: Mutex::new(None),
        }
    }

    /// Marks the output as failed (from an error callback, never the data callback).
    pub fn fail(&self, message: String) {
        if let Ok(mut slot) = self.error.lock() {
            *slot = Some(message);
        }
        self.failed.store(true, Ordering::Release);
    }
}

/// The first callbacks fill an empty device buffer, so asking for all of it is no sign of
/// trouble there.
pub(super) const SETTLING_CALLBACKS: u64 = 2;

/// A clip for the callback to play ahead of the ring (`hark_engine::output::CuePort`),
/// at the device's rate.
pub(super) struct CueMsg {
    /// The stop it follows: it plays once that stop has faded out.
    pub stop: u64,
    pub samples: Arc<[f32]>,
    pub start_tag: u64,
    pub end_tag: u64,
}

struct Playing {
    msg: CueMsg,
    pos: usize,
}

/// State owned by the audio callback.
pub(super) struct Callback {
    consumer: HeapCons<f32>,
    /// Clips to play, and where the callback leaves the ones it is done with (the notifier
    /// thread frees them: the callback never frees memory).
    cues: HeapCons<CueMsg>,
    garbage: HeapProd<Arc<[f32]>>,
    /// The clip of the current stop (it plays once that stop has faded out).
    cue: Option<Playing>,
    /// A clip a later stop is fading out.
    old_cue: Option<Playing>,
    /// (device frame, tag, flush generation it was queued in).
    marks: HeapCons<(u64, u64, u64)>,
    hits: HeapProd<(u64, u64)>,
    pub shared: Arc<Shared>,
    channels: usize,
    rate: u32,
    gain: f32,
    fade_step: f32,
    volume: f32,
    acked: u64,
    seen_stop: u64,
    pos: u64,
    starving: bool,
    /// Where a pause at a mark holds: markers from there on are not reported until playback
    /// goes on (the fade-out after the hold still hands out a few ms past it).
    hold: Option<u64>,
    boosted: bool,
    /// Every sample handed to the device, for a test's tap (`out::device_tapped`).
    tap: Option<HeapProd<f32>>,
}

impl Callback {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        consumer: HeapCons<f32>,
        cues: HeapCons<CueMsg>,
        garbage: HeapProd<Arc<[f32]>>,
        marks: HeapCons<(u64, u64, u64)>,
        hits: HeapProd<(u64, u64)>,
        shared: Arc<Shared>,
        channels: usize,
        rate: u32,
        fade_ms: f32,
    ) -> Self {
        let fade_frames = (rate as f32 * fade_ms / 1000.0).max(1.0);
        shared.transport.device_rate.store(rate, Ordering::Relaxed);
        let seen_stop = shared.transport.stop.load(Ordering::Acquire);
        Self {
            consumer,
            cues,
            garbage,
            cue: None,
            old_cue: None,
            marks,
            hits,
            shared,
            channels: channels.max(1),
            rate,
            gain: 1.0,
            fade_step: 1.0 / fade_frames,
            volume: 1.0,
            acked: 0,
            seen_stop,
            pos: 0,
            starving: false,
            hold: None,
            boosted: false,
            tap: None,
        }
    }

    /// Also hands every sample it gives the device to `tap`.
    pub fn set_tap(&mut self, tap: HeapProd<f32>) {
        self.tap = Some(tap);
    }

    /// A flush or stop has faded out, `at` frames into this buffer: drop the audio queued
    /// before it (a stop not yet followed by the engine's flush: everything) and its markers.
    fn finish_flush(&mut self, flush_req: u64, stop: u64, at: usize) {
        let sh = &self.shared;
        let upto = if flush_req != self.acked {
            sh.flush_upto.load(Ordering::Acquire)
        } else {
            u64::MAX
        };
        let n = upto
            .saturating_sub(self.pos)
            .min(self.consumer.occupied_len() as u64);
        self.pos += self.consumer.skip(n as usize) as u64;
        // Markers are queued in order; those of the dropped audio come first.
        while let Some(&(_, _, generation)) = self.marks.try_peek() {
            if flush_req == self.acked || generation < flush_req {
                self.marks.try_pop();
            } else {
                break;
            }
        }
        self.acked = flush_req;
        // A clip an earlier stop cut short is done with.
        if let Some(old) = self.old_cue.take() {
            self.discard(old.msg.samples);
        }
        let sh = &self.shared;
        if stop != self.seen_stop {
            // The stop is complete once the last faded frame has left the callback.
            let t = sh.transport.now_us() + at as u64 * 1_000_000 / self.rate as u64;
            sh.transport.stop_faded_us.store(t, Ordering::Release);
            sh.transport.stop_faded.store(stop, Ordering::Release);
        }
        self.seen_stop = stop;
        self.hold = None;
        // The ring is empty because of the stop, not because the engine was late.
        self.starving = true;
        sh.flush_ack.store(flush_req, Ordering::Release);
    }

    /// Reports the markers already handed out; if the next one is an SSML mark at the
    /// current sample, reports it too and holds there (true).
    fn hold_at_named_mark(&mut self, now_ns: u64) -> bool {
        while let Some(&(at, tag, _)) = self.marks.try_peek() {
            if at > self.pos {
                return false;
            }
            self.marks.try_pop();
            let _ = self.hits.try_push((tag, now_ns));
            if tag & NAMED_MARK != 0 {
                self.hold = Some(self.pos);
                return true;
            }
        }
        false
    }

    fn discard(&mut self, samples: Arc<[f32]>) {
        // Full (never in practice): dropping here would free memory in the callback, so
        // keep it.
        if let Err(s) = self.garbage.try_push(samples) {
            std::mem::forget(s);
        }
    }

    /// Takes in new clips: the latest one for stop `stop` becomes the clip to play (what
    /// played before it fades out with that stop); clips of earlier stops are dropped.
    fn take_cues(&mut self, stop: u64, now_ns: u64) {
        if let Some(c) = self.cue.take_if(|c| c.msg.stop < stop) {
            self.retire(c);
        }
        while let Some(m) = self.cues.try_peek() {
            if m.stop > stop {
                break; // for a stop this callback has not seen yet
            }
            let Some(m) = self.cues.try_pop() else { break };
            if m.stop < stop {
                self.discard(m.samples);
                continue;
            }
            if m.samples.is_empty() {
                let _ = self.hits.try_push((m.start_tag, now_ns));
                let _ = self.hits.try_push((m.end_tag, now_ns));
                self.discard(m.samples);
                continue;
            }
            if let Some(c) = self.cue.take() {
                self.retire(c);
            }
            self.cue = Some(Playing { msg: m, pos: 0 });
        }
    }

    /// A clip that a stop cuts short: heard until the fade ends, if it had started.
    fn retire(&mut self, c: Playing) {
        if c.pos > 0 && self.old_cue.is_none() {
            self.old_cue = Some(c);
        } else {
            self.discard(c.msg.samples);
        }
    }

    /// The current clip may play: its stop has faded out.
    fn cue_ready(&self) -> bool {
        self.cue
            .as_ref()
            .is_some_and(|c| c.msg.stop == self.seen_stop)
    }

    /// The next sample of the current clip, reporting its start and end.
    fn next_cue_sample(&mut self, now_ns: u64) -> f32 {
        let Some(c) = self.cue.as_mut() else {
            return 0.0;
        };
        if c.pos == 0 {
            let _ = self.hits.try_push((c.msg.start_tag, now_ns));
        }
        let s = c.msg.samples[c.pos];
        c.pos += 1;
        if c.pos >= c.msg.samples.len() {
            let _ = self.hits.try_push((c.msg.end_tag, now_ns));
            if let Some(done) = self.cue.take() {
                self.discard(done.msg.samples);
            }
        }
        s
    }

    pub fn fill<T: SizedSample + FromSample<f32>>(&mut self, out: &mut [T]) {
        if !self.boosted {
            self.boosted = true;
            boost_current_thread();
        }
        let sh = &self.shared;
        let now_ns = sh.base.elapsed().as_nanos() as u64;
        // Never 0: 0 means "no callback yet".
        sh.last_callback_ns.store(now_ns.max(1), Ordering::Release);
        sh.errors_since_callback.store(0, Ordering::Release);
        let flush_req = sh.flush_req.load(Ordering::Acquire);
        let stop = sh.transport.stop.load(Ordering::Acquire);
        self.take_cues(stop, now_ns);
        let mut flushing = flush_req != self.acked || stop != self.seen_stop;
        let sh = &self.shared;
        let paused = sh.transport.paused.load(Ordering::Acquire);
        if !paused {
            self.hold = None; // resumed
        }
        if flushing {
            let playing_cue = self.cue_ready() && self.cue.as_ref().is_some_and(|c| c.pos > 0);
            let audible = self.old_cue.is_some() || playing_cue || !self.consumer.is_empty();
            if !audible {
                // Nothing is heard: the stop needs no fade.
                self.gain = 0.0;
            } else if stop == self.seen_stop && self.cue_ready() {
                // The engine's flush of its ring while a clip plays: the ring is not heard.
                self.finish_flush(flush_req, stop, 0);
                flushing = false;
            }
        }
        let sh = &self.shared;
        let mut target = if flushing || paused { 0.0 } else { 1.0 };
        let mut pause_at_mark = !paused && sh.transport.pause_at_mark.load(Ordering::Acquire);
        let expecting = sh.expecting.load(Ordering::Relaxed);
        let frames = out.len() / self.channels;
        let tr = &sh.transport;
        tr.period_frames.store(frames as u32, Ordering::Relaxed);
        tr.callbacks.fetch_add(1, Ordering::Relaxed);
        tr.frames_out.fetch_add(frames as u64, Ordering::Relaxed);
        let calls = sh.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let whole = sh.buffer_frames.load(Ordering::Relaxed);
        if calls > SETTLING_CALLBACKS && whole > 0 && frames as u32 >= whole {
            sh.drained.fetch_add(1, Ordering::Relaxed);
        }
        let vol_target = f32::from_bits(sh.volume.load(Ordering::Relaxed));
        // Volume changes ramp over one buffer.
        let vol_step = (vol_target - self.volume) / frames.max(1) as f32;
        for (i, frame) in out.chunks_mut(self.channels).enumerate() {
            if pause_at_mark && !flushing && self.hold_at_named_mark(now_ns) {
                // Hold right here, at the mark's sample (reported now).
                pause_at_mark = false;
                let tr = &self.shared.transport;
                tr.pause_at_mark.store(false, Ordering::Release);
                tr.paused.store(true, Ordering::Release);
                target = 0.0;
            }
            if flushing && self.gain == 0.0 {
                // Faded out: drop what was queued before the flush and go on, in this same
                // buffer, with whatever the engine queued after it.
                self.finish_flush(flush_req, stop, i);
                flushing = false;
                target = if paused { 0.0 } else { 1.0 };
                self.gain = target;
            }
            if self.gain < target {
                self.gain = (self.gain + self.fade_step).min(target);
            } else if self.gain > target {
                self.gain = (self.gain - self.fade_step).max(target);
            }
            // Fully faded out (paused or flushing): hold the audio where it is.
            let s = if target == 0.0 && self.gain == 0.0 {
                0.0
            } else if flushing && let Some(c) = self.old_cue.as_mut() {
                // A clip fading out with the stop that cut it short.
                let s = c.msg.samples.get(c.pos).copied().unwrap_or(0.0);
                c.pos += 1;
                s
            } else if !flushing && self.cue_ready() {
                self.next_cue_sample(now_ns)
            } else {
                match self.consumer.try_pop() {
                    Some(s) => {
                        self.pos += 1;
                        self.starving = false;
                        s
                    }
                    None => {
                        if expecting && !self.starving {
                            self.shared.underruns.fetch_add(1, Ordering::Relaxed);
                            self.starving = true;
                        }
                        0.0
                    }
                }
            };
            self.volume += vol_step;
            let v = s * self.gain * self.volume;
            if let Some(tap) = self.tap.as_mut()
                && tap.try_push(v).is_err()
            {
                self.shared.tap_overflow.store(true, Ordering::Relaxed);
            }
            for slot in frame {
                *slot = T::from_sample(v);
            }
        }
        self.volume = vol_target;
        if flushing && self.gain == 0.0 {
            self.finish_flush(flush_req, stop, frames);
            if !paused {
                self.gain = 1.0;
            }
        }
        let sh = &self.shared;
        // Markers whose sample has been handed out in this (or an earlier) callback.
        while let Some(&(at, tag, _)) = self.marks.try_peek() {
            if at >= self.pos || self.hold.is_some_and(|h| at >= h) {
                break;
            }
            self.marks.try_pop();
            let _ = self.hits.try_push((tag, now_ns));
        }
        sh.read_pos.store(self.pos, Ordering::Release);
    }
}

/// Real-time scheduling for the callback thread where allowed (root, or an RT limit), so a
/// busy machine does not starve playback; silently keeps normal priority otherwise.
pub(super) fn boost_current_thread() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain syscalls on the calling thread with a valid, initialised parameter.
    unsafe {
        let param = libc::sched_param { sched_priority: 10 };
        let _ = libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param);
    }
}
