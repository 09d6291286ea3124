//! The bounded phoneme queue between the phonemiser thread and the engine thread.
//!
//! A fixed-capacity ring: `push` waits while it is full (back-pressure slows the producer; text
//! is never dropped), `pop` never waits. Every wait has a timeout so a stopped engine cannot
//! leave the producer stuck.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

pub struct BoundedQueue<T> {
    inner: Mutex<VecDeque<T>>,
    not_full: Condvar,
    capacity: usize,
}

impl<T> BoundedQueue<T> {
    /// A queue holding at most `capacity` items (at least 1). Its storage is allocated once.
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            inner: Mutex::new(VecDeque::with_capacity(capacity)),
            not_full: Condvar::new(),
            capacity,
        }
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<T>> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep going.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `item`, waiting up to `timeout` for room; gives the item back on timeout.
    pub fn push(&self, item: T, timeout: Duration) -> Result<(), T> {
        let q = self.lock();
        let (mut q, _) = self
            .not_full
            .wait_timeout_while(q, timeout, |q| q.len() >= self.capacity)
            .unwrap_or_else(|e| e.into_inner());
        if q.len() >= self.capacity {
            return Err(item);
        }
        q.push_back(item);
        Ok(())
    }

    /// The oldest item, if any.
    pub fn try_pop(&self) -> Option<T> {
        let item = self.lock().pop_front();
        if item.is_some() {
            self.not_full.notify_one();
        }
        item
    }

    /// Drops every item for which `keep` is false (on stop or interrupt).
    pub fn retain(&self, keep: impl FnMut(&T) -> bool) {
        self.lock().retain(keep);
        self.not_full.notify_all();
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Allocated slots (for the bounded-memory test).
    pub fn allocated(&self) -> usize {
        self.lock().capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;

    proptest! {
        /// A producer thread pushes a sequence while the consumer pops at its own pace: every
        /// item arrives, in order, and the queue never holds more than its capacity.
        #[test]
        fn no_loss_no_reordering_bounded(
            items in proptest::collection::vec(any::<u32>(), 0..400),
            capacity in 1usize..8,
            pauses in proptest::collection::vec(0u8..3, 1..20),
        ) {
            let q = Arc::new(BoundedQueue::new(capacity));
            let allocated = q.allocated();
            let producer = {
                let q = Arc::clone(&q);
                let items = items.clone();
                std::thread::spawn(move || {
                    for mut item in items {
                        // Retry on timeout: back-pressure never drops an item.
                        while let Err(back) = q.push(item, Duration::from_millis(50)) {
                            item = back;
                        }
                    }
                })
            };
            let mut got = Vec::new();
            let mut i = 0;
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while got.len() < items.len() && std::time::Instant::now() < deadline {
                prop_assert!(q.len() <= capacity);
                match q.try_pop() {
                    Some(x) => got.push(x),
                    None => std::thread::yield_now(),
                }
                if pauses[i % pauses.len()] == 2 {
                    std::thread::sleep(Duration::from_micros(50));
                }
                i += 1;
            }
            producer.join().expect("producer");
            prop_assert_eq!(&got, &items);
            prop_assert!(q.is_empty());
            prop_assert_eq!(q.allocated(), allocated, "the ring grew");
        }
    }

    #[test]
    fn push_times_out_when_full_and_returns_the_item() {
        let q = BoundedQueue::new(2);
        q.push(1, Duration::ZERO).expect("room");
        q.push(2, Duration::ZERO).expect("room");
        assert_eq!(q.push(3, Duration::from_millis(10)), Err(3));
        assert_eq!(q.try_pop(), Some(1));
        q.push(3, Duration::ZERO).expect("room after pop");
    }

    #[test]
    fn retain_wakes_a_blocked_producer() {
        let q = Arc::new(BoundedQueue::new(1));
        q.push(0, Duration::ZERO).expect("room");
        let p = {
            let q = Arc::clone(&q);
            std::thread::spawn(move || q.push(1, Duration::from_secs(10)))
        };
        std::thread::sleep(Duration::from_millis(20));
        q.retain(|_| false);
        assert_eq!(p.join().expect("join"), Ok(()));
        assert_eq!(q.try_pop(), Some(1));
    }
}
