//! The prior noise drawn on rayon's pool allocates nothing on the pool's workers. A block a
//! worker allocates and another thread frees stays resident on that worker's pages until the
//! worker allocates the same size again (hark-alloc's
//! `workers_hand_back_blocks_another_thread_freed`), which grew the CUDA soak's memory.

use hark_model::cpu::noise::NoiseSource;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Allocations made on a thread of a rayon pool.
static ON_WORKERS: AtomicUsize = AtomicUsize::new(0);

struct CountOnWorkers;

// SAFETY: every call goes to the system allocator unchanged; only a counter is added.
unsafe impl GlobalAlloc for CountOnWorkers {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if rayon::current_thread_index().is_some() {
            ON_WORKERS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountOnWorkers = CountOnWorkers;

#[test]
fn prior_noise_on_the_pool_allocates_nothing_on_the_workers() {
    // The global pool, as the CUDA backend uses it, with more workers than pieces need.
    rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build_global()
        .unwrap();
    rayon::broadcast(|_| ());
    let mut noise = NoiseSource::new(7);
    for n in [50_000, 200_000, 333_333] {
        let before = ON_WORKERS.load(Ordering::Relaxed);
        let drawn = noise.normals_parallel(n);
        assert_eq!(drawn.len(), n);
        let on_workers = ON_WORKERS.load(Ordering::Relaxed) - before;
        assert_eq!(
            on_workers, 0,
            "{n} samples: {on_workers} allocations on the workers"
        );
    }
}
