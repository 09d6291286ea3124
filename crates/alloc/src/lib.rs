//! The allocator of Hark's binaries: mimalloc, handing freed memory back to the OS 100 ms after
//! it was last used, on 4 KiB pages.
//!
//! Why mimalloc: the CPU model streams ≈ 60 MB of weights and tens of MB of activations per
//! step, and glibc handed freed activation buffers straight back to the OS, so each first step
//! after a pause faulted them in again (85 k page faults in a short onset bench; 9 k with
//! mimalloc). On a 2-core VM, builds with and without it run alternately (then on 2 MiB pages):
//! onsets 5–10 ms lower at the median. See docs/BENCHMARKS.md, "Streaming onset (CPU)".
//!
//! Why purge after 100 ms: with purging off, RSS sat at the allocator's high-water mark, and
//! every thread's freed pages stayed with that thread. A CPU soak grew 22 % over 400 utterances
//! while the live heap (the `heap-count` feature) stayed at 65 MB, and the app peaked at
//! 427–441 MiB reading 10 MiB from the clipboard; with 100 ms it peaks at 371–380 MiB (the bound is
//! 400 MB). The cost, measured alternately on a quiet 2-core VM: the streaming onset 52.8 →
//! 55.9 ms at the median (per-pair ratio 1.065), as the first step after a pause faults its
//! pages in again. docs/RELIABILITY.md, "Memory bounded by design". `MIMALLOC_PURGE_DELAY`
//! (ms; -1: never) overrides it without a rebuild.
//!
//! Why no transparent huge pages (THP) in the process: mimalloc `madvise`s its arenas for them, and
//! a purge of 64 KiB inside a huge page splits it; the kernel's khugepaged later collapses the rest
//! into a whole 2 MiB page again, the holes filled with zeros (`max_ptes_none` 511, the default),
//! so RSS crept back towards the high-water mark whatever the delay. On the H200, 10,000 soak
//! utterances: RSS 526 → 610 MB (+16 %) with THP, 309 → 327 MB with it off, THP 2 MB throughout;
//! 3,000 with mimalloc's THP (1) +9 %, with huge pages purged only whole (2) +33 %
//! (docs/RELIABILITY.md, "Soak"). The cost on the CPU path, alternately on a quiet 2-core VM: onset
//! 48.5 → 51.7 ms at the median (per-pair ratio 1.07, three pairs), the TLB misses of 4 KiB pages.
//! `MIMALLOC_ALLOW_THP` overrides it (1: mimalloc's default; 2: huge pages purged only whole).
//! Hugetlbfs pages (`allow_large_os_pages`) stay off too: they are pinned and never purged.
//!
//! C libraries in the process (libcuda, NVRTC, libsonic) allocate through glibc's malloc, whose
//! per-thread arenas keep what they freed. [`release_c_heap`], which the engine calls when
//! everything is said, hands it back (`malloc_trim`); `HARK_MALLOC_TRIM=0` turns that off
//! (diagnosis of the soak, docs/RELIABILITY.md).
//!
//! mimalloc keeps a heap per thread, and a block freed by another thread goes back to its
//! owner's page, which hands it back only when the owner allocates that size again or
//! collects. Rayon's workers allocate in bursts and then sleep, so each could keep pages
//! freed long ago. [`collect_heaps`] has every worker collect once the engine has been idle
//! for a second; `HARK_IDLE_COLLECT=0` turns that off (diagnosis).

use libmimalloc_sys::{mi_option_set, mi_option_t, mi_process_info, mi_version};
use std::sync::atomic::{AtomicBool, Ordering};

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
const PURGE_DELAY: mi_option_t = 15;
const ALLOW_THP: mi_option_t = 43;
const MAJOR: i32 = 3;

/// Freed memory goes back to the OS once unused this long (mimalloc's own default is 10 ms).
const PURGE_DELAY_MS: i64 = 100;

/// Turns transparent huge pages off for the process and sets a purge delay of
/// [`PURGE_DELAY_MS`]; call first thing in `main`.
/// Returns false (and changes nothing) on a mimalloc whose options may be numbered
/// differently.
pub fn configure() -> bool {
    // SAFETY: plain integer calls, made before other threads start.
    unsafe {
        if mi_version() / 10_000 != MAJOR {
            return false;
        }
        // mimalloc's own variables win, so a run can try another setting without a rebuild
        // (it reads them at its start, before `main`).
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
            mi_option_set(ALLOW_THP, 0);
            // As mimalloc does for MIMALLOC_ALLOW_THP=0: for every mapping of the process, the
            // arenas reserved before `main` and the C libraries' memory too.
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            mi_option_set(PURGE_DELAY, PURGE_DELAY_MS as _);
        }
    }
    let trim = std::env::var_os("HARK_MALLOC_TRIM").is_none_or(|v| v != "0");
    RELEASE_C_HEAP.store(trim, Ordering::Relaxed);
    let collect = std::env::var_os("HARK_IDLE_COLLECT").is_none_or(|v| v != "0");
    COLLECT_IDLE.store(collect, Ordering::Relaxed);
    true
}

static RELEASE_C_HEAP: AtomicBool = AtomicBool::new(true);
static COLLECT_IDLE: AtomicBool = AtomicBool::new(true);

/// How long the engine stays idle before [`collect_heaps`]: mimalloc's own delay before it
/// purges its arenas (the purge delay × `arena_purge_mult`, 10), so a user who asks for the
/// next sentence sooner finds its pages still mapped, as without the collection.
pub const COLLECT_AFTER_IDLE: std::time::Duration =
    std::time::Duration::from_millis(10 * PURGE_DELAY_MS as u64);

/// Has this thread and each of rayon's workers collect its mimalloc heap
/// ([`collect_this_thread`]), unless `HARK_IDLE_COLLECT=0` was set at [`configure`]. The workers
/// collect in the background, each between two jobs, so this returns at once. Call it when the
/// engine has been idle for [`COLLECT_AFTER_IDLE`], once rayon's pool has started (a backend
/// starts it), or it starts the pool.
pub fn collect_heaps() {
    if COLLECT_IDLE.load(Ordering::Relaxed) {
        collect_this_thread();
        rayon::spawn_broadcast(|_| collect_this_thread());
    }
}

/// Hands back the pages of this thread's mimalloc heap whose blocks are all free, full pages
/// and blocks other threads freed included, and purges what mimalloc holds unused now rather
/// than after its delay (`mi_collect(true)`).
pub fn collect_this_thread() {
    // SAFETY: mi_collect only walks the calling thread's own heap and the arenas' free lists.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// Bytes mimalloc has committed from the OS (in use or kept), its own count: with RSS and the
/// live heap it tells memory the Rust allocator keeps from memory a C library or the driver
/// maps (the soak's diagnosis).
pub fn committed_bytes() -> usize {
    let mut commit = 0usize;
    let null = std::ptr::null_mut();
    // SAFETY: every out-parameter but one is null, which mi_process_info allows.
    unsafe { mi_process_info(null, null, null, null, null, &mut commit, null, null) };
    commit
}

/// Hands back to the OS what glibc's malloc holds freed, in every arena (`malloc_trim(0)`),
/// unless `HARK_MALLOC_TRIM=0` was set at [`configure`]. Its time grows with what glibc holds
/// (not measured); call it where no audio waits on the thread.
pub fn release_c_heap() {
    if !RELEASE_C_HEAP.load(Ordering::Relaxed) {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes glibc's arena locks itself; it only returns free pages.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    /// The tests that read the process's memory run one at a time.
    static MEMORY: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn committed_bytes_count_what_mimalloc_maps() {
        let _one = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
        #[global_allocator]
        static A: super::Allocator = super::Allocator;
        let before = super::committed_bytes();
        let block = vec![1u8; 64 << 20];
        let during = super::committed_bytes();
        assert!(during >= before + (60 << 20), "{before} → {during}");
        drop(block);
    }

    #[test]
    fn the_bundled_mimalloc_is_the_one_the_option_numbers_belong_to() {
        assert!(super::configure(), "mimalloc is not {}.x", super::MAJOR);
    }

    #[test]
    fn workers_hand_back_blocks_another_thread_freed() {
        let _one = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
        // mimalloc is this test binary's allocator (declared above).
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        // 48 MiB in 96 KiB blocks, allocated (and touched) on a worker and freed here, as the
        // prior noise's pieces were: they stay resident on the worker's pages, past the purge
        // delay, until that worker collects (61 → 8.6 MB here; mimalloc's own `committed`
        // count does not move, so RSS is the measure).
        let blocks: Vec<Vec<u8>> = pool.install(|| (0..512).map(|_| vec![1u8; 96 << 10]).collect());
        drop(blocks);
        std::thread::sleep(std::time::Duration::from_millis(300));
        let before = rss();
        pool.broadcast(|_| super::collect_this_thread());
        let after = rss();
        assert!(
            after + (32 << 20) < before,
            "RSS {before} → {after} bytes: the worker handed back less than 32 MiB of 48"
        );
    }

    fn rss() -> usize {
        let s = std::fs::read_to_string("/proc/self/statm").unwrap();
        s.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<usize>()
            .unwrap()
            * 4096
    }

    #[test]
    fn releasing_the_c_heap_gives_back_what_glibc_kept() {
        let _one = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
        // 64 MiB in 4 KiB blocks from glibc directly (below its mmap threshold, so they sit in
        // the arena), all freed but the last, which pins the arena's top.
        // SAFETY: plain malloc/free pairs, each block written once.
        let before = unsafe {
            let blocks: Vec<*mut u8> = (0..16_384).map(|_| libc::malloc(4096).cast()).collect();
            for &b in &blocks {
                b.write_bytes(1, 4096);
            }
            for &b in &blocks[..blocks.len() - 1] {
                libc::free(b.cast());
            }
            let before = rss();
            super::release_c_heap();
            libc::free(blocks[blocks.len() - 1].cast());
            before
        };
        let after = rss();
        assert!(
            after + 32 * 1024 * 1024 < before,
            "RSS {before} → {after} bytes: malloc_trim gave back less than 32 MiB of 64"
        );
    }
}
