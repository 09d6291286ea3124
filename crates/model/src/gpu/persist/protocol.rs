//! The host's side of the persistent kernel's protocol, over the mapped memory area laid out
//! in [`super::layout`]: posting jobs, writing the prior noise, taking chunks from the
//! output ring, stop/seek/pause/shutdown, and the watchdog. It touches nothing but that
//! memory, so the unit tests below drive it against a device emulated by a thread.

use super::layout::{self, NSLOT, STEP_MAX, ctl, job, prof, ring};
use crate::cpu::noise::NoiseSource;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProtocolError {
    #[error("the persistent kernel made no progress for {0:?} while {1}")]
    Hung(Duration, &'static str),
    #[error("the persistent kernel has stopped ({0})")]
    Gone(String),
    #[error("{0}")]
    Input(String),
    /// The job is larger than the kernel's slots (another engine can make it).
    #[error("{0}")]
    TooLarge(String),
}

/// The mapped area: control words, two job slots, the output ring.
pub struct Shared {
    base: NonNull<u32>,
    ci: usize,
    hop: usize,
}

// SAFETY: the area is plain memory owned by whoever created `Shared`, which outlives it; the
// words both sides write are accessed through atomics.
unsafe impl Send for Shared {}

impl Shared {
    /// # Safety
    /// `base` must point to `layout::mapped_words(ci, hop)` zeroed, 16-byte aligned u32 words
    /// that stay valid for the life of the returned value.
    pub unsafe fn new(base: *mut u32, ci: usize, hop: usize) -> Self {
        Self {
            base: NonNull::new(base).expect("mapped area"),
            ci,
            hop,
        }
    }

    pub fn word(&self, i: usize) -> &AtomicU32 {
        assert!(i < layout::mapped_words(self.ci, self.hop));
        // SAFETY: in bounds (checked), aligned, and valid for the life of `self`.
        unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(i)) }
    }

    pub fn ctl(&self, i: usize) -> &AtomicU32 {
        debug_assert!(i < ctl::WORDS);
        self.word(i)
    }

    /// First word of job slot `slot`.
    pub fn job_base(&self, slot: usize) -> usize {
        ctl::WORDS + slot * layout::job_words(self.ci)
    }

    /// First word of ring slot `i`.
    pub fn ring_base(&self, i: usize) -> usize {
        ctl::WORDS + 2 * layout::job_words(self.ci) + i * layout::ring_words(self.hop)
    }

    /// `n` words from word `at` as a mutable slice of T (u32, i32 or f32). Only for areas
    /// the other side does not touch at the time (the protocol says when).
    #[allow(clippy::mut_from_ref)]
    fn area<T: Copy>(&self, at: usize, n: usize) -> &mut [T] {
        assert_eq!(std::mem::size_of::<T>(), 4);
        assert!(at + n <= layout::mapped_words(self.ci, self.hop));
        // SAFETY: in bounds, 4-byte elements, and by the protocol nobody else accesses these
        // words while the slice lives (the caller keeps it short-lived).
        unsafe { std::slice::from_raw_parts_mut(self.base.as_ptr().add(at) as *mut T, n) }
    }
}

/// What the host knows about the current job.
struct Current {
    seq: u32,
    walk: u32,
    frames: usize,
    /// Next frame `decode` is expected to start at; `pcm` holds samples from here on.
    cursor: usize,
    /// Frames taken from the ring so far (the end of `pcm`).
    have_end: usize,
    pcm: Vec<f32>,
}

/// The host's side of the protocol.
pub struct Host {
    pub sh: Shared,
    seq: u32,
    walk: u32,
    consumed: u32,
    cur: Option<Current>,
    paused: bool,
    /// No progress for this long while waiting for the kernel: it is declared hung.
    pub watchdog: Duration,
    /// Frames of the first chunk of a job (the kernel starts it without being asked).
    pub first_step: usize,
    /// Let the kernel decode one chunk (of the size last asked for) beyond the request, so
    /// it computes while the caller uses the previous one; off: only on demand.
    pub speculate: bool,
    /// Called now and then while waiting: an error ends the wait (e.g. the kernel faulted).
    pub alive: Box<dyn FnMut() -> Result<(), String> + Send>,
}

/// How long waits spin before they start sleeping between polls.
const SPIN: Duration = Duration::from_millis(5);

impl Host {
    pub fn new(sh: Shared) -> Self {
        Self {
            sh,
            seq: 0,
            walk: 0,
            consumed: 0,
            cur: None,
            paused: false,
            watchdog: Duration::from_secs(2),
            first_step: 16,
            speculate: false,
            alive: Box::new(|| Ok(())),
        }
    }

    /// Polls `ready` until it holds. Progress is `progress()` changing; none for
    /// `self.watchdog` (while not paused) means the kernel is hung. `idle` runs between polls.
    fn wait(
        &mut self,
        what: &'static str,
        ready: impl Fn(&Shared) -> bool,
        progress: impl Fn(&Shared) -> u32,
        mut idle: impl FnMut(&Shared),
    ) -> Result<(), ProtocolError> {
        let start = Instant::now();
        let mut last = (progress(&self.sh), Instant::now());
        let mut polls = 0u32;
        loop {
            if ready(&self.sh) {
                return Ok(());
            }
            idle(&self.sh);
            polls = polls.wrapping_add(1);
            if !polls.is_multiple_of(64) {
                std::hint::spin_loop();
                continue;
            }
            let now = Instant::now();
            let p = progress(&self.sh);
            if p != last.0 || self.paused {
                last = (p, now);
            } else if now - last.1 > self.watchdog {
                return Err(ProtocolError::Hung(self.watchdog, what));
            }
            if self.sh.ctl(ctl::STATE).load(Ordering::Acquire) == 2 {
                return Err(ProtocolError::Gone("it returned".into()));
            }
            (self.alive)().map_err(ProtocolError::Gone)?;
            if now - start > SPIN {
                std::thread::sleep(Duration::from_micros(20));
            }
        }
    }

    /// Frames the kernel may run beyond the request.
    fn ahead(&self, step: u32) -> u32 {
        if self.speculate { step } else { 0 }
    }

    /// Abandons the current job (the kernel drops it before its next chunk).
    pub fn stop(&mut self) {
        if let Some(c) = self.cur.take() {
            self.sh.ctl(ctl::STOP).store(c.seq, Ordering::Release);
        }
    }

    /// Stops the current job and waits until the kernel has let go of it.
    pub fn quiesce(&mut self) -> Result<(), ProtocolError> {
        self.stop();
        let seq = self.seq;
        self.wait(
            "finishing a job",
            |sh| sh.ctl(ctl::DONE).load(Ordering::Acquire) >= seq,
            |sh| sh.ctl(ctl::DONE).load(Ordering::Relaxed),
            |_| {},
        )
    }

    pub fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
        self.sh
            .ctl(ctl::PAUSE)
            .store(paused as u32, Ordering::Release);
    }

    /// Asks the kernel to stamp its stages for the jobs posted from now on (benchmarks).
    pub fn set_profile(&mut self, on: bool) {
        self.sh
            .ctl(ctl::PROFILE)
            .store(on as u32, Ordering::Release);
    }

    /// The stage profile of the last job taken with profiling on: `(stage, ns since the
    /// kernel took the job)` in the order the kernel passed them. Complete once the kernel
    /// has let go of the job (`quiesce`).
    pub fn profile(&self) -> Vec<(u32, u32)> {
        let base = layout::prof_base(self.sh.ci, self.sh.hop);
        let n = self.sh.word(base + prof::N).load(Ordering::Acquire) as usize;
        (0..n.min(prof::MAX))
            .map(|i| {
                let e = base + prof::E + 2 * i;
                let w = |k| self.sh.word(k).load(Ordering::Relaxed);
                (w(e), w(e + 1))
            })
            .collect()
    }

    /// Posts a job and waits for its durations; meanwhile draws the prior noise (the stream
    /// `noise` continues, as on the CPU) into the job's slot, then publishes it.
    /// `zsdp` is the SDP noise [2, T]. Returns the durations.
    pub fn begin(
        &mut self,
        ids: &[i64],
        zsdp: &[f32],
        length_scale: f32,
        noise_scale: f32,
        mut noise: Option<&mut NoiseSource>,
    ) -> Result<Vec<usize>, ProtocolError> {
        let t = ids.len();
        if t == 0 || zsdp.len() != 2 * t {
            return Err(ProtocolError::Input(format!(
                "{t} phoneme ids with {} SDP noise values",
                zsdp.len()
            )));
        }
        if t > layout::TMAX {
            return Err(ProtocolError::TooLarge(format!(
                "{t} phoneme ids: the persistent kernel takes at most {}",
                layout::TMAX
            )));
        }
        self.stop();
        let seq = self.seq + 1;
        // This slot last held job seq − 2: the kernel must be done with it.
        self.wait(
            "releasing a job slot",
            |sh| sh.ctl(ctl::DONE).load(Ordering::Acquire) + 2 >= seq,
            |sh| sh.ctl(ctl::DONE).load(Ordering::Relaxed),
            |_| {},
        )?;
        let base = self.sh.job_base(seq as usize & 1);
        {
            let head = self.sh.area::<u32>(base, job::IDS);
            head[job::SEQ] = seq;
            head[job::T] = t as u32;
            head[job::LS] = length_scale.to_bits();
            head[job::NS] = noise_scale.to_bits();
            head[job::FRAMES] = 0;
            head[job::GEN] = self.walk;
            let ids32 = self.sh.area::<i32>(base + job::IDS, t);
            for (d, &s) in ids32.iter_mut().zip(ids) {
                *d = s as i32;
            }
            self.sh
                .area::<f32>(base + job::ZSDP, 2 * t)
                .copy_from_slice(zsdp);
        }
        let first = self.first_step.clamp(1, STEP_MAX) as u32;
        self.sh.ctl(ctl::WANT).store(first, Ordering::Relaxed);
        self.sh.ctl(ctl::STEP).store(first, Ordering::Relaxed);
        self.sh
            .ctl(ctl::AHEAD)
            .store(self.ahead(first), Ordering::Relaxed);
        self.sh.ctl(ctl::JOB).store(seq, Ordering::Release);
        self.seq = seq;

        // The prior noise is drawn while the kernel runs the front half.
        let ci = self.sh.ci;
        let cap = ci * layout::FMAX;
        let eps_at = base + job::EPS;
        let mut drawn = 0usize;
        let draw_noise = noise_scale != 0.0;
        self.wait(
            "running the encoder and the duration predictor",
            |sh| sh.ctl(ctl::FRONT).load(Ordering::Acquire) >= seq,
            |sh| sh.ctl(ctl::FRONT).load(Ordering::Relaxed),
            |sh| {
                if let Some(src) = noise.as_deref_mut()
                    && draw_noise
                    && drawn + 4 * ci <= cap
                {
                    src.fill_normal(sh.area::<f32>(eps_at + drawn, 4 * ci));
                    drawn += 4 * ci;
                }
            },
        )?;
        let frames = self.sh.area::<u32>(base, job::IDS)[job::FRAMES] as usize;
        let durations: Vec<usize> = self
            .sh
            .area::<i32>(base + job::DUR, t)
            .iter()
            .map(|&d| d.max(0) as usize)
            .collect();
        if frames > layout::FMAX {
            self.sh.ctl(ctl::STOP).store(seq, Ordering::Release);
            return Err(ProtocolError::TooLarge(format!(
                "{frames} frames: the persistent kernel takes at most {}",
                layout::FMAX
            )));
        }
        if let Some(src) = noise
            && draw_noise
        {
            let need = ci * frames;
            if drawn < need {
                // On the critical path now: spread over the host's cores (same stream).
                let rest = src.normals_parallel(need - drawn);
                self.sh
                    .area::<f32>(eps_at + drawn, need - drawn)
                    .copy_from_slice(&rest);
            }
        }
        self.sh.ctl(ctl::NOISE).store(seq, Ordering::Release);
        self.cur = Some(Current {
            seq,
            walk: self.walk,
            frames,
            cursor: 0,
            have_end: 0,
            pcm: Vec::new(),
        });
        Ok(durations)
    }

    /// Takes every published ring slot; keeps the current walk's next chunk, drops the rest.
    fn drain_ring(&mut self) {
        let produced = self.sh.ctl(ctl::PRODUCED).load(Ordering::Acquire);
        while self.consumed != produced {
            let at = self.sh.ring_base(self.consumed as usize % NSLOT);
            let head = self.sh.area::<u32>(at, ring::PCM);
            let (seq, walk) = (head[ring::JOB], head[ring::GEN]);
            let (a, b) = (head[ring::START] as usize, head[ring::END] as usize);
            if let Some(c) = self.cur.as_mut()
                && seq == c.seq
                && walk == c.walk
                && a == c.have_end
                && b > a
                && b - a <= STEP_MAX
            {
                let hop = self.sh.hop;
                c.pcm
                    .extend_from_slice(self.sh.area::<f32>(at + ring::PCM, (b - a) * hop));
                c.have_end = b;
            }
            self.consumed = self.consumed.wrapping_add(1);
            self.sh
                .ctl(ctl::CONSUMED)
                .store(self.consumed, Ordering::Release);
        }
    }

    /// Samples of frames [start, end) of the current job. A start other than where the last
    /// call ended restarts the kernel's walk there.
    pub fn decode(&mut self, start: usize, end: usize) -> Result<Vec<f32>, ProtocolError> {
        let hop = self.sh.hop;
        let step = (end - start.min(end)).clamp(1, STEP_MAX) as u32;
        let ahead = self.ahead(step);
        let c = self
            .cur
            .as_mut()
            .ok_or_else(|| ProtocolError::Input("no utterance has been started".into()))?;
        if start >= end || end > c.frames {
            return Err(ProtocolError::Input(format!(
                "frames [{start}, {end}) not inside [0, {})",
                c.frames
            )));
        }
        if start != c.cursor {
            self.walk = self.walk.wrapping_add(1);
            c.walk = self.walk;
            c.cursor = start;
            c.have_end = start;
            c.pcm.clear();
            let sh = &self.sh;
            sh.ctl(ctl::SEEK_FRAME)
                .store(start as u32, Ordering::Relaxed);
            sh.ctl(ctl::WANT).store(end as u32, Ordering::Relaxed);
            sh.ctl(ctl::STEP).store(step, Ordering::Relaxed);
            sh.ctl(ctl::AHEAD).store(ahead, Ordering::Relaxed);
            sh.ctl(ctl::SEEK_GEN).store(self.walk, Ordering::Release);
        } else {
            let sh = &self.sh;
            sh.ctl(ctl::STEP).store(step, Ordering::Relaxed);
            sh.ctl(ctl::AHEAD).store(ahead, Ordering::Relaxed);
            sh.ctl(ctl::WANT).store(end as u32, Ordering::Release);
        }
        loop {
            self.drain_ring();
            let c = self.cur.as_ref().expect("current job");
            if c.have_end >= end {
                break;
            }
            let consumed = self.consumed;
            // An injected hang: the chunk never comes and nothing moves.
            let hang = injected_hang();
            self.wait(
                "decoding a chunk",
                |sh| !hang && sh.ctl(ctl::PRODUCED).load(Ordering::Acquire) != consumed,
                |sh| {
                    if hang {
                        0
                    } else {
                        sh.ctl(ctl::PRODUCED).load(Ordering::Relaxed)
                    }
                },
                |_| {},
            )?;
        }
        let c = self.cur.as_mut().expect("current job");
        let n = (end - start) * hop;
        let out: Vec<f32> = c.pcm.drain(..n).collect();
        c.cursor = end;
        Ok(out)
    }

    /// Asks the kernel to return and waits (bounded by the watchdog) until it has.
    pub fn shutdown(&mut self) -> Result<(), ProtocolError> {
        self.sh.ctl(ctl::SHUTDOWN).store(1, Ordering::Release);
        self.paused = false;
        match self.wait(
            "shutting down",
            |sh| sh.ctl(ctl::STATE).load(Ordering::Acquire) == 2,
            |sh| sh.ctl(ctl::STATE).load(Ordering::Relaxed),
            |_| {},
        ) {
            Err(ProtocolError::Gone(_)) => Ok(()),
            other => other,
        }
    }
}

/// Milliseconds per stage name from a profile (each entry's time is the time since the
/// previous one; repeated stages, e.g. one per encoder layer, are summed), in the order the
/// stages first appear.
pub fn stage_times(entries: &[(u32, u32)]) -> Vec<(&'static str, f64)> {
    let mut out: Vec<(&'static str, f64)> = Vec::new();
    let mut prev = 0u32;
    for &(label, ns) in entries {
        let ms = ns.saturating_sub(prev) as f64 * 1e-6;
        prev = ns;
        let name = layout::stage::name(label);
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, t)) => *t += ms,
            None => out.push((name, ms)),
        }
    }
    out
}

/// Whether this chunk wait is one the fault hook makes never end (`persistent-watchdog:N`).
#[cfg(feature = "fault-inject")]
fn injected_hang() -> bool {
    crate::fault::persistent_job_hangs()
}
#[cfg(not(feature = "fault-inject"))]
fn injected_hang() -> bool {
    false
}

#[cfg(test)]
mod tests {
    //! The host against an emulated device that follows the kernel's rules (decide() in
    //! persistent.cu): durations and PCM are made-up functions of the inputs.
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    const CI: usize = 4;
    const HOP: usize = 8;

    struct Area(Vec<u128>); // 16-byte aligned words

    fn area() -> Area {
        Area(vec![0u128; layout::mapped_words(CI, HOP).div_ceil(4)])
    }

    fn shared(a: &mut Area) -> Shared {
        // SAFETY: the Vec is zeroed, aligned, large enough and outlives the test's threads
        // (they are joined before it is dropped).
        unsafe { Shared::new(a.0.as_mut_ptr() as *mut u32, CI, HOP) }
    }

    /// The sample the emulated device makes for frame f, sample i (depends on the job's noise
    /// so that reading the noise too early shows).
    fn sample(seq: u32, f: usize, i: usize, eps0: f32) -> f32 {
        seq as f32 * 1e4 + f as f32 * 10.0 + i as f32 * 0.1 + eps0
    }

    /// Durations: id % 3 (frames = their sum).
    fn emulate(sh: Shared, stall: Arc<AtomicBool>) {
        let (mut cur, mut last, mut produced, mut beat) = (0u32, 0u32, 0u32, 0u32);
        let (mut walk, mut pos, mut frames, mut slot, mut ns) = (0u32, 0usize, 0usize, 0, 0f32);
        let c = |i| sh.ctl(i).load(Ordering::Acquire);
        sh.ctl(ctl::STATE).store(1, Ordering::Release);
        loop {
            beat += 1;
            sh.ctl(ctl::BEAT).store(beat, Ordering::Release);
            if c(ctl::SHUTDOWN) != 0 {
                break;
            }
            if stall.load(Ordering::Relaxed) {
                std::thread::yield_now();
                continue;
            }
            if cur != 0 && cur <= c(ctl::STOP) {
                sh.ctl(ctl::DONE).store(cur, Ordering::Release);
                cur = 0;
            }
            let js = c(ctl::JOB);
            if js > last && js <= c(ctl::STOP) {
                last = js;
                sh.ctl(ctl::DONE).store(js, Ordering::Release);
            } else if js > last {
                sh.ctl(ctl::DONE).store(js - 1, Ordering::Release);
                cur = js;
                last = js;
                slot = js as usize & 1;
                let base = sh.job_base(slot);
                let head = sh.area::<u32>(base, job::IDS);
                let t = head[job::T] as usize;
                ns = f32::from_bits(head[job::NS]);
                walk = head[job::GEN];
                pos = 0;
                let ids = sh.area::<i32>(base + job::IDS, t).to_vec();
                let dur = sh.area::<i32>(base + job::DUR, t);
                for (d, id) in dur.iter_mut().zip(&ids) {
                    *d = id % 3;
                }
                frames = ids.iter().map(|&i| (i % 3) as usize).sum();
                sh.area::<u32>(base, job::IDS)[job::FRAMES] = frames as u32;
                sh.ctl(ctl::FRONT).store(js, Ordering::Release);
                continue;
            }
            if cur != 0 && c(ctl::PAUSE) == 0 && (ns == 0.0 || c(ctl::NOISE) >= cur) {
                if c(ctl::SEEK_GEN) != walk {
                    walk = c(ctl::SEEK_GEN);
                    pos = (c(ctl::SEEK_FRAME) as usize).min(frames);
                    continue;
                }
                let want = (c(ctl::WANT) + c(ctl::AHEAD)) as usize;
                if pos < frames && pos < want && produced - c(ctl::CONSUMED) < NSLOT as u32 {
                    let step = (c(ctl::STEP) as usize).clamp(1, STEP_MAX);
                    let end = (pos + step).min(frames);
                    let at = sh.ring_base(produced as usize % NSLOT);
                    let eps0 = if ns == 0.0 {
                        0.0
                    } else {
                        sh.area::<f32>(sh.job_base(slot) + job::EPS, 1)[0]
                    };
                    let pcm = sh.area::<f32>(at + ring::PCM, (end - pos) * HOP);
                    for (k, v) in pcm.iter_mut().enumerate() {
                        *v = sample(cur, pos + k / HOP, k % HOP, eps0);
                    }
                    let head = sh.area::<u32>(at, ring::PCM);
                    head[ring::JOB] = cur;
                    head[ring::GEN] = walk;
                    head[ring::START] = pos as u32;
                    head[ring::END] = end as u32;
                    produced += 1;
                    sh.ctl(ctl::PRODUCED).store(produced, Ordering::Release);
                    pos = end;
                    continue;
                }
            }
            std::thread::yield_now();
        }
        sh.ctl(ctl::STATE).store(2, Ordering::Release);
    }

    fn with_device(test: impl FnOnce(&mut Host, &Arc<AtomicBool>)) {
        let mut a = area();
        let stall = Arc::new(AtomicBool::new(false));
        let dev = {
            let sh = shared(&mut a);
            let stall = stall.clone();
            std::thread::spawn(move || emulate(sh, stall))
        };
        let mut host = Host::new(shared(&mut a));
        host.watchdog = Duration::from_millis(300);
        // The device thread uses the area: end it before a failed test unwinds past it.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(&mut host, &stall)));
        stall.store(false, Ordering::Relaxed);
        host.shutdown().expect("shutdown");
        dev.join().expect("device thread");
        if let Err(p) = r {
            std::panic::resume_unwind(p);
        }
    }

    fn expected(seq: u32, a: usize, b: usize, eps0: f32) -> Vec<f32> {
        (a * HOP..b * HOP)
            .map(|k| sample(seq, k / HOP, k % HOP, eps0))
            .collect()
    }

    fn ids(n: usize) -> Vec<i64> {
        (0..n as i64).map(|i| 1 + i * 7 % 11).collect()
    }

    #[test]
    fn chunks_in_order_any_sizes() {
        with_device(|h, _| {
            let ids = ids(40);
            let dur = h.begin(&ids, &[0.0; 80], 1.0, 0.0, None).unwrap();
            let frames: usize = dur.iter().sum();
            assert_eq!(
                dur,
                ids.iter().map(|&i| (i % 3) as usize).collect::<Vec<_>>()
            );
            let mut a = 0;
            for size in [16usize, 1, 37, 5, 300].iter().cycle() {
                if a >= frames {
                    break;
                }
                let b = (a + size).min(frames);
                assert_eq!(
                    h.decode(a, b).unwrap(),
                    expected(1, a, b, 0.0),
                    "[{a}, {b})"
                );
                a = b;
            }
        });
    }

    #[test]
    fn read_ahead_and_seek_back() {
        with_device(|h, _| {
            h.speculate = true;
            let dur = h.begin(&ids(60), &[0.0; 120], 1.0, 0.0, None).unwrap();
            let frames: usize = dur.iter().sum();
            assert_eq!(h.decode(0, 10).unwrap(), expected(1, 0, 10, 0.0));
            // Back to the start: the walk restarts.
            assert_eq!(h.decode(0, frames).unwrap(), expected(1, 0, frames, 0.0));
            assert_eq!(h.decode(3, 9).unwrap(), expected(1, 3, 9, 0.0));
            assert_eq!(h.decode(9, 20).unwrap(), expected(1, 9, 20, 0.0));
        });
    }

    #[test]
    fn new_job_abandons_the_old_and_noise_arrives_first() {
        with_device(|h, _| {
            h.speculate = true;
            h.begin(&ids(50), &[0.0; 100], 1.0, 0.0, None).unwrap();
            h.decode(0, 4).unwrap();
            // Job 1 walks ahead into the ring; job 2 must still get its own chunks.
            let mut src = NoiseSource::new(5);
            let dur = h
                .begin(&ids(30), &[0.0; 60], 1.0, 0.5, Some(&mut src))
                .unwrap();
            let frames: usize = dur.iter().sum();
            let eps0 = NoiseSource::new(5).normal(vec![1, 1]).data[0];
            assert_eq!(h.decode(0, frames).unwrap(), expected(2, 0, frames, eps0));
            // Three more jobs reuse the slots in turn.
            for seq in 3..6 {
                let dur = h.begin(&ids(9), &[0.0; 18], 1.0, 0.0, None).unwrap();
                let f: usize = dur.iter().sum();
                assert_eq!(h.decode(0, f).unwrap(), expected(seq, 0, f, 0.0));
            }
        });
    }

    #[test]
    fn a_job_stopped_before_it_was_taken_is_done() {
        with_device(|h, stall| {
            stall.store(true, Ordering::Relaxed);
            // What begin() then stop() publish, while the device does not look.
            h.sh.ctl(ctl::JOB).store(1, Ordering::Release);
            h.sh.ctl(ctl::STOP).store(1, Ordering::Release);
            h.seq = 1;
            stall.store(false, Ordering::Relaxed);
            h.quiesce().unwrap();
            assert_eq!(
                h.sh.ctl(ctl::FRONT).load(Ordering::Acquire),
                0,
                "it ran the job"
            );
            // The next job is taken as usual.
            let dur = h.begin(&ids(10), &[0.0; 20], 1.0, 0.0, None).unwrap();
            assert_eq!(h.decode(0, 2).unwrap(), expected(2, 0, 2, 0.0), "{dur:?}");
        });
    }

    #[test]
    fn pause_holds_chunks_without_tripping_the_watchdog() {
        with_device(|h, _| {
            h.begin(&ids(40), &[0.0; 80], 1.0, 0.0, None).unwrap();
            h.set_paused(true);
            // A chunk the device had begun before it saw the pause still lands: wait two of
            // its loop turns, so that the count is read after any chunk in flight.
            let beat = h.sh.ctl(ctl::BEAT).load(Ordering::Acquire);
            let t0 = Instant::now();
            while h
                .sh
                .ctl(ctl::BEAT)
                .load(Ordering::Acquire)
                .wrapping_sub(beat)
                < 2
            {
                assert!(
                    t0.elapsed() < Duration::from_secs(5),
                    "the device stopped looping"
                );
                std::thread::yield_now();
            }
            let before = h.sh.ctl(ctl::PRODUCED).load(Ordering::Acquire);
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(h.sh.ctl(ctl::PRODUCED).load(Ordering::Acquire), before);
            h.set_paused(false);
            assert_eq!(h.decode(0, 8).unwrap(), expected(1, 0, 8, 0.0));
        });
    }

    #[test]
    fn a_stalled_device_trips_the_watchdog() {
        with_device(|h, stall| {
            h.begin(&ids(40), &[0.0; 80], 1.0, 0.0, None).unwrap();
            // The first chunk comes unasked; the next one never does.
            h.decode(0, 8).unwrap();
            stall.store(true, Ordering::Relaxed);
            let t0 = Instant::now();
            let e = h.decode(8, 30).unwrap_err();
            assert!(matches!(e, ProtocolError::Hung(..)), "{e}");
            assert!(t0.elapsed() < Duration::from_secs(3));
        });
    }

    #[test]
    fn stage_times_sum_repeats_in_first_seen_order() {
        use layout::stage::{ATTN, DISPATCH, FFN};
        let (d, a, f) = (DISPATCH as u32, ATTN as u32, FFN as u32);
        let t = stage_times(&[(d, 1000), (a, 3000), (f, 4000), (a, 6000), (f, 6500)]);
        let names: Vec<_> = t.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            ["dispatch", "encoder: attention", "encoder: feed-forward"]
        );
        for ((_, got), want) in t.iter().zip([0.001, 0.004, 0.0015]) {
            assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        }
    }

    #[test]
    fn profile_reads_only_the_published_entries() {
        let mut a = area();
        let h = Host::new(shared(&mut a));
        let base = layout::prof_base(CI, HOP);
        for (i, w) in [7u32, 100, 8, 250, 9, 400].into_iter().enumerate() {
            h.sh.word(base + prof::E + i).store(w, Ordering::Relaxed);
        }
        assert!(h.profile().is_empty(), "nothing published yet");
        h.sh.word(base + prof::N).store(2, Ordering::Release);
        assert_eq!(h.profile(), [(7, 100), (8, 250)]);
        h.sh.word(base + prof::N).store(u32::MAX, Ordering::Release);
        assert_eq!(
            h.profile().len(),
            prof::MAX,
            "a wild count stays in the area"
        );
    }

    #[test]
    fn bad_requests_are_errors() {
        with_device(|h, _| {
            assert!(h.decode(0, 1).is_err(), "no job yet");
            assert!(h.begin(&[], &[], 1.0, 0.0, None).is_err());
            let big = vec![1i64; layout::TMAX + 1];
            assert!(
                h.begin(&big, &vec![0.0; 2 * big.len()], 1.0, 0.0, None)
                    .is_err()
            );
            let dur = h.begin(&ids(10), &[0.0; 20], 1.0, 0.0, None).unwrap();
            let frames: usize = dur.iter().sum();
            assert!(h.decode(0, frames + 1).is_err());
            assert!(h.decode(3, 3).is_err());
        });
    }
}
