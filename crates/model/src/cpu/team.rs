//! Keeps the rayon pool's other workers awake for the length of one model call.
//!
//! The model forks and joins hundreds of times per utterance (every convolution, every
//! decoder stage), many of them on tiles of 50–200 µs. A rayon worker that finds no work
//! parks on a futex after a few microseconds, and waking it takes 40–90 µs on the 2-core VMs
//! Hark is measured on (`examples/wake.rs`-style measurement: a join of two 50 µs halves takes
//! 51 µs back to back, 92 µs after a 20 µs gap, 142 µs after 1 ms), so most small parallel
//! regions ran at the speed of one core. [`hot`] runs a model call on a pool worker while the
//! other workers spin, picking up its parallel work the moment it appears, and lets them park
//! again as soon as the call returns: the spinning is bounded by the call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Runs `f` on a worker of the current rayon pool (the global one from outside a pool), with
/// the pool's other workers spinning for its work until `f` returns or unwinds.
pub fn hot<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    hot_watched(f, None)
}

/// [`hot`], also leaving in `watch` a handle that dies when the last spinning worker has let
/// go (for the tests).
fn hot_watched<R: Send>(
    f: impl FnOnce() -> R + Send,
    watch: Option<&Mutex<Weak<AtomicBool>>>,
) -> R {
    if rayon::current_num_threads() <= 1 {
        return f();
    }
    let run = move || {
        let me = rayon::current_thread_index();
        let stop = StopOnDrop(Arc::new(AtomicBool::new(false)));
        let flag = stop.0.clone();
        if let Some(w) = watch {
            *w.lock().unwrap_or_else(|e| e.into_inner()) = Arc::downgrade(&flag);
        }
        rayon::spawn_broadcast(move |ctx| {
            if Some(ctx.index()) != me {
                keep_busy(&flag);
            }
        });
        f()
    };
    if rayon::current_thread_index().is_some() {
        run()
    } else {
        // From outside the pool: move the whole call in, so its forks start from a worker
        // (a fork from outside blocks this thread and wakes it again at every join).
        rayon::scope(|_| run())
    }
}

/// Sets the flag when the call is over, also when it unwinds.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

fn keep_busy(stop: &AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(n: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    }

    #[test]
    fn runs_the_call_on_a_worker_and_returns_its_value() {
        // From outside any pool the call moves onto a worker of the global pool.
        let (on_worker, sum) = hot(|| {
            let v: Vec<u64> = (0..10_000).collect();
            use rayon::prelude::*;
            (
                rayon::current_thread_index().is_some(),
                v.par_iter().sum::<u64>(),
            )
        });
        assert!(on_worker || rayon::current_num_threads() <= 1);
        assert_eq!(sum, 49_995_000);
        // Inside a pool it stays where it is, on 1 thread and on several.
        for n in [1, 2, 3] {
            let got = pool(n).install(|| {
                let me = rayon::current_thread_index();
                hot(|| (rayon::current_thread_index() == me, rayon::join(|| 2, || 3)))
            });
            assert_eq!(got, (true, (2, 3)), "{n} threads");
        }
    }

    /// Waits up to 5 s for the spinning workers of a call to let go.
    fn released(watch: &Mutex<Weak<AtomicBool>>) -> bool {
        let start = std::time::Instant::now();
        while watch.lock().unwrap().upgrade().is_some() {
            if start.elapsed().as_secs() >= 5 {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        true
    }

    #[test]
    fn the_workers_are_released_after_the_call_and_after_a_panic() {
        let p = pool(3);
        let watch = Mutex::new(Weak::new());
        for _ in 0..20 {
            let got = p.install(|| hot_watched(|| rayon::join(|| 1, || 2), Some(&watch)));
            assert_eq!(got, (1, 2));
            assert!(released(&watch), "a worker kept spinning after the call");
        }
        let caught = p.install(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                hot_watched(|| panic!("a model call that fails"), Some(&watch))
            }))
        });
        assert!(caught.is_err());
        assert!(released(&watch), "a worker kept spinning after a panic");
        assert_eq!(p.install(|| rayon::join(|| 1, || 2)), (1, 2));
    }
}
