//! The allocator of Hark's binaries: mimalloc on 2 MiB pages, and never handing freed memory
//! back to the OS.
//!
//! Why: the CPU model streams ≈ 60 MB of weights and tens of MB of activations per step. On
//! 4 KiB pages every page needs its own TLB entry, and after the process sat idle (the user
//! listening, the engine waiting) those entries and the page-walk caches are gone, and memory
//! the allocator gave back must be faulted in again. On a 2-core VM, builds with and without
//! this allocator run alternately: encoder + durations after one idle second 26–30 ms
//! against 37–39 ms (≈ 20 warm), onsets 5–10 ms lower at the median; the host's penalty
//! varies by the hour and was about three times larger earlier the same day.
//! See docs/BENCHMARKS.md, "Streaming onset (CPU)".

use libmimalloc_sys::{mi_option_set, mi_option_t, mi_version};

/// The global allocator; a binary declares it with `#[global_allocator]`.
pub use mimalloc::MiMalloc as Allocator;

// Option numbers of mimalloc 3.x (`mi_option_e` in its mimalloc.h); libmimalloc-sys names
// only the 2.x numbering, so they are spelt out here and used only on a 3.x library.
const ALLOW_LARGE_OS_PAGES: mi_option_t = 6;
const PURGE_DELAY: mi_option_t = 15;
const MAJOR: i32 = 3;

/// Asks for 2 MiB pages and turns purging off; call first thing in `main`. Returns false (and
/// changes nothing) on a mimalloc whose options may be numbered differently.
pub fn configure() -> bool {
    // SAFETY: plain integer calls, made before other threads start.
    unsafe {
        if mi_version() / 10_000 != MAJOR {
            return false;
        }
        mi_option_set(ALLOW_LARGE_OS_PAGES, 1);
        mi_option_set(PURGE_DELAY, -1);
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
