//! A first start on a GPU: NVRTC compiles the kernels for this GPU and voice once (11 s on a
//! fresh machine, `docs/BENCHMARKS.md`, "Start-up"), then reads them from the disk cache.
//! Rather than keep the first sentence waiting, the compile runs on a thread of its own while
//! the CPU speaks, and the engine thread makes the CUDA backend (whose context must live on
//! it) between utterances once the kernels are cached.

use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

/// How a start with its kernels being prepared went.
pub(crate) enum Start {
    /// Prepared within the wait (or failed): start on the GPU as before.
    Done(Result<(), String>),
    /// Still compiling: speak on the CPU and ask [`Pending::poll`] between utterances.
    Pending(Pending),
}

/// A compile still running.
pub(crate) struct Pending {
    rx: mpsc::Receiver<Result<(), String>>,
    since: Instant,
}

/// Runs `prepare` on a thread of its own and waits for it up to `grace` (`GpuOptions::compile_wait`).
pub(crate) fn start(
    prepare: impl FnOnce() -> Result<(), String> + Send + 'static,
    grace: Duration,
) -> Start {
    let (tx, rx) = mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name("hark-nvrtc".into())
        .spawn(move || {
            lower_priority();
            let _ = tx.send(prepare());
        });
    if let Err(e) = spawned {
        return Start::Done(Err(format!("cannot start the kernel compile thread: {e}")));
    }
    match rx.recv_timeout(grace) {
        Ok(r) => Start::Done(r),
        Err(RecvTimeoutError::Disconnected) => Start::Done(Err(ENDED.into())),
        Err(RecvTimeoutError::Timeout) => Start::Pending(Pending {
            rx,
            since: Instant::now() - grace,
        }),
    }
}

/// This thread, and the NVRTC threads it starts (they inherit it), at nice 10: the CPU
/// backend speaking meanwhile shares the cores with them, and its sentences come first.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: on Linux, `who` 0 with PRIO_PROCESS is the calling thread; no pointers.
        let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) };
        if r != 0 {
            tracing::debug!("the kernel compile thread keeps its priority");
        }
    }
}

const ENDED: &str = "the kernel compile thread ended without a result";

impl Pending {
    /// The compile's result once it has one (then the caller drops this).
    pub(crate) fn poll(&self) -> Option<Result<(), String>> {
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(ENDED.into())),
        }
    }

    /// Since the compile began.
    pub(crate) fn elapsed(&self) -> Duration {
        self.since.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    /// Polls `p` until it has a result (10 s at most).
    fn result_of(p: &Pending) -> Result<(), String> {
        let t0 = Instant::now();
        loop {
            if let Some(r) = p.poll() {
                return r;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "no result");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_quick_prepare_starts_on_the_gpu_at_once() {
        match start(|| Ok(()), Duration::from_secs(10)) {
            Start::Done(r) => assert_eq!(r, Ok(())),
            Start::Pending(_) => panic!("a finished prepare is not pending"),
        }
        match start(|| Err("no NVRTC".into()), Duration::from_secs(10)) {
            Start::Done(r) => assert_eq!(r, Err("no NVRTC".into())),
            Start::Pending(_) => panic!("a failed prepare is not pending"),
        }
    }

    #[test]
    fn a_slow_prepare_is_pending_until_it_ends() {
        let gate = Arc::new(Barrier::new(2));
        let g = Arc::clone(&gate);
        let p = match start(
            move || {
                g.wait();
                Ok(())
            },
            Duration::from_millis(20),
        ) {
            Start::Pending(p) => p,
            Start::Done(_) => panic!("it cannot have finished: it waits on the gate"),
        };
        assert_eq!(p.poll(), None);
        assert!(p.elapsed() >= Duration::from_millis(20));
        gate.wait();
        let r = result_of(&p);
        assert_eq!(r, Ok(()));
    }

    #[test]
    fn a_prepare_that_panics_is_a_failure_not_a_hang() {
        let p = match start(
            || {
                std::thread::sleep(Duration::from_millis(50));
                panic!("NVRTC crashed")
            },
            Duration::from_millis(1),
        ) {
            Start::Pending(p) => p,
            Start::Done(r) => {
                assert_eq!(r, Err(ENDED.into()));
                return;
            }
        };
        let r = result_of(&p);
        assert_eq!(r, Err(ENDED.into()));
    }
}
