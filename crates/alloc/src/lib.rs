//! The allocator of Hark's binaries: mimalloc on 2 MiB pages, handing freed memory back to the
//! OS 100 ms after it was last used.
//!
//! Why mimalloc on 2 MiB pages: the CPU model streams ≈ 60 MB of weights and tens of MB of
//! activations per step. On 4 KiB pages every page needs its own TLB entry, and after the
//! process sat idle (the user listening, the engine waiting) those entries and the page-walk
//! caches are gone. On a 2-core VM, builds with and without this allocator run alternately:
//! encoder + durations after one idle second 26–30 ms against 37–39 ms (≈ 20 warm), onsets
//! 5–10 ms lower at the median. See docs/BENCHMARKS.md, "Streaming onset (CPU)".
//!
//! Why purge after 100 ms: with purging off, RSS sat at the allocator's high-water mark, and
//! every thread's freed pages stayed with that thread. A CPU soak grew 22 % over 400 utterances
//! while the live heap (the `heap-count` feature) stayed at 65 MB, and the app peaked at
//! 427–441 MiB reading 10 MiB from the clipboard; with 100 ms it peaks at 371–380 MiB (the bound is
//! 400 MB). The cost, measured alternately on a quiet 2-core VM: the streaming onset 52.8 →
//! 55.9 ms at the median (per-pair ratio 1.065), as the first step after a pause faults its
//! pages in again. docs/RELIABILITY.md, "Memory bounded by design". `MIMALLOC_PURGE_DELAY`
//! (ms; -1: never) overrides it without a rebuild.

use libmimalloc_sys::{mi_option_set, mi_option_t, mi_version};

/// The global allocator, counting what it holds ([`live_bytes`]).
#[cfg(feature = "heap-count")]
pub use counting::Counting as Allocator;
/// The global allocator; a binary declares it with `#[global_allocator]`.
#[cfg(not(feature = "heap-count"))]
pub use mimalloc::MiMalloc as Allocator;

/// Bytes the program holds (allocated and not freed) with the `heap-count` feature, which
/// the soak benchmark's diagnosis builds turn on; `None` without it. RSS alone cannot tell a
/// leak from memory the allocator keeps (for up to its purge delay), this can.
pub fn live_bytes() -> Option<usize> {
    #[cfg(feature = "heap-count")]
    return Some(counting::live());
    #[cfg(not(feature = "heap-count"))]
    None
}

#[cfg(feature = "heap-count")]
mod counting {
    use mimalloc::MiMalloc;
    use std::alloc::{GlobalAlloc, Layout};
    use std::sync::atomic::{AtomicUsize, Ordering};

    static LIVE: AtomicUsize = AtomicUsize::new(0);

    pub fn live() -> usize {
        LIVE.load(Ordering::Relaxed)
    }

    /// mimalloc, counting the bytes asked for and given back.
    pub struct Counting;

    // SAFETY: every call goes to mimalloc unchanged; only a counter is added.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            let p = unsafe { MiMalloc.alloc(l) };
            if !p.is_null() {
                LIVE.fetch_add(l.size(), Ordering::Relaxed);
            }
            p
        }
        unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
            let p = unsafe { MiMalloc.alloc_zeroed(l) };
            if !p.is_null() {
                LIVE.fetch_add(l.size(), Ordering::Relaxed);
            }
            p
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            unsafe { MiMalloc.dealloc(p, l) };
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        }
        unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
            let q = unsafe { MiMalloc.realloc(p, l, new) };
            if !q.is_null() {
                LIVE.fetch_sub(l.size(), Ordering::Relaxed);
                LIVE.fetch_add(new, Ordering::Relaxed);
            }
            q
        }
    }
}

// Option numbers of mimalloc 3.x (`mi_option_e` in its mimalloc.h); libmimalloc-sys names
// only the 2.x numbering, so they are spelt out here and used only on a 3.x library.
const ALLOW_LARGE_OS_PAGES: mi_option_t = 6;
const PURGE_DELAY: mi_option_t = 15;
const MAJOR: i32 = 3;

/// Freed memory goes back to the OS once unused this long (mimalloc's own default is 10 ms).
const PURGE_DELAY_MS: i64 = 100;

/// Asks for 2 MiB pages and a purge delay of [`PURGE_DELAY_MS`]; call first thing in `main`.
/// Returns false (and changes nothing) on a mimalloc whose options may be numbered
/// differently.
pub fn configure() -> bool {
    // SAFETY: plain integer calls, made before other threads start.
    unsafe {
        if mi_version() / 10_000 != MAJOR {
            return false;
        }
        mi_option_set(ALLOW_LARGE_OS_PAGES, 1);
        // mimalloc's own variable wins, so a run can try another delay without a rebuild.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            mi_option_set(PURGE_DELAY, PURGE_DELAY_MS as _);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bundled_mimalloc_is_the_one_the_option_numbers_belong_to() {
        assert!(super::configure(), "mimalloc is not {}.x", super::MAJOR);
    }
}
